#include "engine/backend/cuda/codegen.h"

#include <algorithm>
#include <climits>
#include <set>

#include "engine/backend/c_expr.h"
#include "engine/backend/cuda/double_buffer.h"
#include "engine/backend/cuda/emit_ops.h"
#include "engine/backend/cuda/pad_tiles.h"
#include "engine/backend/cuda/ticket.h"
#include "engine/backend/lower.h"
#include "engine/backend/statement_walk.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cuda {

using namespace detail;

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error(Error::Kind::InvalidArgument, "cuda codegen: " + what); }

std::string ll(int64_t v) { return std::to_string(v) + "LL"; }

// Prints one kernel of the kernel IR as an `extern "C" __global__` kernel: a place is a view of a
// tile in shared memory ("v3") or of a box of a pointer parameter ("(p1 + b0 * 64LL)").
class KernelPrinter {
 public:
  // The shared walk over a statement's kinds calls the members that print each (statement_walk.h).
  template <class P, class C>
  friend std::string prism::backend::walk_statement(P& p, const kir::Stmt& s, const C& ctx, const std::string& f);

  KernelPrinter(const kir::Program& p, const kir::Kernel& k, const CudaCodegenOptions& o) : p_(p), k_(k), options_(o) {
    ctx_.threads = o.threads_per_block;
    all_16bit_ = !p.tensors.empty();
    for (size_t i = 0; i < p.inputs; ++i) all_16bit_ = all_16bit_ && p.tensors[i].dtype != DType::F32;
    for (const std::string& name : p.outputs) all_16bit_ = all_16bit_ && p.tensor(name).dtype != DType::F32;
  }

  // Whether a matmul took the tensor-core path (the source needs <mma.h>).
  bool uses_tensor_cores() const { return uses_tensor_cores_; }

  std::string custom(const std::string& fn, CudaKernelInfo& info) {
    const std::string params = parameters(fn, info);
    info.grid_blocks = grid_blocks(fn);
    info.shared_bytes = shared_bytes(fn);
    return signature(fn, params) + block_code("blockIdx.x") + "}\n";
  }

  // This kernel with `tail` (the next kernel) in its launch (ticket.h): this block's code, then
  // its ticket, then, in the last block of its group to arrive, the group's tail blocks one after
  // another. The counters are the last parameter (`counters`: a tensor of 32-bit words, zero
  // before every launch).
  std::string with_tail(const std::string& fn, CudaKernelInfo& info, KernelPrinter& tail, const TicketGroups& groups,
                        const std::string& counters) {
    std::string c;
    const std::string params = shared_launch(fn, info, tail, counters, c);
    info.grid_blocks = grid_blocks(fn);
    tail.grid_blocks(fn + "'s tail");
    auto table = [&](const char* what, const std::vector<int>& v) {
      std::string s = "__constant__ int " + fn + "_" + what + "[" + std::to_string(v.size()) + "] = {";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "};\n";
    };
    std::string s = "\n// " + fn + "'s groups (engine/backend/cuda/ticket.h): " + std::to_string(groups.groups()) + "\n";
    s += table("group", groups.group_of) + table("arrivals", groups.arrivals) + table("tail_start", groups.tail_start) +
         table("tail_blocks", groups.tail_blocks);
    s += signature(fn, params) + "  {\n" + block_code("blockIdx.x") + "  }\n";
    s += "  // its ticket: the last block of its group to arrive runs the group's tail blocks\n";
    s += "  const int prism_group = " + fn + "_group[blockIdx.x];\n";
    s += "  if (prism_group < 0) return;\n";
    s += "  __threadfence();\n  __syncthreads();\n";
    s += "  volatile int* const prism_last = reinterpret_cast<volatile int*>(prism_smem);\n";
    s += "  if (threadIdx.x == 0) {\n";
    s += "    const bool last = atomicAdd(" + c + " + prism_group, 1u) + 1u == unsigned(" + fn + "_arrivals[prism_group]);\n";
    s += "    if (last) " + c + "[prism_group] = 0u;\n";
    s += "    *prism_last = last;\n  }\n";
    s += "  __syncthreads();\n  const bool prism_is_last = *prism_last != 0;\n  __syncthreads();\n";
    s += "  if (!prism_is_last) return;\n  __threadfence();\n";
    s += "  for (int prism_tail = " + fn + "_tail_start[prism_group]; prism_tail < " + fn + "_tail_start[prism_group + 1]; ++prism_tail) {\n";
    s += tail.block_code(fn + "_tail_blocks[prism_tail]") + "  __syncthreads();\n  }\n";
    uses_tensor_cores_ = uses_tensor_cores_ || tail.uses_tensor_cores_;
    return s + "}\n";
  }

