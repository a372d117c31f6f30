#include "engine/backend/cpu/codegen.h"

#include <map>
#include <set>

#include "engine/backend/cpu/emit_library.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cpu {

using namespace detail;
using sgraph::BlockOp;

namespace {

std::string num(int64_t v) { return std::to_string(v) + "L"; }

[[noreturn]] void fail(const std::string& what) { throw Error(Error::Kind::InvalidArgument, "codegen: " + what); }

// The graph's device tensors: index (T[index] in the source), concrete shape.
struct Tensors {
  std::map<std::string, int> index;
  std::vector<std::vector<int64_t>> shape;
  std::vector<std::string> name;

  int add(const std::string& n, std::vector<int64_t> s) {
    auto it = index.find(n);
    if (it != index.end()) return it->second;
    index[n] = int(name.size());
    name.push_back(n);
    shape.push_back(std::move(s));
    return int(name.size()) - 1;
  }
  int at(const std::string& n) const {
    auto it = index.find(n);
    if (it == index.end()) fail("unknown device tensor '" + n + "'");
    return it->second;
  }
  std::string var(int i) const { return std::string("t").append(std::to_string(i)); }
};

// The statements of one custom kernel's function.
class CustomEmitter {
 public:
  CustomEmitter(const sgraph::CustomKernel& k, const std::vector<sgraph::TileInfo>& tiles, const DimBindings& b, const Tensors& t,
                const CodegenOptions& o)
      : k_(k), tiles_(tiles), tensors_(t), options_(o), n_(k.ops.size()), views_(n_), uses_(n_), folded_(n_, false), direct_(n_, -1) {
    for (const Dim& g : k.grid) grid_.push_back(g.evaluate_size(b));
    loop_ = k.loop_range().evaluate_size(b);
    for (size_t i = 0; i < n_; ++i) {
      if (!tiles[i].type) fail("op " + std::to_string(i) + " '" + k.ops[i].name + "' has no known tile type");
      shape_.push_back(concrete_shape(tiles[i].type->shape, b));
      for (int o : k.ops[i].operands) uses_[size_t(o)].push_back(i);
    }
    plan_storage();
    for (size_t i = 0; i < n_; ++i)
      if (k.ops[i].kind == BlockOp::Kind::Accumulate) views_[i] = acc_view(i);
  }

