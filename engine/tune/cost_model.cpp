// The cost model: one for every backend, which it never names. Where a kind of machine runs
// generated code its own way, the model asks the target's backend (backend/cost_rules.h: the
// CPU's in cpu/cost_rules.cpp, a GPU's in cuda/cost_rules.cpp). Assumptions, each a deliberate
// simplification; the model only has to rank the instances of one family, so it aims to be
// monotone in the obvious directions, not exact. The figures behind them: docs/tuning.md, "The
// cost model".
//
//  1. Traffic. A block loads each tile it uses: a tile the loop walks (or any load in the loop
//     body) moves its bytes every iteration, an invariant one once per block. Over all blocks,
//     the first read of each device tensor comes from DRAM (memory_bytes); of everything beyond
//     that (blocks re-reading a replicated tile, a later kernel re-reading a tensor) the caches
//     serve the part TargetDescription::cache_hit_fraction gives for the kernel's working set
//     (cache_bytes) and DRAM the rest. Every written tensor is written to DRAM once. Tensors are
//     at the dtypes the instance declares (a backend stores its families its way: Backend::stored).
//  2. Bandwidths. DRAM: the target's streaming-read bandwidth for the kernel's working set
//     (TargetDescription::bandwidth_for). Re-reads (cache_bytes): the measured cache bandwidth
//     (kCacheSpeedup times memory's when it was not measured), shared by all cores.
//  3. Flops. matmul 2*m*n*k per tile, elementwise ops one per output element, reductions and
//     accumulators one per input element (transcendentals count 1), each times the times the op
//     runs (loop iterations for loop-body ops) and the blocks. Peak is the target's f32 peak,
//     divided by a vectorization factor min(1, width / lanes) where width is the tile's last
//     (contiguous) dim and lanes the backend's (CostRules::vector_lanes). A block matmul's flops
//     cost what the backend says of its tiles (CostRules::block_matmul_factor: tensor cores,
//     widening a 16-bit B, a matrix unit).
//  4. Overlap. Within a kernel, data movement (memory plus cache traffic, one after the other)
//     and compute overlap where the backend says they do (CostRules::overlaps: on a GPU, a loop
//     the code generator double-buffers): the kernel takes the larger, plus the part of the
//     smaller of streaming and compute that does not hide (CostRules::overlap_loss); else their
//     sum. Divided by its parallel efficiency blocks / (ceil(blocks/used) * cores) (the last
//     wave of blocks leaves cores idle; one block uses one core), where a kernel runs on the
//     `used` cores the backend gives its work (CostRules::kernel_cores: one below the CPU's grain).
//  5. Overheads. kBlockOverhead per block on each core (ceil(blocks/cores) waves: tile setup,
//     loop control, poor locality of tiny blocks) and kKernelOverhead per kernel that runs on
//     more than one core (a parallel region, a launch), kCallOverhead per one that runs on the
//     calling thread alone (a function call). Kernels run one after another.
//  6. Library kernels. Whole-tensor ops at full parallel efficiency: their inputs' and output's
//     bytes (as in 1) and their op's flops at peak; a matmul as the backend runs it
//     (CostRules::library_matmul: parallel chunks, which have the efficiency of a custom
//     kernel's blocks, a flop rate, B's rows read in pieces, B moved again by packing).
//  7. Access pattern. A tile is read as runs of contiguous bytes (its rows, when it does not span
//     the tensor's last dim, in the tensor's own dim order: an nn.Linear weight's W^T tile of
//     K x N lies as N runs of K; a B the backend reads in row pieces, CostRules::b_row_piece, as
//     runs of a piece); every run costs the backend's CostRules::run_overhead_bytes of streaming
//     on top of its own bytes (a CPU's: a new DRAM page and a prefetch stream restarting; a GPU's:
//     a memory sector). This is what sets instantiations apart that move the same bytes: wide,
//     contiguous tiles stream better than narrow ones.
//  8. Accumulators. Where the backend has a private cache per core (CostRules::
//     private_cache_bytes), a matmul's accumulator tile larger than half of it moves twice its
//     bytes through the next level every loop iteration (cache_bytes).
//  9. Scratch. Where it has one, a block writes every tile it computes to its scratch buffer and
//     the op that reads it reads it back: where those tiles and the tiles it loads together exceed
//     the private cache, the part of that traffic beyond it moves through the next level
//     (scratch_bytes), at kL2Speedup times the cache bandwidth of assumption 2.
// 10. Tails. A custom kernel that reads what the custom kernel before it saved, in groups
//     (sgraph/tail_groups.h: a split-k kernel's partials and the kernel that sums them), runs in
//     that kernel's launch where the backend says so (CostRules::tail_blocks_at_once: the GPU's
//     ticket, or its blocks waiting for the first kernel's): no launch of its own, its blocks on
//     as many cores as the backend says (a ticket's: the groups, the last block of each running
//     the group's tail blocks one after another).
// 11. Latency. Where the backend prices memory's latency (CostRules::memory_latency_seconds: a
//     GPU's), a core holds as many of a kernel's blocks at once as the backend says
//     (CostRules::residency: an SM's threads and shared memory), and each block keeps so many
//     bytes in flight (its pipeline's stages): a wave of resident blocks takes at least a
//     latency for each time a block's loads refill its bytes in flight (Little's law), and the
//     block overhead of assumption 5 is paid per wave of resident blocks. A block matmul's rate
//     depends on the blocks a core holds (CostRules::block_matmul_factor: a GPU's chains of
//     dependent tensor-core steps), and each statement a block runs costs the backend's
//     CostRules::statement_seconds as compute (a GPU's barrier after it).
#include "engine/tune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "engine/ir/shape.h"
#include "engine/sgraph/tail_groups.h"
#include "engine/tune/backends.h"

