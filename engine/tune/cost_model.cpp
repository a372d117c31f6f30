// The cost model. Assumptions, each a deliberate simplification; the model only has to rank the
// instances of one family, so it aims to be monotone in the obvious directions, not exact:
//
//  1. Traffic. A block loads each tile it uses: a tile the loop walks (or any load in the loop
//     body) moves its bytes every iteration, an invariant one once per block. Over all blocks,
//     the first read of each device tensor comes from DRAM (memory_bytes); of everything beyond
//     that (blocks re-reading a replicated tile, a later kernel re-reading a tensor) the caches
//     serve the part TargetDescription::cache_hit_fraction gives for the kernel's working set
//     (cache_bytes) and DRAM the rest: blocks that each stream a weight matrix near the size of
//     L3 mostly stream it from memory. Every written tensor is written to DRAM once. Tensors are
//     at the dtypes the instance declares (a backend stores its families its way: Backend::stored).
//  2. Bandwidths. DRAM: the target's measured streaming-read bandwidth, mixed with its measured
//     last-level-cache bandwidth by the hit fraction of the kernel's DRAM bytes (a kernel run again
//     and again finds what fits in the caches there). Re-reads (cache_bytes): the measured cache
//     bandwidth (kCacheSpeedup (4) times memory's when it was not measured), shared by all cores.
//  3. Flops. matmul 2*m*n*k per tile, elementwise ops one per output element, reductions and
//     accumulators one per input element (transcendentals count 1), each times the times the op
//     runs (loop iterations for loop-body ops) and the blocks. Peak is the target's f32 FMA peak,
//     divided by a vectorization factor min(1, width / lanes) where width is the tile's last
//     (contiguous) dim and lanes = simd_bytes / 4: a tile narrower than a vector register wastes
//     lanes. On a target with a tensor-core peak (a GPU), a block matmul of two loaded 16-bit
//     tiles whose sizes fit a tensor-core shape runs at that peak instead (WMMA). Any other the
//     code generator sends through mma.sync (backend::cuda::tensor_core_storage) runs at that
//     peak times the part of each 16 x 8 fragment it fills, over kMmaGather (each lane gathers
//     its elements one by one), and never slower than the f32 FMA peak.
//  4. Overlap. Within a kernel, data movement (memory plus cache traffic, one after the other)
//     and compute overlap perfectly: the kernel takes the larger, divided by its parallel
//     efficiency blocks / (ceil(blocks/cores) * cores) (the last wave of blocks leaves cores idle;
//     one block uses one core). On a GPU only where the code generator double-buffers the loop's
//     loads (double_buffer.h: a loop of more than one iteration whose body tiles fit twice in
//     shared memory); else the kernel takes their sum.
//  5. Overheads. kBlockOverhead (1 us) per block on each core (ceil(blocks/cores) waves: tile
//     setup, loop control, poor locality of tiny blocks) and kKernelOverhead (5 us) per kernel (an
//     OpenMP parallel region or a library call). Kernels run one after another.
//  6. Library kernels. Whole-tensor ops at full parallel efficiency: their inputs' and output's
//     bytes (as in 1) and their op's flops at peak. A CPU library matmul at 16 bits (prism's own,
//     one parallel loop over library_matmul_chunks) has the efficiency of its chunks over the
//     cores, as a custom kernel's blocks (4): 8 x 1024 @ 1024 x 1024 makes 4 chunks of 256
//     columns, and on a 16-core Xeon it ran 0.067 ms on 4 threads and 0.075 on 16. One of f32
//     tensors is OpenBLAS's sgemm (emit_blas.cpp), which packs B into panels on every call: B's
//     bytes move kVendorPackPasses more times at the memory bandwidth whatever the working set
//     (the panels and B outgrow the caches together), and its flops run at kVendorGemmEfficiency
//     of the peak (prism_bench_kernels, 2-core Zen 3, 2 threads: 8 x 1024 @ 1024 x 1024, 8 x 2048
//     @ 2048 x 2048 and 8 x 4096 @ 4096 x 4096 took 0.61, 2.6-3.1 and 11-12 ms, B streaming at
//     6-7 GB/s on one thread as on two, where one pass at the peak was 0.12, 0.47 and 3.4; 16 rows
//     0.59 and 2.08 ms; 64 x 2048 @ 2048 x 2048, 128 and 512 x 1024 @ 1024 x 1024 at 41-66% of
//     the peak).
//  7. Access pattern. A tile is read as runs of contiguous bytes (its rows, when it does not span
//     the tensor's last dim, in the tensor's own dim order: an nn.Linear weight's W^T tile of
//     K x N lies as N runs of K); every run costs kRunOverhead (256) bytes' worth of streaming on top
//     of its own bytes (a new DRAM page and a prefetch stream restarting). This is what sets
//     instantiations apart that move the same bytes: wide, contiguous tiles stream better than
//     narrow ones.
//  8. Accumulators (CPU). The matmul micro-kernel keeps a register block of an accumulator tile
//     over a K step and loads and stores the whole tile once per loop iteration: a tile larger than
//     half of L1 moves twice its bytes from L2 every iteration (cache_bytes). This is what sets a
//     long loop of thin K steps into a wide accumulator apart from a short loop of thick ones.
//  9. Widening (CPU). A matmul whose B is 16-bit widens each B vector it loads on the FMA ports:
//     its flops cost backend::cpu::detail::widening_factor for the register blocks the code
//     generator chooses for the tile: their estimated slots per FMA (widening, broadcasts, the
//     accumulators' latency, edge blocks) over a wide f32 tile's. A tile one vector wide, whose
//     block broadcasts for every FMA, costs more than a wider one of the same rows (AVX2: 1.49
//     for 256 x 8 at 14 x 1, 1.29 for 6 x 2 blocks, 1.43 for a decode layer's 4 x 3). An f32 B
//     widens nothing but its blocks cost the same way (1 for a wide tile; more for few rows, whose
//     blocks fold B's loads into the FMAs or pass over each strip more often): an f32 gated MLP at
//     16 x 1024 on a 2-core Zen 3 took its 8-row blocks (the rows split in two) first, 1.02 ms,
//     where 16-row blocks ran 0.78.
//     Where the CPU has AMX tiles, a matmul of two loaded bf16 tiles widens nothing and runs at
//     bf16_amx_gflops, reading B's rows in pieces of at most amx_block_columns (assumption 7). One of a loaded f16 B and an f16 or f32
//     A of at least kAmxF16MinRows rows (fewer: the FMAs, as above) reads B the same way at half
//     that rate (two tile products per B tile), plus kAmxF16StageFlops at the FMA peak per
//     element of B (its split into bf16 words on the vector units, shared by the rows of A's
//     tile); one of a loaded bf16 B and an f32 A of at least kAmxWideMinRows rows the same, with
//     kAmxPairStageFlops (B's rows paired; A split into hi and lo tiles). Else,
//     where vdpbf16ps beats the FMAs, at bf16_dot_peak_gflops. A library
//     matmul at 16 bits runs the same micro-kernel on chunks (library_matmul_chunks) and reads B
//     as row pieces of a chunk's width (assumption 7).
// 10. Overlap (CPU). Streaming tensors in (memory_bytes, from DRAM or L3) overlaps compute only in
//     part on a CPU core: a kernel takes the larger of movement and compute plus kOverlapLoss of
//     the smaller of streaming and compute (an 8 x 4096 @ 4096 x 4096 bf16 matmul on a 2-core
//     Xeon: 0.95 ms of widened FMAs, 0.61 ms of streaming from L3, 1.14 ms measured; at f32, 0.76
//     ms and 1.17 ms, 1.90 ms measured). Re-reads from the caches (accumulator tiles in L2) hide
//     behind compute, and a GPU hides both (assumption 4).
// 11. Scratch (CPU). A block writes every tile it computes to its scratch buffer and the op that
//     reads it reads it back. Where those tiles and the tiles it loads together exceed L1, the
//     part of that traffic beyond L1 (1 - L1 / bytes) moves through L2 (scratch_bytes), at
//     kL2Speedup times the cache bandwidth of assumption 2 (the 2-core Xeon's L2 sustains about
//     three times what its last-level cache gives both cores together). A row variance whose loop
//     squares 4 rows x 2048 columns a step (32 KiB loaded, 32 KiB squared) ran 0.48 ms against
//     0.38 ms for 2 x 2048 on the 2-core Xeon, and the model had them the other way round.
#include "engine/tune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cuda/codegen.h"
#include "engine/ir/shape.h"