  // This kernel with `tail` (the next kernel) in its launch as a tail that waits (ticket.h,
  // waits_in_launch): the first blocks run this kernel's and count themselves in, the tail's
  // blocks follow, each waiting until all have. The counters are the last parameter (`counters`:
  // two 32-bit words, zero before every launch: the arrivals, then the tail blocks that left).
  std::string with_waiting_tail(const std::string& fn, CudaKernelInfo& info, KernelPrinter& tail, const std::string& counters) {
    std::string c;
    const std::string params = shared_launch(fn, info, tail, counters, c);
    const int64_t first = grid_blocks(fn), rest = tail.grid_blocks(fn + "'s tail");
    if (first + rest > INT32_MAX) fail(fn + ": a grid of " + std::to_string(first + rest) + " blocks with its tail is too large");
    info.grid_blocks = first + rest;
    const std::string n = std::to_string(first), m = std::to_string(rest);
    std::string s = "\n// " + fn + " and its tail in one launch, the tail's blocks waiting (engine/backend/cuda/ticket.h)\n";
    s += signature(fn, params) + "  if (blockIdx.x < " + n + ") {\n  {\n" + block_code("blockIdx.x") + "  }\n";
    s += "  // counted in once its writes are done\n  __threadfence();\n  __syncthreads();\n";
    s += "  if (threadIdx.x == 0) atomicAdd(" + c + ", 1u);\n  return;\n  }\n";
    s += "  // a block of the tail: it waits until every block before it has counted itself in\n";
    s += "  volatile int* const prism_ready = reinterpret_cast<volatile int*>(prism_smem);\n";
    s += "  if (threadIdx.x == 0) *prism_ready = prism_blocks_arrived(" + c + ", " + n + "u);\n";
    s += "  __syncthreads();\n  if (!*prism_ready) return;  // only in the host emulation: the block runs again later\n";
    s += "  __threadfence();\n  __syncthreads();\n";
    s += "  {\n" + tail.block_code("(blockIdx.x - " + n + "LL)") + "  }\n";
    s += "  // the last tail block to leave sets the counters back to 0\n  __syncthreads();\n";
    s += "  if (threadIdx.x == 0 && atomicAdd(" + c + " + 1, 1u) + 1u == " + m + "u) {\n";
    s += "    " + c + "[0] = 0u;\n    " + c + "[1] = 0u;\n  }\n";
    uses_tensor_cores_ = uses_tensor_cores_ || tail.uses_tensor_cores_;
    return s + "}\n";
  }

 private:
  // This kernel and `tail` in one launch: their parameters, then the counters' (`counters`, 32-bit
  // words; its parameter's name in `c`), and the larger of their shared memory, with at least a
  // word for the flag a block shares.
  std::string shared_launch(const std::string& fn, CudaKernelInfo& info, KernelPrinter& tail, const std::string& counters, std::string& c) {
    std::string params = parameters(fn, info);
    for (const std::string& name : tail.k_.reads) params += parameter(name, true, info);
    for (const std::string& name : tail.k_.writes) params += parameter(name, false, info);
    tail.param_ = param_;
    c = "p" + std::to_string(info.params.size());
    info.params.push_back(counters);
    info.shared_bytes = std::max({shared_bytes(fn), tail.shared_bytes(fn + "'s tail"), int64_t(16)});
    return params + ", unsigned* __restrict__ " + c;
  }

  int64_t grid_blocks(const std::string& fn) const {
    const int64_t blocks = k_.block.blocks();
    if (blocks > INT32_MAX) fail(fn + ": a grid of " + std::to_string(blocks) + " blocks is too large");
    return blocks;
  }