namespace prism::tune {

namespace cost_detail {

// One kernel's part of an estimate, before the target's bandwidths and peak turn it into time.
struct KernelCost {
  double memory_bytes = 0, cache_bytes = 0, flops = 0, scaled_flops = 0;  // scaled: divided by the vectorization factor
  double scratch_bytes = 0;                                                 // through the next level (assumption 9)
  double stream_bytes = 0;  // at the memory bandwidth whatever the working set (a vendor GEMM's packing, assumption 6)
  double work = 0;          // what the backend's kernel_cores counts (assumption 4): element operations,
  bool loop = false;        // or, for a library op other than a matmul, its output's elements
  int64_t blocks = 0;
  int64_t blocks_per_core = 1;  // of a custom kernel's, run by a core at once (assumption 11)
  double round_trips = 0;       // the times a block's loads refill its bytes in flight (0: no latency priced)
  double statements = 0;        // a block's statements run (assumption 11)
  int64_t chunks = 0;    // a library kernel's parallel chunks (0: a whole-tensor call, assumption 6)
  bool custom = false;
  bool overlaps = true;  // its data movement overlaps its compute (assumption 4)
};

}  // namespace cost_detail

// Each kernel's cost by the values of the parameters it names (CostMemo).
struct CostMemo::Kernels {
  struct Kept {
    std::vector<std::string> parameters;  // the family parameters the kernel names
    std::vector<std::string> reads;       // the device tensors it reads (sgraph::kernel_inputs)
    std::map<std::vector<int64_t>, cost_detail::KernelCost> costs;  // by the parameters' values
  };
  std::vector<std::optional<Kept>> kernels;  // [kernel], described at its first estimate
};

CostMemo::CostMemo() : kernels(std::make_unique<Kernels>()) {}
CostMemo::~CostMemo() = default;

namespace {

using cost_detail::KernelCost;

constexpr double kCacheSpeedup = 4;
constexpr double kBlockOverhead = 1e-6;
constexpr double kKernelOverhead = 5e-6;
constexpr double kCallOverhead = 0.3e-6;
constexpr double kL2Speedup = 3;

using sgraph::BlockOp;
using sgraph::LoopRole;

class CostModel {
 public:
  CostModel(const sgraph::Instance& instance, const backend::TargetDescription& target, CostMemo::Kernels* memo)
      : in_(instance), target_(target), rules_(backend_for(target.target).cost_rules()), memo_(memo) {}