namespace prism::tune {

namespace {

constexpr double kCacheSpeedup = 4;
constexpr double kBlockOverhead = 1e-6;
constexpr double kKernelOverhead = 5e-6;
constexpr double kRunOverhead = 256;
constexpr double kOverlapLoss = 0.5;
constexpr double kVendorPackPasses = 3;
constexpr double kVendorGemmEfficiency = 0.5;
constexpr double kMmaGather = 8;
constexpr double kL2Speedup = 3;
// Splitting one f16 element of B into bf16 words for the tiles (amx_split_kernel.cpp), in flops at
// the f32 FMA peak: about 0.09 ns per element on a core of the 2-core Xeon (16 x 4096 @ 4096 x
// 4096 with B's strips in L1, 0.7 ms for the 8M elements of each core), whose peak is 219 GFLOP/s
// a core.
constexpr double kAmxF16StageFlops = 20;
// Pairing one bf16 element of B with its neighbour row's for the tiles (amx_split_kernel.cpp):
// two loads, two permutes and two stores per 64 elements, about a quarter of an f16's split by
// instruction count (estimated, not calibrated).
constexpr double kAmxPairStageFlops = 5;

using sgraph::BlockOp;
using sgraph::LoopRole;

class CostModel {
 public:
  CostModel(const sgraph::Instance& instance, const backend::TargetDescription& target) : in_(instance), target_(target) {}