  int64_t shared_bytes(const std::string& fn) const {
    const kir::CustomKernel& k = k_.block;
    if (k.fast_memory_bytes > options_.shared_memory_bytes)
      fail(fn + ": its tiles need " + std::to_string(k.fast_memory_bytes) + " bytes of shared memory, more than the " +
           std::to_string(options_.shared_memory_bytes) + " a block may use");
    const DoubleBuffer buffers = plan_double_buffer(k, options_.shared_memory_bytes, options_.pipeline_stages);
    return buffers.tiles.empty() ? k.fast_memory_bytes : buffers.shared_bytes;
  }

  // __launch_bounds__(threads) or, where a schedule holds several blocks an SM,
  // __launch_bounds__(threads, blocks).
  std::string launch_bounds() const {
    std::string bounds = "__launch_bounds__(" + std::to_string(options_.threads_per_block);
    if (options_.blocks_per_sm > 1) bounds += ", " + std::to_string(options_.blocks_per_sm);
    return bounds + ")";
  }

  std::string signature(const std::string& fn, const std::string& params) const {
    return "extern \"C\" __global__ void " + launch_bounds() + " " + fn + "(" + params + ") {\n" +
           "  extern __shared__ __align__(128) unsigned char prism_smem[];\n";
  }

  // One block's code: the block `blk` (an expression) names, its tiles and accumulators, its
  // phases; every thread of the block runs it and meets the others at its barriers.
  std::string block_code(const std::string& blk) {
    const kir::CustomKernel& k = k_.block;
    const DoubleBuffer buffers = plan_double_buffer(k, options_.shared_memory_bytes, options_.pipeline_stages);
    const std::string t = std::to_string(options_.threads_per_block);
    std::string s = "  const long long blk = " + blk + ";\n";
    int64_t inner = 1;
    for (size_t gi = k.grid.size(); gi-- > 0;) {
      s += "  const int b" + std::to_string(gi) + " = int(blk / " + ll(inner) + " % " + ll(k.grid[gi]) + ");\n";
      inner *= k.grid[gi];
    }
    for (const kir::Tile& tile : k.tiles) {
      const std::string type = storage_type(tile.storage), v = std::string("v").append(std::to_string(tile.value));
      s += "  " + type + "* const " + v + " = reinterpret_cast<" + type + "*>(prism_smem + " + std::to_string(tile.offset_bytes) +
           ");  // " + tile.name + "\n";
    }
    for (const kir::Accumulator& a : k.accumulators) {
      std::string init = a.acc == sgraph::AccKind::Max ? "prism_neg_inf()" : "0.0f";
      s += "  for (int e = threadIdx.x; e < " + std::to_string(a.elements) + "; e += " + t + ") v" + std::to_string(a.value) +
           "[e] = " + init + ";  // " + a.name + "\n";
    }
    s += "  __syncthreads();\n";
    s += phase(k.before, "  ", "0");
    s += buffers.tiles.empty() ? "  for (int f = 0; f < " + std::to_string(k.loop) + "; ++f) {\n" + phase(k.body, "    ", "f") + "  }\n"
                               : double_buffered_loop(buffers);
    for (const kir::Accumulator& a : k.accumulators) {
      if (a.acc != sgraph::AccKind::Rms) continue;
      std::string v = std::string("v").append(std::to_string(a.value));
      s += "  for (int e = threadIdx.x; e < " + std::to_string(a.elements) + "; e += " + t + ") " + v + "[e] = sqrtf(" + v + "[e] / " +
           std::to_string(a.count) + ".0f);  // " + a.name + "\n";
    }
    s += "  __syncthreads();\n";
    return s + phase(k.after, "  ", "0");
  }