  std::string emit(const std::string& fn) {
    std::string s = "static void " + fn + "(int threads) {\n";
    std::set<int> used;
    for (const BlockOp& op : k_.ops)
      if (op.kind == BlockOp::Kind::Load || op.kind == BlockOp::Kind::Save) used.insert(tensors_.at(op.kind == BlockOp::Kind::Load ? op.tensor : op.name));
    for (int t : used) s += "  float* __restrict " + tensors_.var(t) + " = T[" + std::to_string(t) + "];\n";
    int64_t blocks = element_count(grid_);
    s += "#pragma omp parallel for num_threads(threads) schedule(static)\n";
    s += "  for (long blk = 0; blk < " + num(blocks) + "; ++blk) {\n";
    int64_t inner = 1;
    for (size_t gi = grid_.size(); gi-- > 0;) {
      s += "    const long b" + std::to_string(gi) + " = blk / " + num(inner) + " % " + num(grid_[gi]) + ";\n";
      inner *= grid_[gi];
    }
    if (scratch_ > 0) {
      s += "    float* const S = prism_scratch(" + std::to_string(scratch_) + ");\n";
      s += "    if (!S) { prism_failed = 1; continue; }\n";
    }
    for (size_t i = 0; i < n_; ++i)
      if (offset_.count(i)) s += "    float* const v" + std::to_string(i) + " = S + " + std::to_string(offset_[i]) + ";\n";
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Accumulate) continue;
      std::string init = op.acc == sgraph::AccKind::Max ? "-__builtin_inff()" : "0.0f";
      s += "    for (long e = 0; e < " + num(element_count(shape_[i])) + "; ++e) v" + std::to_string(i) + "[e] = " + init + ";\n";
    }
    s += phase(Phase::Before, "    ", "0");
    if (loop_ > 1) {
      s += "    for (long f = 0; f < " + num(loop_) + "; ++f) {\n" + phase(Phase::Body, "      ", "f") + "    }\n";
    } else {
      s += "    {\n" + phase(Phase::Body, "      ", "0") + "    }\n";
    }
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Accumulate || op.acc != sgraph::AccKind::Rms) continue;
      int64_t count = shape_[size_t(op.operands[0])][size_t(rms_axis(i))] * loop_;
      s += "    for (long e = 0; e < " + num(element_count(shape_[i])) + "; ++e) v" + std::to_string(i) + "[e] = __builtin_sqrtf(v" +
           std::to_string(i) + "[e] / float(" + std::to_string(count) + "));\n";
    }
    s += phase(Phase::After, "    ", "0");
    return s + "  }\n}\n";
  }

 private:
  enum class Phase { Before, Body, After };

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

  // Where each computed value lives: a matmul whose only use is a sum accumulator accumulates
  // into it; a compute op whose only use is a save in the same phase writes into the saved
  // tensor; everything else computed gets a dense tile in the scratch buffer.
  void plan_storage() {
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind == BlockOp::Kind::Accumulate) {
        allocate(i);
        continue;
      }
      if (op.kind != BlockOp::Kind::Compute || uses_[i].size() != 1) continue;
      size_t u = uses_[i][0];
      const BlockOp& user = k_.ops[u];
      if (op.op == Op::Matmul && user.kind == BlockOp::Kind::Accumulate && user.acc == sgraph::AccKind::Sum && phase_of(i) == Phase::Body &&
          shape_[u] == shape_[i]) {
        folded_[u] = true;
        direct_[i] = int(u);
      } else if (user.kind == BlockOp::Kind::Save && phase_of(u) == phase_of(i)) {
        folded_[u] = true;
        direct_[i] = int(u);
      }
    }
    for (size_t i = 0; i < n_; ++i)
      if (k_.ops[i].kind == BlockOp::Kind::Compute && direct_[i] < 0) allocate(i);
  }

  void allocate(size_t i) {
    offset_[i] = scratch_;
    scratch_ += (element_count(shape_[i]) + 15) / 16 * 16;  // 64-byte aligned tiles
  }

  std::string tile_offset(const sgraph::Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& strides, size_t first,
                          const std::string& f) const {
    return backend::tile_offset(map, tile, strides, first, f, loop_, "L");
  }

  View load_view(size_t i, const std::string& f) const {
    const BlockOp& op = k_.ops[i];
    int t = tensors_.at(op.tensor);
    auto strides = dense_strides(tensors_.shape[size_t(t)]);
    if (strides.size() != shape_[i].size()) fail("load '" + op.name + "': tile rank differs from " + op.tensor + "'s");
    return View{"(" + tensors_.var(t) + " + " + tile_offset(op.map, shape_[i], strides, 0, f) + ")", shape_[i], strides};
  }

  // Where a save writes: partial axes (grid dims its map does not place) first, then the tile.
  View save_view(size_t i, const std::string& f) const {
    const BlockOp& op = k_.ops[i];
    int t = tensors_.at(op.name);
    const auto& whole = tensors_.shape[size_t(t)];
    auto strides = dense_strides(whole);
    const auto& tile = shape_[size_t(op.operands[0])];
    size_t parts = whole.size() - tile.size();
    std::string off;
    size_t p = 0;
    for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
      if (op.map.grid[gi].is_none()) {
        if (p >= parts) fail("save '" + op.name + "': more partial axes than its tensor has");
        off += "b" + std::to_string(gi) + " * " + num(strides[p++]) + " + ";
      }
    if (p != parts) fail("save '" + op.name + "': partial axes do not match its tensor");
    off += tile_offset(op.map, tile, strides, parts, f);
    return View{"(" + tensors_.var(t) + " + " + off + ")", tile, std::vector<int64_t>(strides.begin() + long(parts), strides.end())};
  }

  // What each matmul of the loop body prefetches after its last strip of B: the B of the next
  // matmul, and for the last one the first one's B in the next iteration. Only for B tiles loaded
  // straight from a tensor; one matmul keeps the default (the rows after its own B).
  std::map<size_t, std::string> matmul_prefetches(const std::string& f) const {
    std::vector<size_t> loaded_b;  // body matmuls whose B is a load
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (phase_of(i) != Phase::Body || op.kind != BlockOp::Kind::Compute || op.op != Op::Matmul || op.operands.size() != 2) continue;
      if (k_.ops[size_t(op.operands[1])].kind == BlockOp::Kind::Load) loaded_b.push_back(i);
    }
    std::map<size_t, std::string> after;
    if (loaded_b.size() < 2) return after;
    auto b_of = [&](size_t i, const std::string& at) { return load_view(size_t(k_.ops[i].operands[1]), at).ptr; };
    for (size_t j = 0; j + 1 < loaded_b.size(); ++j) after[loaded_b[j]] = b_of(loaded_b[j + 1], f);
    after[loaded_b.back()] = b_of(loaded_b.front(), "(" + f + " + 1 < " + num(loop_) + " ? " + f + " + 1 : " + f + ")");
    return after;
  }

  std::string phase(Phase p, const std::string& ind, const std::string& f) {
    std::string s;
    EmitContext ctx;
    ctx.indent = ind + "  ";
    ctx.simd_bytes = options_.simd_bytes;
    const std::map<size_t, std::string> prefetch = p == Phase::Body ? matmul_prefetches(f) : std::map<size_t, std::string>{};
    for (size_t i = 0; i < n_; ++i) {
      if (phase_of(i) != p || folded_[i]) continue;
      auto next = prefetch.find(i);
      ctx.prefetch_after = next == prefetch.end() ? "" : next->second;
      const BlockOp& op = k_.ops[i];
      std::string v = "v" + std::to_string(i);
      if (op.kind == BlockOp::Kind::Load) {  // a declaration, visible to the later phases
        View lv = load_view(i, f);
        s += ind + "const float* const " + v + " = " + lv.ptr + ";  // " + op.name + " = load " + op.tensor + "\n";
        views_[i] = View{v, lv.shape, lv.strides};
        continue;
      }
      s += ind + "{  // " + op.name + "\n";
      switch (op.kind) {
        case BlockOp::Kind::Load: break;
        case BlockOp::Kind::Compute: s += compute(i, ctx, f); break;
        case BlockOp::Kind::Accumulate: s += accumulate(i, ctx); break;
        case BlockOp::Kind::Save: s += emit_copy(views_[size_t(op.operands[0])], save_view(i, f), ctx); break;
      }
      s += ind + "}\n";
    }
    return s;
  }

  View acc_view(size_t i) const { return dense_view("v" + std::to_string(i), shape_[i]); }

  std::string compute(size_t i, const EmitContext& ctx, const std::string& f) {
    const BlockOp& op = k_.ops[i];
    bool into_acc = false;
    View out;
    if (direct_[i] >= 0 && k_.ops[size_t(direct_[i])].kind == BlockOp::Kind::Accumulate) {
      out = acc_view(size_t(direct_[i]));
      into_acc = true;
    } else if (direct_[i] >= 0) {
      out = save_view(size_t(direct_[i]), f);
    } else {
      out = dense_view("v" + std::to_string(i), shape_[i]);
    }
    views_[i] = out;
    auto arg = [&](size_t k) -> const View& { return views_[size_t(op.operands.at(k))]; };
    switch (op_class(op.op)) {
      case OpClass::Unary: return emit_unary(op.op, arg(0), out, ctx);
      case OpClass::Binary: return emit_binary(op.op, arg(0), arg(1), out, ctx);
      case OpClass::Matmul: return emit_matmul(arg(0), arg(1), out, into_acc, ctx);
      case OpClass::Reduce: {
        int rank = int(arg(0).shape.size());
        int axis = op.attrs.axis < 0 ? op.attrs.axis + rank : op.attrs.axis;
        if (axis < 0 || axis >= rank) fail("op '" + op.name + "': axis out of range");
        return emit_reduce(op.op, axis, arg(0), out, ctx);
      }
      default: fail("op '" + op.name + "': cannot lower '" + op_name(op.op) + "' in a block");
    }
  }

  std::string accumulate(size_t i, const EmitContext& ctx) {
    const BlockOp& op = k_.ops[i];
    View acc = acc_view(i);
    views_[i] = acc;
    const View& x = views_[size_t(op.operands[0])];
    switch (op.acc) {
      case sgraph::AccKind::Sum: return emit_binary(Op::Add, acc, x, acc, ctx);
      case sgraph::AccKind::Max:
        return emit_zip(acc, x, acc, [](const std::string& a, const std::string& b) { return "prism_max_into(" + a + ", " + b + ")"; }, ctx);
      case sgraph::AccKind::Rms: return emit_square_sum_into(rms_axis(i), x, acc, ctx);
    }
    return "";
  }

  const sgraph::CustomKernel& k_;
  const std::vector<sgraph::TileInfo>& tiles_;
  const Tensors& tensors_;
  const CodegenOptions& options_;
  size_t n_;
  std::vector<int64_t> grid_;
  int64_t loop_ = 1;
  std::vector<std::vector<int64_t>> shape_;
  std::vector<View> views_;
  std::vector<std::vector<size_t>> uses_;
  std::vector<bool> folded_;  // an accumulator or save done by the op that computes its operand
  std::vector<int> direct_;   // the accumulator or save a compute op writes into, or -1
  std::map<size_t, int64_t> offset_;
  int64_t scratch_ = 0;
};