  CostEstimate run() {
    const auto& kernels = in_.graph.kernels;
    for (size_t k = 0; k < kernels.size(); ++k) {
      KernelCost c = kernels[k].custom ? custom(k) : library(kernels[k].library);
      add(c);
    }
    est_.kernels = int(kernels.size());
    est_.seconds = memory_s_ + cache_s_ + compute_s_ + overhead_s_;
    double top = std::max({memory_s_, cache_s_, compute_s_, overhead_s_});
    est_.bound = top == overhead_s_ ? "overhead" : top == compute_s_ ? "compute" : top == cache_s_ ? "cache" : "memory";
    return est_;
  }

 private:
  struct KernelCost {
    double memory_bytes = 0, cache_bytes = 0, flops = 0, scaled_flops = 0;  // scaled: divided by the vectorization factor
    double scratch_bytes = 0;                                                 // through L2 (assumption 11)
    double stream_bytes = 0;  // at the memory bandwidth whatever the working set (a vendor GEMM's packing, assumption 6)
    int64_t blocks = 0;
    int64_t chunks = 0;    // a library kernel's parallel chunks (0: a whole-tensor call, assumption 6)
    bool custom = false;
    bool overlaps = true;  // its data movement overlaps its compute (assumption 4)
  };

  // Tensors at the dtypes the instance stores them (a backend's, Backend::stored).
  double tensor_bytes(const std::string& name) const {
    const Type& t = in_.analysis.tensors.at(name);
    return double(element_count(concrete_shape(t.shape, in_.bindings))) * double(sgraph::element_bytes(t.dtype));
  }
  std::vector<int64_t> tile(size_t k, size_t i) const {
    const auto& info = in_.analysis.tiles[k][i];
    return info.type ? concrete_shape(info.type->shape, in_.bindings) : std::vector<int64_t>{};
  }
  double vector_factor(const std::vector<int64_t>& shape) const {
    double lanes = std::max(1, target_.simd_bytes / 4);
    double width = shape.empty() ? 1 : double(shape.back());
    return std::min(1.0, width / lanes);
  }

  // The 16-bit storage of a block op's tile: a load's tensor's, else F32 (computed).
  DType operand_storage(const BlockOp& op) const {
    return op.kind == BlockOp::Kind::Load ? in_.analysis.tensors.at(op.tensor).dtype : DType::F32;
  }