 public:
  // The loop with its loads stages - 1 iterations ahead (double_buffer.h): the first stages - 1
  // iterations' loads before it, each a cp.async group; in iteration f, f + stages - 1's into the
  // slots iteration f - 1 read (a group, empty past the last), then a wait for f's (all groups
  // but the newest stages - 1 complete) and the body's other statements on f's slots.
  std::string double_buffered_loop(const DoubleBuffer& buffers) {
    const kir::CustomKernel& k = k_.block;
    const int stages = buffers.stages;
    std::vector<kir::Stmt> loads, rest;
    for (const kir::Stmt& st : k.body) (st.kind == kir::Stmt::Kind::Stage ? loads : rest).push_back(st);
    EmitContext ctx = ctx_;
    auto stage_all = [&](const std::string& ind, const std::string& f) {
      std::string code;
      ctx.indent = ind + "  ";
      for (const kir::Stmt& st : loads) code += ind + "{  // " + st.label + (f == "0" ? "" : ", iteration " + f) + "\n" + statement(st, ctx, f) + ind + "}\n";
      return code;
    };
    // The slot of iteration `at` (f, or f plus a constant) among a tile's.
    auto slot = [&](const BufferedTile& t, const std::string& at) {
      std::string pick = std::to_string(t.slots.back());
      for (int i = stages - 2; i >= 0; --i) pick = at + " % " + std::to_string(stages) + " == " + std::to_string(i) + " ? " + std::to_string(t.slots[size_t(i)]) + " : " + pick;
      return "(" + pick + ")";
    };
    const std::string ahead = std::to_string(stages - 1), next = "(f + " + ahead + ")";
    std::string s = "  // loads " + ahead + " iteration(s) ahead, into " + std::to_string(stages) + " slots per tile (a pipeline of cp.async groups)\n";
    for (int i = 0; i < stages - 1; ++i) {  // iteration 0's slots are the lowering's; i's the i-th
      tile_names_.clear();
      if (i > 0)
        for (const BufferedTile& t : buffers.tiles) {
          const std::string type = storage_type(t.storage), v = std::string("v").append(std::to_string(t.value)).append("_").append(std::to_string(i));
          s += "  " + type + "* const " + v + " = reinterpret_cast<" + type + "*>(prism_smem + " + std::to_string(t.slots[size_t(i)]) + ");\n";
          tile_names_[t.value] = v;
        }
      s += stage_all("  ", std::to_string(i)) + "  prism_copy_commit();\n";
    }
    tile_names_.clear();
    s += "  for (int f = 0; f < " + std::to_string(k.loop) + "; ++f) {\n";
    for (const BufferedTile& t : buffers.tiles) {
      const std::string type = storage_type(t.storage), v = std::string("v").append(std::to_string(t.value));
      s += "    " + type + "* const " + v + " = reinterpret_cast<" + type + "*>(prism_smem + " + slot(t, "f") + ");\n";
      s += "    " + type + "* const " + v + "_next = reinterpret_cast<" + type + "*>(prism_smem + " + slot(t, next) + ");\n";
      tile_names_[t.value] = std::string(v).append("_next");
    }
    s += "    if (" + next + " < " + std::to_string(k.loop) + ") {\n" + stage_all("      ", next) + "    }\n";
    tile_names_.clear();
    s += "    prism_copy_commit();\n    prism_copy_wait_prior<" + ahead + ">();\n    __syncthreads();\n";
    return s + phase(rest, "    ", "f") + "  }\n";
  }

  // A library kernel: a grid-stride loop over the result's elements (or a reduction's results).
  std::string library(const std::string& fn, CudaKernelInfo& info) {
    const std::string params = parameters(fn, info);
    ctx_.spread = Spread::Grid;
    const int64_t items = element_count(k_.library.out.shape);
    info.grid_blocks = std::clamp<int64_t>((items + ctx_.threads - 1) / ctx_.threads, 1, int64_t(1) << 20);
    info.shared_bytes = 0;
    return "extern \"C\" __global__ void " + launch_bounds() + " " + fn + "(" + params + ") {\n" +
           statement(k_.library, ctx_, "0") + "}\n";
  }

 private:
  // A pointer parameter per device tensor read, then per one written (a library kernel's per
  // operand, as it names them).
  std::string parameters(const std::string& fn, CudaKernelInfo& info) {
    info.name = fn;
    info.threads = options_.threads_per_block;
    std::string params;
    if (k_.custom) {
      for (const std::string& name : k_.reads) params += parameter(name, true, info);
      for (const std::string& name : k_.writes) params += parameter(name, false, info);
    } else {
      for (const kir::Place& in : k_.library.in) params += parameter(in.tensor, true, info);
      params += parameter(k_.library.out.tensor, false, info);
    }
    return params;
  }