  CostEstimate run() {
    const auto& kernels = in_.graph.kernels;
    if (memo_) memo_->kernels.resize(kernels.size());
    int64_t previous_blocks = 0;
    bool previous_tail = false;  // a tail is no first kernel of another (the code generator's pairs)
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (!kernels[k].custom && sgraph::reshapes_in_place(in_.graph, in_.analysis, kernels[k].library)) continue;  // no copy, no launch
      const KernelCost c = memo_ ? remembered(k) : cost_of(k);
      // A kernel that sums the partials the one before saved may run in its launch (assumption 10).
      const int64_t groups = sgraph::tail_groups(in_, k);
      const int64_t at_once = groups > 0 && !previous_tail ? rules_.tail_blocks_at_once(groups, previous_blocks, c.blocks, target_) : 0;
      const bool tail = at_once > 0;
      previous_blocks = c.blocks;
      previous_tail = tail;
      add(c, at_once);
      if (!tail) ++est_.kernels;
    }
    est_.seconds = memory_s_ + cache_s_ + compute_s_ + overhead_s_;
    double top = std::max({memory_s_, cache_s_, compute_s_, overhead_s_});
    est_.bound = top == overhead_s_ ? "overhead" : top == compute_s_ ? "compute" : top == cache_s_ ? "cache" : "memory";
    return est_;
  }

 private:

  double tensor_elements(const std::string& name) const {
    return double(element_count(concrete_shape(in_.analysis.tensors.at(name).shape, in_.bindings)));
  }
  // Tensors at the dtypes the instance stores them (a backend's, Backend::stored).
  double tensor_bytes(const std::string& name) const {
    return tensor_elements(name) * double(sgraph::element_bytes(in_.analysis.tensors.at(name).dtype));
  }
  std::vector<int64_t> tile(size_t k, size_t i) const {
    const auto& info = in_.analysis.tiles[k][i];
    return info.type ? concrete_shape(info.type->shape, in_.bindings) : std::vector<int64_t>{};
  }
  double vector_factor(const std::vector<int64_t>& shape) const {
    double lanes = rules_.vector_lanes(target_);
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

  // Block op `op` of kernel k, a matmul of two tiles, as the backend's rules see it.
  backend::BlockMatmul block_matmul(size_t k, const BlockOp& op) const {
    const auto& ops = in_.graph.kernels[k].block.ops;
    const BlockOp &left = ops[size_t(op.operands[0])], &right = ops[size_t(op.operands[1])];
    backend::BlockMatmul m;
    m.a = tile(k, size_t(op.operands[0]));
    m.b = tile(k, size_t(op.operands[1]));
    m.a_storage = operand_storage(left);
    m.b_storage = operand_storage(right);
    m.b_loaded = right.kind == BlockOp::Kind::Load;
    m.all_16bit = all_16bit();
    return m;
  }

  // A block matmul's flops over their count at the f32 peak (assumption 3), a core running
  // `blocks_per_core` of its kernel's blocks at once (assumption 11).
  double matmul_factor(size_t k, const BlockOp& op, int64_t blocks_per_core) const {
    if (op.operands.size() != 2) return 1;
    backend::BlockMatmul m = block_matmul(k, op);
    m.blocks_per_core = blocks_per_core;
    return rules_.block_matmul_factor(m, target_);
  }

  // Kernel k's loop as the backend's rules see it (assumptions 4 and 11): the bytes a block loads
  // each iteration and in all, and its tile footprint.
  backend::LoopTiles loop_tiles(size_t k, double loop) const {
    const sgraph::CustomKernel& kernel = in_.graph.kernels[k].block;
    backend::LoopTiles t;
    t.iterations = loop;
    for (size_t i = 0; i < kernel.ops.size(); ++i) {
      const BlockOp& op = kernel.ops[i];
      if (op.kind != BlockOp::Kind::Load) continue;
      const LoopRole role = in_.analysis.tiles[k][i].role;
      const bool in_body = role != LoopRole::Invariant && role != LoopRole::After;
      const double bytes = double(element_count(tile(k, i))) * double(sgraph::element_bytes(in_.analysis.tensors.at(op.tensor).dtype));
      if (in_body) t.body_bytes += bytes;
      t.block_bytes += bytes * (in_body ? loop : 1);
    }
    const auto& footprint = in_.analysis.footprint.at(k);
    t.resident_bytes = footprint ? footprint->evaluate(in_.bindings).to_double() : 0;
    return t;
  }

  // Where block op `i` of kernel k is the B of a matmul that reads B's rows in pieces (the
  // backend's rules), their length; else 0, and 0 for a B stored transposed, whose rows are read
  // whole (along K).
  int64_t b_row_piece(size_t k, size_t i) const {
    const auto& ops = in_.graph.kernels[k].block.ops;
    if (ops[i].kind == BlockOp::Kind::Load && rows_along_k(ops[i].view, in_.analysis.tensors.at(ops[i].tensor).shape.size())) return 0;
    for (const BlockOp& op : ops)
      if (op.kind == BlockOp::Kind::Compute && op.op == Op::Matmul && op.operands.size() == 2 && op.operands[1] == int(i))
        if (const int64_t piece = rules_.b_row_piece(block_matmul(k, op), target_)) return piece;
    return 0;
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
    const bool product = op.op == Op::Mul && op.operands.size() == 2 && op.operands[0] == op.operands[1];
    if (op.kind != BlockOp::Kind::Compute || !(product || (op.op == Op::Square && op.operands.size() == 1))) return false;
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
    // Assumptions 4 and 11: the loop's tiles, and the blocks a core runs at once.
    const backend::LoopTiles loop_bytes = loop_tiles(k, loop);
    const backend::BlockResidency residency = rules_.residency(loop_bytes, target_);
    const int64_t cores = std::max(1, target_.cores);
    c.blocks_per_core = std::clamp<int64_t>((c.blocks + cores - 1) / cores, 1, std::max<int64_t>(1, residency.blocks_per_core));
    if (residency.bytes_in_flight > 0) c.round_trips = std::max(1.0, loop_bytes.block_bytes / residency.bytes_in_flight);
    c.overlaps = rules_.overlaps(loop_bytes, target_);
    // A block waits for its loads once before the loop and once an iteration (assumption 11).
    c.statements = (loop_bytes.body_bytes > 0 ? loop : 0) + (loop_bytes.block_bytes > loop_bytes.body_bytes * loop ? 1 : 0);
    std::map<std::string, double> loaded;        // bytes moved per tensor over all blocks
    std::map<std::string, double> run_overhead;  // their access-pattern surcharge (assumption 7)
    // Assumption 9: the part of the scratch traffic that the private cache does not hold. A product
    // x * x or square(x) that only a sum reads is never written (a generator with scratch sums the
    // squares: cpu/fuse_squares.h).
    std::vector<bool> scratch(kernel.ops.size(), false);
    double in_private = 0;
    const int64_t private_bytes = rules_.private_cache_bytes(target_);
    if (private_bytes > 0)
      for (size_t i = 0; i < kernel.ops.size(); ++i) {
        const BlockOp& op = kernel.ops[i];
        scratch[i] = op.kind == BlockOp::Kind::Compute && !summed_square(kernel, i);
        if (scratch[i]) in_private += double(element_count(tile(k, i))) * 4;
        if (op.kind == BlockOp::Kind::Load)
          in_private += double(element_count(tile(k, i))) * double(sgraph::element_bytes(in_.analysis.tensors.at(op.tensor).dtype));
      }
    const double spill = in_private > double(private_bytes) ? 1 - double(private_bytes) / in_private : 0;
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
          if (const int64_t piece = b_row_piece(k, i)) run = std::min(run, double(piece) * element);
          loaded[op.tensor] += double(element_count(shape)) * element * runs;
          c.work += double(element_count(shape)) * runs;
          run_overhead[op.tensor] += double(element_count(shape)) * element * runs * rules_.run_overhead_bytes(target_) / std::max(run, 1.0);
          break;
        }
        case BlockOp::Kind::Save:
          c.statements += 1;
          c.memory_bytes += tensor_bytes(op.name);
          c.work += tensor_elements(op.name);
          break;
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
          c.statements += in_body ? loop : 1;
          c.work += (matmul ? f / 2 : double(element_count(reduces ? x : shape))) * runs;
          if (scratch[i]) c.scratch_bytes += 2 * double(element_count(shape)) * 4 * runs * spill;
          c.scaled_flops += f * runs / vector_factor(reduces ? x : shape) * (matmul ? matmul_factor(k, op, c.blocks_per_core) : 1.0);
          if (op.kind == BlockOp::Kind::Accumulate && private_bytes > 0 && !op.operands.empty()) {
            const BlockOp& from = kernel.ops[size_t(op.operands[0])];
            const double tile_bytes = double(element_count(shape)) * 4;  // accumulators are f32
            if (from.kind == BlockOp::Kind::Compute && from.op == Op::Matmul && tile_bytes > double(private_bytes) / 2)
              c.cache_bytes += 2 * tile_bytes * runs;  // assumption 8
          }
          break;
        }
      }
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
    c.work = double(element_count(out));
    c.loop = true;
    if (lib.op == Op::Matmul && lib.inputs.size() == 2) {  // the backend's library matmul (assumption 6)
      backend::LibraryMatmul m;
      m.out = out;
      m.a = x;
      m.a_dtype = in_.analysis.tensors.at(lib.inputs[0]).dtype;
      m.b_dtype = in_.analysis.tensors.at(lib.inputs[1]).dtype;
      m.out_dtype = in_.analysis.tensors.at(lib.output).dtype;
      m.b_rows_along_k = rows_along_k(lib.view(1), in_.analysis.tensors.at(lib.inputs[1]).shape.size());
      const backend::LibraryMatmulCost cost = rules_.library_matmul(m, target_);
      c.chunks = cost.chunks;
      c.work = c.flops / 2;
      c.loop = false;
      c.scaled_flops *= cost.flop_factor;
      if (cost.b_piece > 0 && cost.b_piece < out.back())  // B's rows read in pieces (assumption 7)
        c.memory_bytes += tensor_bytes(lib.inputs[1]) * rules_.run_overhead_bytes(target_) / double(cost.b_piece * sgraph::element_bytes(m.b_dtype));
      if (cost.b_stream_passes > 0) c.stream_bytes = cost.b_stream_passes * tensor_bytes(lib.inputs[1]);
    }
    return c;
  }

  KernelCost cost_of(size_t k) {
    const sgraph::Kernel& kernel = in_.graph.kernels[k];
    return kernel.custom ? custom(k) : library(kernel.library);
  }

  // Kernel k's cost from the memo, where an instance with the same values of the parameters it
  // names priced it; the tensors it reads count as read, as pricing it counts them.
  KernelCost remembered(size_t k) {
    std::optional<CostMemo::Kernels::Kept>& kept = memo_->kernels[k];
    if (!kept) kept = CostMemo::Kernels::Kept{parameters_named(k), sgraph::kernel_inputs(in_.graph.kernels[k]), {}};
    std::vector<int64_t> key;
    for (const std::string& p : kept->parameters) key.push_back(in_.bindings.at(p));
    if (auto it = kept->costs.find(key); it != kept->costs.end()) {
      read_.insert(kept->reads.begin(), kept->reads.end());
      return it->second;
    }
    return kept->costs.emplace(std::move(key), cost_of(k)).first->second;
  }

  // The family parameters kernel k's cost can depend on: those its grid, loop, tiles, footprint
  // and tensors' shapes name.
  std::vector<std::string> parameters_named(size_t k) const {
    std::set<std::string> symbols;
    auto add_dim = [&](const Dim& d) {
      for (std::string& s : d.symbols()) symbols.insert(std::move(s));
    };
    const sgraph::Kernel& kernel = in_.graph.kernels[k];
    for (const auto& names : {sgraph::kernel_inputs(kernel), sgraph::kernel_outputs(kernel)})
      for (const std::string& name : names)
        if (auto it = in_.analysis.tensors.find(name); it != in_.analysis.tensors.end())
          for (const Dim& d : it->second.shape) add_dim(d);
    if (kernel.custom) {
      for (const Dim& g : kernel.block.grid) add_dim(g);
      add_dim(kernel.block.loop_range());
      for (const auto& tile : in_.analysis.tiles[k])
        if (tile.type)
          for (const Dim& d : tile.type->shape) add_dim(d);
      if (in_.analysis.footprint.at(k)) add_dim(*in_.analysis.footprint.at(k));
    }
    std::vector<std::string> named;
    for (const std::string& p : in_.graph.parameters())
      if (symbols.count(p)) named.push_back(p);
    return named;
  }

  // `tail_blocks` > 0: the kernel runs in the launch before it, its blocks on that many at once
  // (assumption 10).
  void add(const KernelCost& c, int64_t tail_blocks = 0) {
    // A kernel whose tensors fit in the caches reads them from there when run again (assumption 2).
    const double bw = std::max(target_.bandwidth_for(c.memory_bytes), 1e-3) * 1e9, peak = std::max(target_.peak_gflops, 1e-3) * 1e9;
    const int64_t cores = std::max(1, target_.cores);
    int64_t used = std::clamp<int64_t>(rules_.kernel_cores(c.work, c.loop, target_), 1, cores);
    if (tail_blocks > 0) used = std::min(used, tail_blocks);
    double efficiency = 1, waves = 0;
    if (c.custom) {
      // Waves of the blocks the used cores hold at once (assumption 11; one a core on a CPU).
      const int64_t slots = used * c.blocks_per_core;
      waves = double((c.blocks + slots - 1) / slots);
      efficiency = double(c.blocks) / (double((c.blocks + used - 1) / used) * double(cores));
      est_.blocks += c.blocks;
      est_.parallel_efficiency = std::min(est_.parallel_efficiency, efficiency);
    } else if (c.chunks > 0) {  // cores beyond a library matmul's chunks wait (assumption 6)
      efficiency = double(c.chunks) / (double((c.chunks + used - 1) / used) * double(cores));
      est_.parallel_efficiency = std::min(est_.parallel_efficiency, efficiency);
    }
    // Re-reads come from the caches at their measured bandwidth (kCacheSpeedup times memory's when
    // it was not measured), shared by all cores like memory's.
    const double cache_bw = target_.cache_bandwidth_gbs > 0 ? target_.cache_bandwidth_gbs * 1e9 : kCacheSpeedup * bw;
    const double l2_bw = kL2Speedup * cache_bw;
    const double memory_bw = std::max(target_.bandwidth_gbs, 1e-3) * 1e9;
    // A wave of blocks waits a latency each time their loads refill what they keep in flight
    // (assumption 11).
    const double latency = c.round_trips > 0 ? waves * c.round_trips * rules_.memory_latency_seconds(target_) : 0.0;
    const double mem = std::max((c.memory_bytes / bw + c.stream_bytes / memory_bw) / efficiency, latency),
                 cache = (c.cache_bytes / cache_bw + c.scratch_bytes / l2_bw) / efficiency,
                 compute = c.scaled_flops / peak / efficiency + waves * c.statements * rules_.statement_seconds(target_);
    // Data movement overlaps compute, in part where the backend says so (assumption 4); the time is
    // credited to the larger's kind.
    const double movement = mem + cache;
    double loss = rules_.overlap_loss() > 0 ? rules_.overlap_loss() * std::min(compute, mem) : 0.0;
    if (!c.overlaps) loss = std::min(compute, movement);  // one after the other
    if (compute >= movement) compute_s_ += compute + loss;
    else (cache > mem ? cache_s_ : memory_s_) += movement + loss;
    const double launch = tail_blocks > 0 ? 0.0 : used > 1 ? kKernelOverhead : kCallOverhead;
    overhead_s_ += waves * kBlockOverhead + launch;
    est_.kernel_seconds.push_back(std::max(compute, movement) + loss + waves * kBlockOverhead + launch);
    est_.memory_bytes += c.memory_bytes;
    est_.cache_bytes += c.cache_bytes;
    est_.scratch_bytes += c.scratch_bytes;
    est_.flops += c.flops;
  }

  const sgraph::Instance& in_;
  const backend::TargetDescription& target_;
  const backend::CostRules& rules_;
  CostMemo::Kernels* memo_;     // null: every kernel priced anew
  std::set<std::string> read_;  // device tensors read so far
  CostEstimate est_;
  double memory_s_ = 0, cache_s_ = 0, compute_s_ = 0, overhead_s_ = 0;
};

}  // namespace

CostEstimate estimate_cost(const sgraph::Instance& instance, const backend::TargetDescription& target) {
  return CostModel(instance, target, nullptr).run();
}

CostEstimate estimate_cost(const sgraph::Instance& instance, const backend::TargetDescription& target, CostMemo& memo) {
  return CostModel(instance, target, memo.kernels.get()).run();
}

}  // namespace prism::tune