  bool all_16bit() const {
    for (const auto& in : in_.graph.inputs)
      if (in_.analysis.tensors.at(in.name).dtype == DType::F32) return false;
    for (const std::string& out : in_.graph.outputs)
      if (in_.analysis.tensors.at(out).dtype == DType::F32) return false;
    return true;
  }

  // peak / tensor-core rate for a block matmul on a GPU (assumption 3); 1 otherwise.
  double tensor_core_factor(size_t k, const BlockOp& op) const {
    if (target_.tensor_peak_gflops <= 0 || op.operands.size() != 2) return 1;
    const sgraph::CustomKernel& kernel = in_.graph.kernels[k].block;
    const DType a_type = operand_storage(kernel.ops[size_t(op.operands[0])]), b_type = operand_storage(kernel.ops[size_t(op.operands[1])]);
    if (backend::cuda::tensor_core_storage(a_type, b_type, all_16bit()) == DType::F32) return 1;
    const bool both = a_type != DType::F32 && b_type != DType::F32;  // WMMA's case when the shape fits
    const std::vector<int64_t> a = tile(k, size_t(op.operands[0])), b = tile(k, size_t(op.operands[1]));
    if (a.size() < 2 || b.size() < 2) return 1;
    const int64_t m = a[a.size() - 2], kk = a.back(), n = b.back();
    if (both && backend::cuda::tensor_core_shape(m, n, kk)) return target_.peak_gflops / target_.tensor_peak_gflops;
    const double fill = double(m) / double(16 * ((m + 15) / 16)) * double(n) / double(8 * ((n + 7) / 8)) * double(kk) / double(16 * ((kk + 15) / 16));
    return std::min(1.0, target_.peak_gflops * kMmaGather / (target_.tensor_peak_gflops * fill));
  }

  // A CPU matmul's cost of its register blocks (widening a 16-bit B tile), or peak / bf16 dot peak
  // for two loaded bf16 tiles where the CPU has the instruction (assumption 9); 1 otherwise.
  double widening(size_t k, const BlockOp& op) const {
    if (target_.target != backend::Target::Cpu || op.operands.size() != 2) return 1;
    const BlockOp &left = in_.graph.kernels[k].block.ops[size_t(op.operands[0])], &right = in_.graph.kernels[k].block.ops[size_t(op.operands[1])];
    if (right.kind != BlockOp::Kind::Load) return 1;
    const DType dtype = in_.analysis.tensors.at(right.tensor).dtype;
    return matmul_rate(tile(k, size_t(op.operands[0])), tile(k, size_t(op.operands[1])), operand_storage(left), dtype);
  }
  // A CPU matmul of an A tile of `rows` rows (its dtype as the micro-kernel reads it) and a B tile
  // runs on AMX tiles (assumption 9): bf16 x bf16; where AVX-512 splits the operands, f16 B
  // against f16 or f32 A from kAmxF16MinRows rows, and bf16 B against f32 A from kAmxWideMinRows.
  bool amx(DType a_dtype, DType b_dtype, int64_t rows) const {
    if (target_.target != backend::Target::Cpu || target_.bf16_amx_gflops <= 0) return false;
    if (a_dtype == DType::BF16 && b_dtype == DType::BF16) return true;
    return target_.simd_bytes == 64 && backend::cpu::detail::amx_matmul(a_dtype, b_dtype, rows, false);
  }
  // Where block op `i` of kernel k is the B of a matmul on AMX tiles, the pieces it reads B's rows
  // in (amx_block_columns); else 0, and 0 for a B stored transposed, whose rows the NT kernel reads
  // whole (along K).
  long amx_b_columns(size_t k, size_t i) const {
    const auto& ops = in_.graph.kernels[k].block.ops;
    if (ops[i].kind == BlockOp::Kind::Load && rows_along_k(ops[i].view, in_.analysis.tensors.at(ops[i].tensor).shape.size())) return 0;
    for (const BlockOp& op : ops)
      if (op.kind == BlockOp::Kind::Compute && op.op == Op::Matmul && op.operands.size() == 2 && op.operands[1] == int(i)) {
        const std::vector<int64_t> a = tile(k, size_t(op.operands[0])), b = tile(k, i);
        const int64_t rows = a.size() < 2 ? 1 : a[a.size() - 2];
        const DType a_dtype = operand_storage(ops[size_t(op.operands[0])]), b_dtype = operand_storage(ops[i]);
        if (amx(a_dtype, b_dtype, rows) && b.size() >= 2)
          return backend::cpu::detail::amx_block_columns(a_dtype, b_dtype, rows, b[b.size() - 2], b.back());
      }
    return 0;
  }
  // The same for an A tile (its dtype as the micro-kernel reads it) times a B tile.
  double matmul_rate(const std::vector<int64_t>& a, const std::vector<int64_t>& b, DType a_dtype, DType b_dtype) const {
    if (a.size() < 2 || b.size() < 2) return 1;
    const int64_t rows = a[a.size() - 2];
    if (amx(a_dtype, b_dtype, rows) && b_dtype == DType::F16)  // two tile products, and B's split on the vector units (assumption 9)
      return 2 * target_.peak_gflops / target_.bf16_amx_gflops + kAmxF16StageFlops / (2.0 * double(rows));
    if (amx(a_dtype, b_dtype, rows) && a_dtype == DType::F32)  // A's hi and lo tiles, B's rows paired on the vector units
      return 2 * target_.peak_gflops / target_.bf16_amx_gflops + kAmxPairStageFlops / (2.0 * double(rows));
    if (amx(a_dtype, b_dtype, rows)) return target_.peak_gflops / target_.bf16_amx_gflops;
    if (a_dtype == DType::BF16 && b_dtype == DType::BF16 && target_.bf16_dot_peak_gflops > 0 && target_.simd_bytes == 64)
      return target_.peak_gflops / target_.bf16_dot_peak_gflops;
    return backend::cpu::detail::widening_factor(
        backend::cpu::detail::choose_blocking(a[a.size() - 2], b.back(), a.back(), target_.simd_bytes, b_dtype), b_dtype, target_.simd_bytes);
  }