  // The next pointer parameter, to device tensor `name` (const where the kernel only reads it),
  // after a comma unless it is the first; "" where the kernel has one to it already.
  std::string parameter(const std::string& name, bool read, CudaKernelInfo& info) {
    if (param_.count(name)) return "";
    std::string p = std::string("p").append(std::to_string(info.params.size()));
    param_[name] = p;
    info.params.push_back(name);
    return std::string(info.params.size() > 1 ? ", " : "") + (read ? "const " : "") + storage_type(p_.tensor(name).dtype) + "* __restrict__ " + p;
  }

  View view(const kir::Place& place, const std::string& f) const {
    if (place.kind != kir::Place::Kind::Tensor) {
      auto named = tile_names_.find(place.value);
      std::string name = named != tile_names_.end() ? named->second : std::string("v").append(std::to_string(place.value));
      return shifted(View{name, place.shape, place.strides}, place.start);
    }
    const std::string& p = param_.at(place.tensor);
    const std::string off = offset_text(place.offset, f, "LL");
    return shifted(View{off == "0" ? p : "(" + p + " + " + off + ")", place.shape, place.strides}, place.start);
  }

  // The storage type of a staged 16-bit tile read from its start, else "" (tensor cores need
  // their operands aligned as the tile is).
  std::string staged_16bit(const kir::Place& place) const {
    bool tile = false;
    const DType storage = tile_storage(place, tile);
    return tile && place.start == 0 && storage != DType::F32 ? storage_type(storage) : "";
  }

  // The storage of the tile a place reads (any part of it), else F32 with `tile` false.
  DType tile_storage(const kir::Place& place, bool& tile) const {
    tile = false;
    if (place.kind != kir::Place::Kind::Tile) return DType::F32;
    for (const kir::Tile& t : k_.block.tiles)
      if (t.value == place.value) return tile = true, t.storage;
    return DType::F32;
  }

  // The 16-bit type a matmul of these operands may run at on tensor cores through mma.sync
  // (tensor_core_storage; both operands tiles), else "".
  std::string mma_type(const kir::Stmt& s) const {
    bool tile_a = false, tile_b = false;
    const DType a = tile_storage(s.in[0], tile_a), b = tile_storage(s.in[1], tile_b);
    const DType type = tile_a && tile_b ? tensor_core_storage(a, b, all_16bit_) : DType::F32;
    return type == DType::F32 ? "" : storage_type(type);
  }

  // Tensor cores: a decode block's few rows against a staged 16-bit b through ldmatrix and mma.sync
  // with b's columns as the instruction's rows; else, both operands staged 16-bit tiles of one
  // type, WMMA where the sizes and alignment fit a shape; else through mma.sync where mma_type
  // allows; else the scalar path.
  std::string matmul(const kir::Stmt& s, const View& a, const View& b, const View& out, const EmitContext& ctx) {
    const bool add = s.into_accumulator;
    if (!options_.tensor_cores) return emit_matmul(a, b, out, ctx, add);
    bool tile = false;
    const MatmulOut to{tile_storage(s.out, tile) == DType::F32 && tile, add};  // a split k adds into an f32 tile
    const std::string ta = staged_16bit(s.in[0]), tb = staged_16bit(s.in[1]), type = mma_type(s);
    // The decode form reads a staged b (a weight) through ldmatrix, a through it too where staged
    // at b's type, else gathered and rounded where mma_type allows.
    // A batch of one (an attention block of one head) is the decode form's two dims.
    if (!tb.empty() && (ta == tb || type == tb))
      if (std::string code = emit_ldmatrix_mma(matrix_of(a), matrix_of(b), matrix_of(out), tb.c_str(), ctx, ta == tb, to); !code.empty())
        return code;
    if (!ta.empty() && tb == ta) {
      std::string code = emit_wmma_matmul(a, b, out, ta.c_str(), ctx, add);
      if (!code.empty()) {
        uses_tensor_cores_ = true;
        return code;
      }
    }
    if (!type.empty())
      if (std::string code = emit_mma_matmul(a, b, out, type.c_str(), ctx, to); !code.empty()) return code;
    return emit_matmul(a, b, out, ctx, add);
  }

