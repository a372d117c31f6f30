#include "engine/backend/cuda/codegen.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/backend/cuda/emit_library.h"
#include "engine/backend/cuda/emit_ops.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cuda {

using namespace detail;
using sgraph::BlockOp;

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error(Error::Kind::InvalidArgument, "cuda codegen: " + what); }

std::string ll(int64_t v) { return std::to_string(v) + "LL"; }

// The statements of one custom kernel.
class CustomEmitter {
 public:
  CustomEmitter(const sgraph::CustomKernel& k, const std::vector<sgraph::TileInfo>& tiles, const DimBindings& b, const DeviceTensors& t,
                const CudaCodegenOptions& o)
      : k_(k), tiles_(tiles), tensors_(t), options_(o), n_(k.ops.size()), views_(n_) {
    for (const Dim& g : k.grid) grid_.push_back(g.evaluate_size(b));
    loop_ = k.loop_range().evaluate_size(b);
    for (size_t i = 0; i < n_; ++i) {
      if (!tiles[i].type) fail("op " + std::to_string(i) + " '" + k.ops[i].name + "' has no known tile type");
      shape_.push_back(concrete_shape(tiles[i].type->shape, b));
    }
    ctx_.threads = o.threads_per_block;
  }

  std::string emit(const std::string& fn, const sgraph::Kernel& kernel, CudaKernelInfo& info) {
    info.name = fn;
    info.threads = options_.threads_per_block;
    info.grid_blocks = element_count(grid_);
    if (info.grid_blocks > INT32_MAX) fail(fn + ": a grid of " + std::to_string(info.grid_blocks) + " blocks is too large");
    std::string params = parameters(kernel, info);
    // Shared memory: one slot per tile (kSharedSlotAlign: wmma pointers need 32 bytes), loads at
    // their storage type.
    std::string decls;
    int64_t shared = 0;
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind == BlockOp::Kind::Save) continue;
      bool load = op.kind == BlockOp::Kind::Load;
      DType dt = load ? tensors_.dtype(op.tensor) : DType::F32;
      std::string type = storage_type(dt), v = std::string("v").append(std::to_string(i));
      decls += "  " + type + "* const " + v + " = reinterpret_cast<" + type + "*>(prism_smem + " + std::to_string(shared) + ");  // " +
               op.name + "\n";
      shared += (element_count(shape_[i]) * storage_bytes(dt) + kSharedSlotAlign - 1) / kSharedSlotAlign * kSharedSlotAlign;
      views_[i] = dense_view(v, shape_[i]);
    }
    if (shared > options_.shared_memory_bytes)
      fail(fn + ": its tiles need " + std::to_string(shared) + " bytes of shared memory, more than the " +
           std::to_string(options_.shared_memory_bytes) + " a block may use");
    info.shared_bytes = shared;

    const std::string t = std::to_string(options_.threads_per_block);
    std::string s = "extern \"C\" __global__ void __launch_bounds__(" + t + ") " + fn + "(" + params + ") {\n";
    s += "  extern __shared__ __align__(128) unsigned char prism_smem[];\n";
    s += "  const long long blk = blockIdx.x;\n";
    int64_t inner = 1;
    for (size_t gi = grid_.size(); gi-- > 0;) {
      s += "  const int b" + std::to_string(gi) + " = int(blk / " + ll(inner) + " % " + ll(grid_[gi]) + ");\n";
      inner *= grid_[gi];
    }
    s += decls;
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Accumulate) continue;
      std::string init = op.acc == sgraph::AccKind::Max ? "prism_neg_inf()" : "0.0f";
      s += "  for (int e = threadIdx.x; e < " + std::to_string(element_count(shape_[i])) + "; e += " + t + ") v" + std::to_string(i) +
           "[e] = " + init + ";  // " + op.name + "\n";
    }
    s += "  __syncthreads();\n";
    s += phase(Phase::Before, "  ", "0");
    s += "  for (int f = 0; f < " + std::to_string(loop_) + "; ++f) {\n" + phase(Phase::Body, "    ", "f") + "  }\n";
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Accumulate || op.acc != sgraph::AccKind::Rms) continue;
      int64_t count = shape_[size_t(op.operands[0])][size_t(rms_axis(i))] * loop_;
      std::string v = std::string("v").append(std::to_string(i));
      s += "  for (int e = threadIdx.x; e < " + std::to_string(element_count(shape_[i])) + "; e += " + t + ") " + v + "[e] = sqrtf(" + v +
           "[e] / " + std::to_string(count) + ".0f);  // " + op.name + "\n";
    }
    s += "  __syncthreads();\n";
    s += phase(Phase::After, "  ", "0");
    return s + "}\n";
  }

  // Whether a matmul of the kernel took the tensor-core path (the source needs <mma.h>).
  bool uses_tensor_cores() const { return uses_tensor_cores_; }

 private:
  enum class Phase { Before, Body, After };

  std::string parameters(const sgraph::Kernel& kernel, CudaKernelInfo& info) {
    std::string params;
    auto add = [&](const std::string& name, bool in) {
      std::string p = std::string("p").append(std::to_string(param_.size()));
      param_[name] = p;
      info.params.push_back(name);
      if (!params.empty()) params += ", ";
      params += std::string(in ? "const " : "") + storage_type(tensors_.dtype(name)) + "* __restrict__ " + p;
    };
    for (const std::string& name : sgraph::kernel_inputs(kernel)) add(name, true);
    for (const std::string& name : sgraph::kernel_outputs(kernel)) add(name, false);
    return params;
  }

  Phase phase_of(size_t i) const {
    if (k_.ops[i].kind == BlockOp::Kind::Accumulate) return Phase::Body;
    sgraph::LoopRole r = tiles_[i].role;
    if (r == sgraph::LoopRole::Unknown) fail("op '" + k_.ops[i].name + "' has an unknown loop role");
    return r == sgraph::LoopRole::Invariant ? Phase::Before : r == sgraph::LoopRole::After ? Phase::After : Phase::Body;
  }

  int rms_axis(size_t i) const {
    int rank = int(shape_[size_t(k_.ops[i].operands[0])].size());
    int axis = k_.ops[i].attrs.axis;
    return axis < 0 ? axis + rank : axis;
  }

  std::string tile_offset(const sgraph::Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& strides, size_t first,
                          const std::string& f) const {
    return backend::tile_offset(map, tile, strides, first, f, loop_, "LL");
  }

  View load_source(size_t i, const std::string& f) const {
    const BlockOp& op = k_.ops[i];
    auto strides = dense_strides(tensors_.shape(op.tensor));
    if (strides.size() != shape_[i].size()) fail("load '" + op.name + "': tile rank differs from " + op.tensor + "'s");
    return View{"(" + param_.at(op.tensor) + " + " + tile_offset(op.map, shape_[i], strides, 0, f) + ")", shape_[i], strides};
  }

  // Where a save writes: partial axes (grid dims its map does not place) first, then the tile.
  View save_target(size_t i, const std::string& f) const {
    const BlockOp& op = k_.ops[i];
    const auto& whole = tensors_.shape(op.name);
    auto strides = dense_strides(whole);
    const auto& tile = shape_[size_t(op.operands[0])];
    if (whole.size() < tile.size()) fail("save '" + op.name + "': its tensor has a lower rank than the tile");
    size_t parts = whole.size() - tile.size();
    std::string off;
    size_t p = 0;
    for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
      if (op.map.grid[gi].is_none()) {
        if (p >= parts) fail("save '" + op.name + "': more partial axes than its tensor has");
        off += std::string("b").append(std::to_string(gi)) + " * " + ll(strides[p++]) + " + ";
      }
    if (p != parts) fail("save '" + op.name + "': partial axes do not match its tensor");
    off += tile_offset(op.map, tile, strides, parts, f);
    return View{"(" + param_.at(op.name) + " + " + off + ")", tile, std::vector<int64_t>(strides.begin() + long(parts), strides.end())};
  }

  std::string phase(Phase p, const std::string& ind, const std::string& f) {
    std::string s;
    EmitContext ctx = ctx_;
    ctx.indent = ind + "  ";
    for (size_t i = 0; i < n_; ++i) {
      if (phase_of(i) != p) continue;
      const BlockOp& op = k_.ops[i];
      s += ind + "{  // " + op_text(op) + "\n";
      switch (op.kind) {
        case BlockOp::Kind::Load: s += emit_tile_load(load_source(i, f), views_[i], storage_bytes(tensors_.dtype(op.tensor)), ctx); break;
        case BlockOp::Kind::Compute: s += compute(i, ctx); break;
        case BlockOp::Kind::Accumulate: s += accumulate(i, ctx); break;
        case BlockOp::Kind::Save:
          s += emit_map(views_[size_t(op.operands[0])], save_target(i, f), [](const std::string& x) { return x; }, ctx);
          break;
      }
      s += ind + "}\n" + ind + "__syncthreads();\n";
    }
    return s;
  }

  std::string op_text(const BlockOp& op) const {
    switch (op.kind) {
      case BlockOp::Kind::Load: return op.name + " = load " + op.tensor;
      case BlockOp::Kind::Compute: return op.name + " = " + op_name(op.op);
      case BlockOp::Kind::Accumulate: return op.name + " = " + sgraph::acc_name(op.acc);
      case BlockOp::Kind::Save: return "save " + op.name;
    }
    return op.name;
  }

  std::string compute(size_t i, const EmitContext& ctx) {
    const BlockOp& op = k_.ops[i];
    const View& out = views_[i];
    auto arg = [&](size_t k) -> const View& { return views_[size_t(op.operands.at(k))]; };
    switch (op_class(op.op)) {
      case OpClass::Unary: {
        unary_expr(op.op, "");  // throws for an op it cannot lower
        return emit_map(arg(0), out, [&](const std::string& x) { return unary_expr(op.op, x); }, ctx);
      }
      case OpClass::Binary: {
        binary_expr(op.op, "", "");
        return emit_zip(arg(0), arg(1), out, [&](const std::string& a, const std::string& b) { return binary_expr(op.op, a, b); }, ctx);
      }
      case OpClass::Matmul: return matmul(i, ctx);
      case OpClass::Reduce: {
        int rank = int(arg(0).shape.size());
        int axis = op.attrs.axis < 0 ? op.attrs.axis + rank : op.attrs.axis;
        if (axis < 0 || axis >= rank) fail("op '" + op.name + "': axis out of range");
        return emit_reduce(op.op, axis, arg(0), out, ctx);
      }
      default: fail("op '" + op.name + "': cannot lower '" + op_name(op.op) + "' in a block");
    }
  }

  // The storage type of op i's tile when it is a load of a 16-bit tensor, else "".
  std::string staged_16bit(size_t i) const {
    const BlockOp& op = k_.ops[i];
    if (op.kind != BlockOp::Kind::Load) return "";
    DType dt = tensors_.dtype(op.tensor);
    return dt == DType::F32 ? "" : storage_type(dt);
  }

  // Tensor cores when both operands are staged 16-bit tiles of one type and the sizes and
  // alignment fit a WMMA shape; else a thread per output element.
  std::string matmul(size_t i, const EmitContext& ctx) {
    const BlockOp& op = k_.ops[i];
    size_t a = size_t(op.operands.at(0)), b = size_t(op.operands.at(1));
    const std::string ta = staged_16bit(a);
    if (options_.tensor_cores && !ta.empty() && staged_16bit(b) == ta) {
      std::string s = emit_wmma_matmul(views_[a], views_[b], views_[i], ta.c_str(), ctx);
      if (!s.empty()) {
        uses_tensor_cores_ = true;
        return s;
      }
    }
    return emit_matmul(views_[a], views_[b], views_[i], ctx);
  }

  std::string accumulate(size_t i, const EmitContext& ctx) {
    const BlockOp& op = k_.ops[i];
    const View& acc = views_[i];
    const View& x = views_[size_t(op.operands[0])];
    switch (op.acc) {
      case sgraph::AccKind::Sum: return emit_zip(acc, x, acc, [](const std::string& a, const std::string& b) { return a + " + " + b; }, ctx);
      case sgraph::AccKind::Max:
        return emit_zip(acc, x, acc, [](const std::string& a, const std::string& b) { return "prism_max_into(" + a + ", " + b + ")"; }, ctx);
      case sgraph::AccKind::Rms: return emit_square_sum_into(rms_axis(i), x, acc, ctx);
    }
    return "";
  }

  const sgraph::CustomKernel& k_;
  const std::vector<sgraph::TileInfo>& tiles_;
  const DeviceTensors& tensors_;
  const CudaCodegenOptions& options_;
  size_t n_;
  std::vector<int64_t> grid_;
  int64_t loop_ = 1;
  std::vector<std::vector<int64_t>> shape_;
  std::vector<View> views_;
  std::map<std::string, std::string> param_;  // device tensor -> parameter name
  EmitContext ctx_;
  bool uses_tensor_cores_ = false;
};

}  // namespace