  // A matmul's B read through `view` from a tensor of `rank` dims lies with K contiguous (an
  // nn.Linear weight [out, in] read as W^T): the NT kernels read it.
  static bool rows_along_k(const std::vector<int>& view, size_t rank) {
    return view.size() >= 2 && rank >= 1 && view[view.size() - 2] == int(rank) - 1;
  }

  // A load's tile in its tensor's dim order: a view reads the tensor's dims permuted (with new
  // unit axes), and what lies contiguously is decided in the tensor's order (an nn.Linear weight's
  // W^T tile of K x N lies as N runs of K).
  static std::vector<int64_t> in_tensor_order(const std::vector<int64_t>& tile, const std::vector<int>& view, size_t rank) {
    if (view.empty()) return tile;
    std::vector<int64_t> t(rank, 1);
    for (size_t i = 0; i < view.size() && i < tile.size(); ++i)
      if (view[i] != BlockOp::kNewAxis && size_t(view[i]) < rank) t[size_t(view[i])] = tile[i];
    return t;
  }

  // Elements of a tile that lie contiguously in its tensor: the trailing dims the tile spans
  // whole, times the first dim it cuts.
  static double contiguous_run(const std::vector<int64_t>& tile, const std::vector<int64_t>& tensor) {
    double run = 1;
    for (size_t j = tile.size(); j-- > 0;) {
      run *= double(tile[j]);
      if (j >= tensor.size() || tile[j] != tensor[j]) break;
    }
    return run;
  }

  // Op i is x * x and its one reader is a sum (which the CPU code generator fuses).
  static bool summed_square(const sgraph::CustomKernel& kernel, size_t i) {
    const BlockOp& op = kernel.ops[i];
    if (op.kind != BlockOp::Kind::Compute || op.op != Op::Mul || op.operands.size() != 2 || op.operands[0] != op.operands[1]) return false;
    int readers = 0;
    bool sum = false;
    for (const BlockOp& r : kernel.ops)
      if (std::find(r.operands.begin(), r.operands.end(), int(i)) != r.operands.end()) {
        ++readers;
        sum = r.kind == BlockOp::Kind::Compute && r.op == Op::Sum;
      }
    return readers == 1 && sum;
  }