  std::string statement(const kir::Stmt& s, const EmitContext& ctx, const std::string& f) { return walk_statement(*this, s, ctx, f); }

  // How each kind of statement prints (statement_walk.h walks them).
  static std::string same(const std::string& x) { return x; }
  std::string stage(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_tile_load(x, out, dtype_bytes(p_.tensor(s.in[0].tensor).dtype), ctx);
  }
  std::string save(const View& x, const View& out, const EmitContext& ctx) const { return emit_map(x, out, same, ctx); }
  [[noreturn]] std::string bound() const { fail("a load read in place (a block stages its loads in shared memory)"); }
  std::string unary(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_map(
        x, out, [&](const std::string& v) { return unary_expr(s.op, v); }, ctx);
  }
  std::string binary(const kir::Stmt& s, const View& a, const View& b, const View& out, const EmitContext& ctx) const {
    return emit_zip(
        a, b, out,
        [&](const std::string& x, const std::string& y) {
          // x - m with an m of -inf read as 0 (docs/sgraph.md, "Masked pieces").
          return s.finite_shift ? x + " - prism_finite_max(" + y + ")" : binary_expr(s.op, x, y);
        },
        ctx);
  }
  std::string constant(const kir::Stmt& s, const View& out, const EmitContext& ctx) const {
    return ctx.indent + "if (threadIdx.x == 0) " + out.ptr + "[0] = " + float_literal(s.constant) + ";\n";
  }
  // Disjoint parts: a concat's copies need no barrier between them.
  std::string concat(const kir::Stmt& s, const std::vector<View>& ins, const View& out, const EmitContext& ctx) const {
    std::string code;
    for (const auto& [from, to] : concat_moves(s.axis, ins, out)) code += emit_map(from, to, same, ctx);
    return code;
  }
  std::string reduce(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_reduce(s.op, s.axis, x, out, ctx);
  }
  std::string accumulate_sum(const View& x, const View& out, const EmitContext& ctx) const {
    return emit_zip(
        out, x, out, [](const std::string& a, const std::string& b) { return a + " + " + b; }, ctx);
  }
  std::string accumulate_max(const View& x, const View& out, const EmitContext& ctx) const {
    return emit_zip(
        out, x, out, [](const std::string& a, const std::string& b) { return "prism_max_into(" + a + ", " + b + ")"; }, ctx);
  }
  std::string accumulate_rms(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_square_sum_into(s.axis, x, out, ctx);
  }

  // Online softmax's accumulator (kernel_ir.h): the factors from the old running max, the max
  // updated, then out = out * keep + x * take; each step reads what the one before wrote.
  static std::string rescaled(const View& x, const View& m, const View& run, const View& keep, const View& take, const View& out,
                              const EmitContext& ctx) {
    auto call = [](const char* fn) {
      return [fn](const std::vector<std::string>& a) { return std::string(fn) + "(" + a[0] + ", " + a[1] + ")"; };
    };
    const std::string sync = ctx.indent + "__syncthreads();\n";
    return emit_zip_n({run, m}, keep, call("prism_rescale"), ctx) + emit_zip_n({m, run}, take, call("prism_rescale"), ctx) + sync +
           emit_zip_n({run, m}, run, call("prism_max_into"), ctx) +
           emit_zip_n({out, x, keep, take}, out, [](const std::vector<std::string>& a) { return a[0] + " * " + a[2] + " + " + a[1] + " * " + a[3]; }, ctx);
  }

  // Each statement, then a barrier. Consecutive loads (stagings of distinct tiles from device
  // memory) share one: their copies are in flight together, and end before the barrier.
  std::string phase(const std::vector<kir::Stmt>& stmts, const std::string& ind, const std::string& f) {
    std::string s;
    EmitContext ctx = ctx_;
    ctx.indent = ind + "  ";
    for (size_t i = 0; i < stmts.size(); ++i) {
      const kir::Stmt& st = stmts[i];
      const bool stage = st.kind == kir::Stmt::Kind::Stage;
      s += ind + "{  // " + st.label + "\n" + statement(st, ctx, f) + ind + "}\n";
      if (stage && i + 1 < stmts.size() && stmts[i + 1].kind == kir::Stmt::Kind::Stage) continue;
      if (stage) s += ind + "prism_copy_wait();\n";
      s += ind + "__syncthreads();\n";
    }
    return s;
  }