bool tensor_core_shape(int64_t m, int64_t n, int64_t k) { return wmma_fits(m, n, k); }

CudaSource generate_cuda_source(const sgraph::Instance& inst, const CudaCodegenOptions& options) {
  const sgraph::SGraph& g = inst.graph;
  if (!g.is_concrete()) fail("the graph has open map choices");
  if (!inst.analysis.ok()) fail("the graph is not valid: " + inst.analysis.errors.front());
  if (options.threads_per_block < 32 || options.threads_per_block > 1024 || options.threads_per_block % 32 != 0)
    fail("threads_per_block must be a multiple of 32 from 32 to 1024, not " + std::to_string(options.threads_per_block));
  DeviceTensors tensors;
  for (const auto& [name, type] : inst.analysis.tensors) tensors.add(name, concrete_shape(type.shape, inst.bindings), type.dtype);
  for (const sgraph::TensorDecl& in : g.inputs) tensors.add(in.name, concrete_shape(in.type.shape, inst.bindings), in.type.dtype);

  CudaSource out;
  std::string kernels;
  bool tensor_cores = false;
  std::set<std::string> returned(g.outputs.begin(), g.outputs.end());
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const sgraph::Kernel& kernel = g.kernels[k];
    CudaKernelInfo info;
    std::string fn = "prism_kernel_" + std::to_string(k);
    kernels += "\n";
    if (kernel.custom) {
      CustomEmitter emitter(kernel.block, inst.analysis.tiles[k], inst.bindings, tensors, options);
      kernels += emitter.emit(fn, kernel, info);
      tensor_cores = tensor_cores || emitter.uses_tensor_cores();
    } else {
      kernels += emit_library_kernel(kernel.library, tensors, fn, options.threads_per_block, info);
    }
    out.kernels.push_back(std::move(info));
    for (const std::string& t : sgraph::kernel_outputs(kernel))
      if (!returned.count(t)) out.scratch_tensors.push_back(t);
  }
  out.source = prelude() + (tensor_cores ? "#include <mma.h>\n" : "") + kernels;
  return out;
}

}  // namespace prism::backend::cuda