  // Splits `bytes` read from `name` between DRAM and the caches: the tensor's first read comes
  // from DRAM, of every re-read the part the caches do not keep (`hit`: assumption 1).
  void read(KernelCost& c, const std::string& name, double bytes, double hit) {
    const double first = read_.insert(name).second ? std::min(tensor_bytes(name), bytes) : 0, again = bytes - first;
    c.memory_bytes += first + again * (1 - hit);
    c.cache_bytes += again * hit;
  }

  // The hit fraction of a kernel that touches these tensors.
  double working_set_hit(const std::set<std::string>& names) const {
    double bytes = 0;
    for (const std::string& n : names) bytes += tensor_bytes(n);
    return target_.cache_hit_fraction(bytes);
  }

  KernelCost custom(size_t k) {
    const sgraph::CustomKernel& kernel = in_.graph.kernels[k].block;
    KernelCost c;
    c.custom = true;
    c.blocks = 1;
    for (const Dim& g : kernel.grid) c.blocks *= g.evaluate_size(in_.bindings);
    const double loop = double(kernel.loop_range().evaluate_size(in_.bindings)), blocks = double(c.blocks);
    std::map<std::string, double> loaded;        // bytes moved per tensor over all blocks
    double body_tiles = 0;                       // bytes a block loads in each loop iteration
    std::map<std::string, double> run_overhead;  // their access-pattern surcharge (assumption 7)
    // Assumption 11: the part of the scratch traffic that L1 does not hold. A product x * x that
    // only a sum reads is never written (the CPU code generator sums the squares: fuse_squares.h).
    std::vector<bool> scratch(kernel.ops.size(), false);
    double in_l1 = 0;
    if (target_.target == backend::Target::Cpu && target_.l1_bytes > 0)
      for (size_t i = 0; i < kernel.ops.size(); ++i) {
        const BlockOp& op = kernel.ops[i];
        scratch[i] = op.kind == BlockOp::Kind::Compute && !summed_square(kernel, i);
        if (scratch[i]) in_l1 += double(element_count(tile(k, i))) * 4;
        if (op.kind == BlockOp::Kind::Load)
          in_l1 += double(element_count(tile(k, i))) * double(sgraph::element_bytes(in_.analysis.tensors.at(op.tensor).dtype));
      }
    const double spill = in_l1 > double(target_.l1_bytes) ? 1 - double(target_.l1_bytes) / in_l1 : 0;
    for (size_t i = 0; i < kernel.ops.size(); ++i) {
      const BlockOp& op = kernel.ops[i];
      const LoopRole role = in_.analysis.tiles[k][i].role;
      const bool in_body = op.kind == BlockOp::Kind::Accumulate || (role != LoopRole::Invariant && role != LoopRole::After);
      const double runs = (in_body ? loop : 1) * blocks;
      const std::vector<int64_t> shape = tile(k, i);
      switch (op.kind) {
        case BlockOp::Kind::Load: {
          const double element = double(sgraph::element_bytes(in_.analysis.tensors.at(op.tensor).dtype));
          const std::vector<int64_t> whole = concrete_shape(in_.analysis.tensors.at(op.tensor).shape, in_.bindings);
          double run = contiguous_run(in_tensor_order(shape, op.view, whole.size()), whole) * element;
          if (const long columns = amx_b_columns(k, i)) run = std::min(run, double(columns) * element);
          loaded[op.tensor] += double(element_count(shape)) * element * runs;
          if (in_body) body_tiles += double(element_count(shape)) * element;
          run_overhead[op.tensor] += double(element_count(shape)) * element * runs * kRunOverhead / std::max(run, 1.0);
          break;
        }
        case BlockOp::Kind::Save: c.memory_bytes += tensor_bytes(op.name); break;
        case BlockOp::Kind::Compute:
        case BlockOp::Kind::Accumulate: {
          // A reduction or accumulator visits its operand's elements and vectorizes along its operand's
          // last dim; matmul and elementwise ops along their result's.
          const std::vector<int64_t> x = op.operands.empty() ? shape : tile(k, size_t(op.operands[0]));
          const bool matmul = op.kind == BlockOp::Kind::Compute && op.op == Op::Matmul;
          const bool reduces = op.kind == BlockOp::Kind::Accumulate || op_class(op.op) == OpClass::Reduce;
          // An accumulator folds like a sum.
          const double f = op.kind == BlockOp::Kind::Accumulate ? op_flops(Op::Sum, shape, x) : op_flops(op.op, shape, x);
          c.flops += f * runs;
          if (scratch[i]) c.scratch_bytes += 2 * double(element_count(shape)) * 4 * runs * spill;
          c.scaled_flops += f * runs / vector_factor(reduces ? x : shape) * (matmul ? tensor_core_factor(k, op) * widening(k, op) : 1.0);
          if (op.kind == BlockOp::Kind::Accumulate && target_.target == backend::Target::Cpu && target_.l1_bytes > 0 && !op.operands.empty()) {
            const BlockOp& from = kernel.ops[size_t(op.operands[0])];
            const double tile_bytes = double(element_count(shape)) * 4;  // accumulators are f32
            if (from.kind == BlockOp::Kind::Compute && from.op == Op::Matmul && tile_bytes > double(target_.l1_bytes) / 2)
              c.cache_bytes += 2 * tile_bytes * runs;  // assumption 8
          }
          break;
        }
      }
    }
    if (target_.target == backend::Target::Cuda) {  // assumption 4: double buffering or none
      const auto& footprint = in_.analysis.footprint.at(k);
      const double bytes = footprint ? footprint->evaluate(in_.bindings).to_double() : 0;
      c.overlaps = loop > 1 && body_tiles > 0 && bytes + body_tiles <= double(target_.fast_memory_bytes);
    }
    std::set<std::string> touched;
    for (const auto& [name, bytes] : loaded) touched.insert(name);
    for (const BlockOp& op : kernel.ops)
      if (op.kind == BlockOp::Kind::Save) touched.insert(op.name);
    const double hit = working_set_hit(touched);
    for (const auto& [name, bytes] : loaded) {
      // The surcharge goes where the bytes come from, in proportion.
      const double memory_before = c.memory_bytes, cache_before = c.cache_bytes;
      read(c, name, bytes, hit);
      const double extra = run_overhead[name] / std::max(bytes, 1.0);
      c.memory_bytes += (c.memory_bytes - memory_before) * extra;
      c.cache_bytes += (c.cache_bytes - cache_before) * extra;
    }
    return c;
  }