std::string library_function(const sgraph::LibraryKernel& lib, const Tensors& t, const std::string& fn, int simd_bytes) {
  std::vector<View> ins;
  std::string s = "static void " + fn + "(int threads) {\n";
  std::set<int> used;
  for (const std::string& in : lib.inputs) {
    int i = t.at(in);
    used.insert(i);
    ins.push_back(dense_view(t.var(i), t.shape[size_t(i)]));
  }
  int o = t.at(lib.output);
  used.insert(o);
  for (int u : used) s += "  float* __restrict " + t.var(u) + " = T[" + std::to_string(u) + "];\n";
  s += "  (void)threads;\n";
  s += emit_library_kernel(lib, ins, dense_view(t.var(o), t.shape[size_t(o)]), simd_bytes);
  return s + "}\n";
}

}  // namespace

std::string generate_cpu_source(const sgraph::Instance& inst, const CodegenOptions& options) {
  const sgraph::SGraph& g = inst.graph;
  if (!g.is_concrete()) fail("the graph has open map choices");
  if (!inst.analysis.ok()) fail("the graph is not valid: " + inst.analysis.errors.front());
  Tensors t;
  auto type_shape = [&](const std::string& name) {
    auto it = inst.analysis.tensors.find(name);
    if (it == inst.analysis.tensors.end()) fail("no type for device tensor '" + name + "'");
    return concrete_shape(it->second.shape, inst.bindings);
  };
  for (const sgraph::TensorDecl& in : g.inputs) t.add(in.name, concrete_shape(in.type.shape, inst.bindings));
  size_t num_inputs = g.inputs.size();
  for (const sgraph::Kernel& k : g.kernels)
    for (const std::string& out : sgraph::kernel_outputs(k)) t.add(out, type_shape(out));

  std::string s = prelude(options.simd_bytes);
  s += "\nstatic float* T[" + std::to_string(std::max<size_t>(1, t.name.size())) + "];  // device tensors\n";
  s += "static int prism_failed = 0;\nstatic const char* prism_message = \"\";\n\n";
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const sgraph::Kernel& kernel = g.kernels[k];
    std::string fn = "kernel_" + std::to_string(k);
    if (kernel.custom)
      s += CustomEmitter(kernel.block, inst.analysis.tiles[k], inst.bindings, t, options).emit(fn);
    else
      s += library_function(kernel.library, t, fn, options.simd_bytes);
    s += "\n";
  }

  // The entry: inputs and outputs are the caller's; every other device tensor is a static buffer.
  std::map<std::string, size_t> output_slot;
  for (size_t o = 0; o < g.outputs.size(); ++o) output_slot.emplace(g.outputs[o], o);
  s += "extern \"C\" int prism_entry(const float* const* inputs, float* const* outputs, int threads) {\n";
  s += "  if (threads < 1) threads = 1;\n  prism_failed = 0;\n";
  for (size_t i = 0; i < t.name.size(); ++i) {
    std::string ti = "T[" + std::to_string(i) + "]", comment = "  // " + t.name[i] + "\n";
    auto slot = output_slot.find(t.name[i]);
    if (i < num_inputs) {
      s += "  " + ti + " = const_cast<float*>(inputs[" + std::to_string(i) + "]);" + comment;
    } else if (slot != output_slot.end()) {
      s += "  " + ti + " = outputs[" + std::to_string(slot->second) + "];" + comment;
    } else {
      s += "  {\n    static float* buffer = nullptr;\n";
      s += "    if (!buffer) buffer = static_cast<float*>(aligned_alloc(64, " +
           std::to_string((element_count(t.shape[i]) * 4 + 63) / 64 * 64) + "));\n";
      s += "    if (!buffer) { prism_message = \"out of memory for a device tensor\"; return 1; }\n";
      s += "    " + ti + " = buffer;" + comment + "  }\n";
    }
  }
  for (size_t k = 0; k < g.kernels.size(); ++k) s += "  kernel_" + std::to_string(k) + "(threads);\n";
  // An output that is an input, or returned twice, is copied into its slot.
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    int i = t.at(g.outputs[o]);
    if (size_t(i) < num_inputs || output_slot.at(g.outputs[o]) != o)
      s += "  memcpy(outputs[" + std::to_string(o) + "], T[" + std::to_string(i) + "], " + std::to_string(element_count(t.shape[size_t(i)]) * 4) +
           ");\n";
  }
  s += "  if (prism_failed) { prism_message = \"out of memory for a block's scratch\"; return 1; }\n";
  s += "  return 0;\n}\n\nextern \"C\" const char* prism_error(void) { return prism_message; }\n";
  return s;
}

}  // namespace prism::backend::cpu