  const kir::Program& p_;
  const kir::Kernel& k_;
  const CudaCodegenOptions& options_;
  std::map<std::string, std::string> param_;  // device tensor -> parameter name
  std::map<int, std::string> tile_names_;     // a tile written under another name (the next iteration's slot)
  EmitContext ctx_;
  bool uses_tensor_cores_ = false;
  bool all_16bit_ = false;  // every input and output of the program stored at 16 bits
};

}  // namespace

std::string kernel_name(size_t k) { return "prism_kernel_" + std::to_string(k); }

bool tensor_core_shape(int64_t m, int64_t n, int64_t k) { return wmma_fits(m, n, k); }
bool decode_tensor_core_shape(int64_t m, int64_t n, int64_t k) { return ldmatrix_mma_fits(m, n, k); }

DType tensor_core_storage(DType a, DType b, bool all_16bit) {
  if (a != DType::F32 && b != DType::F32) return a == b ? a : DType::F32;
  if (a == DType::F32 && b == DType::F32) return DType::F32;
  return all_16bit ? (a == DType::F32 ? b : a) : DType::F32;
}

kir::Program printed_program(const kir::Program& lowered, const CudaCodegenOptions& options) {
  return options.pad_rows ? pad_tile_rows(lowered, options.shared_memory_bytes, options.pipeline_stages) : lowered;
}

CudaSource generate_cuda_source(const kir::Program& lowered, const CudaCodegenOptions& options) {
  if (options.threads_per_block < 32 || options.threads_per_block > 1024 || options.threads_per_block % 32 != 0)
    fail("threads_per_block must be a multiple of 32 from 32 to 1024, not " + std::to_string(options.threads_per_block));
  const kir::Program program = printed_program(lowered, options);
  CudaSource out;
  std::string kernels;
  bool tensor_cores = false;
  const std::set<std::string> returned(program.outputs.begin(), program.outputs.end());
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const kir::Kernel& kernel = program.kernels[k];
    CudaKernelInfo info;
    KernelPrinter printer(program, kernel, options);
    const std::string fn = kernel_name(k);
    kernels += "\n";
    const std::optional<TicketGroups> groups = kernel.custom && options.tails_in_launch ? ticket_groups(program, k) : std::nullopt;
    const bool waits = !groups && kernel.custom && options.tails_in_launch && waits_in_launch(program, k);
    if (groups) {
      KernelPrinter tail(program, program.kernels[k + 1], options);
      const std::string counters = fn + "_tickets";
      kernels += printer.with_tail(fn, info, tail, *groups, counters);
      out.counters.emplace_back(counters, groups->groups());
    } else if (waits) {
      KernelPrinter tail(program, program.kernels[k + 1], options);
      const std::string counters = fn + "_arrivals";
      kernels += printer.with_waiting_tail(fn, info, tail, counters);
      out.counters.emplace_back(counters, 2);
    } else {
      kernels += kernel.custom ? printer.custom(fn, info) : printer.library(fn, info);
    }
    tensor_cores = tensor_cores || printer.uses_tensor_cores();
    const size_t last = groups || waits ? k + 1 : k;  // the lowering's kernels this launch runs
    for (size_t j = k; j <= last; ++j) {
      out.launch_of.push_back(out.kernels.size());
      for (const std::string& t : program.kernels[j].writes)
        if (!returned.count(t)) out.scratch_tensors.push_back(t);
    }
    out.kernels.push_back(std::move(info));
    k = last;
  }
  out.source = prelude() + (tensor_cores ? "#include <mma.h>\n" : "") + kernels;
  return out;
}

CudaSource generate_cuda_source(const sgraph::Instance& instance, const CudaCodegenOptions& options) {
  return generate_cuda_source(lower(instance, cuda_lowering()), options);
}

}  // namespace prism::backend::cuda