  KernelCost library(const sgraph::LibraryKernel& lib) {
    KernelCost c;
    std::set<std::string> inputs(lib.inputs.begin(), lib.inputs.end()), touched = inputs;
    touched.insert(lib.output);
    const double hit = working_set_hit(touched);
    for (const std::string& name : inputs) read(c, name, tensor_bytes(name), hit);
    c.memory_bytes += tensor_bytes(lib.output);
    std::vector<int64_t> out = concrete_shape(in_.analysis.tensors.at(lib.output).shape, in_.bindings);
    std::vector<int64_t> x = sgraph::view_dims(concrete_shape(in_.analysis.tensors.at(lib.inputs.at(0)).shape, in_.bindings), lib.view(0), int64_t(1));
    c.flops = op_flops(lib.op, out, x);
    c.scaled_flops = c.flops;
    const DType b_dtype = lib.inputs.size() == 2 ? in_.analysis.tensors.at(lib.inputs[1]).dtype : DType::F32;
    if (lib.op == Op::Matmul && target_.target == backend::Target::Cpu && b_dtype != DType::F32 && out.size() >= 2 && x.size() >= 2) {
      // The micro-kernel on chunks (assumption 9).
      const int64_t m = out[out.size() - 2], n = out.back(), batch = element_count(out) / std::max<int64_t>(1, m * n);
      const auto chunks = backend::cpu::detail::library_matmul_chunks(batch, m, n, b_dtype, target_.cores);
      c.chunks = chunks.count;
      const DType a_dtype = in_.analysis.tensors.at(lib.inputs[0]).dtype;
      c.scaled_flops *= matmul_rate({chunks.rows, x.back()}, {x.back(), chunks.columns}, a_dtype, b_dtype);
      const size_t b_rank = in_.analysis.tensors.at(lib.inputs[1]).shape.size();
      const int64_t piece = rows_along_k(lib.view(1), b_rank) ? n  // the NT kernels read B^T's rows whole
                            : amx(a_dtype, b_dtype, chunks.rows)
                                ? std::min<int64_t>(chunks.columns, backend::cpu::detail::amx_block_columns(a_dtype, b_dtype, chunks.rows, x.back(), chunks.columns))
                                : chunks.columns;
      if (piece < n)  // B's rows read in pieces (assumption 7)
        c.memory_bytes += tensor_bytes(lib.inputs[1]) * kRunOverhead / double(piece * sgraph::element_bytes(b_dtype));
    } else if (lib.op == Op::Matmul && target_.target == backend::Target::Cpu && lib.inputs.size() == 2 && b_dtype == DType::F32 &&
               in_.analysis.tensors.at(lib.inputs[0]).dtype == DType::F32 && in_.analysis.tensors.at(lib.output).dtype == DType::F32) {
      // sgemm, packing B every call (assumption 6).
      c.stream_bytes = kVendorPackPasses * tensor_bytes(lib.inputs[1]);
      c.scaled_flops /= kVendorGemmEfficiency;
    }
    return c;
  }

  void add(const KernelCost& c) {
    // A kernel whose tensors fit in the caches reads them from there when run again (assumption 2).
    const double bw = std::max(target_.bandwidth_for(c.memory_bytes), 1e-3) * 1e9, peak = std::max(target_.peak_gflops, 1e-3) * 1e9;
    const int64_t cores = std::max(1, target_.cores);
    double efficiency = 1, waves = 0;
    if (c.custom) {
      waves = double((c.blocks + cores - 1) / cores);
      efficiency = double(c.blocks) / (waves * double(cores));
      est_.blocks += c.blocks;
      est_.parallel_efficiency = std::min(est_.parallel_efficiency, efficiency);
    } else if (c.chunks > 0) {  // cores beyond a library matmul's chunks wait (assumption 6)
      efficiency = double(c.chunks) / (double((c.chunks + cores - 1) / cores) * double(cores));
      est_.parallel_efficiency = std::min(est_.parallel_efficiency, efficiency);
    }
    // Re-reads come from the caches at their measured bandwidth (kCacheSpeedup times memory's when
    // it was not measured), shared by all cores like memory's.
    const double cache_bw = target_.cache_bandwidth_gbs > 0 ? target_.cache_bandwidth_gbs * 1e9 : kCacheSpeedup * bw;
    const double l2_bw = kL2Speedup * cache_bw;
    const double memory_bw = std::max(target_.bandwidth_gbs, 1e-3) * 1e9;
    const double mem = (c.memory_bytes / bw + c.stream_bytes / memory_bw) / efficiency,
                 cache = (c.cache_bytes / cache_bw + c.scratch_bytes / l2_bw) / efficiency,
                 compute = c.scaled_flops / peak / efficiency;
    // Data movement overlaps compute (streaming in part on a CPU: assumption 10); the time is
    // credited to the larger's kind.
    const double movement = mem + cache;
    double loss = target_.target == backend::Target::Cpu ? kOverlapLoss * std::min(compute, mem) : 0.0;
    if (!c.overlaps) loss = std::min(compute, movement);  // one after the other
    if (compute >= movement) compute_s_ += compute + loss;
    else (cache > mem ? cache_s_ : memory_s_) += movement + loss;
    overhead_s_ += waves * kBlockOverhead + kKernelOverhead;
    est_.kernel_seconds.push_back(std::max(compute, movement) + loss + waves * kBlockOverhead + kKernelOverhead);
    est_.memory_bytes += c.memory_bytes;
    est_.cache_bytes += c.cache_bytes;
    est_.scratch_bytes += c.scratch_bytes;
    est_.flops += c.flops;
  }

  const sgraph::Instance& in_;
  const backend::TargetDescription& target_;
  std::set<std::string> read_;  // device tensors read so far
  CostEstimate est_;
  double memory_s_ = 0, cache_s_ = 0, compute_s_ = 0, overhead_s_ = 0;
};

}  // namespace

CostEstimate estimate_cost(const sgraph::Instance& instance, const backend::TargetDescription& target) {
  return CostModel(instance, target).run();
}

}  // namespace prism::tune
