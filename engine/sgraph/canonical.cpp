#include "engine/sgraph/canonical.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/ir/print.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/validate.h"

namespace prism::sgraph {


namespace {

std::string hex(uint64_t h) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[size_t(i)] = digits[h & 15];
  return s;
}

std::string choice_key(const Choice& c) { return c.symbolic() ? "?" : std::to_string(c.dim); }

std::string map_key(const Map& m) {
  std::string s = "{";
  for (const Choice& c : m.grid) s += choice_key(c) + ",";
  return s + "loop:" + choice_key(m.loop) + "}";
}

std::string attrs_key(const Attrs& a) {
  std::string s = "axis=" + std::to_string(a.axis) + (a.keepdims ? "" : ",drop");
  if (a.parts > 0) s.append(",part=").append(std::to_string(a.index)).append("/").append(std::to_string(a.parts));
  if (!a.shape.empty()) s.append(",shape=").append(shape_str(a.shape));
  if (!a.perm.empty()) s.append(",perm=").append(view_text(a.perm));
  return s;
}

int normalized_axis(int axis, size_t rank) { return axis < 0 ? axis + int(rank) : axis; }

class Canonicalizer {
 public:
  explicit Canonicalizer(const SGraph& g) : g_(g), a_(analyze(g)) {
    for (const TensorDecl& in : g.inputs) {
      tensor_key_[in.name] = fnv1a64("input " + in.name);
      for (const Dim& d : in.type.shape)
        for (const std::string& s : d.symbols()) taken_dims_.insert(s);
    }
    for (const std::string& p : g.parameters()) params_.insert(p);
    for (const std::string& o : g.outputs) interface_.insert(o);
    for (const TensorDecl& in : g.inputs) interface_.insert(in.name);
  }

  SGraph run() {
    normalize_axes();
    std::vector<Kernel> ordered;
    std::vector<bool> done(g_.kernels.size(), false);
    for (size_t step = 0; step < g_.kernels.size(); ++step) {
      int best = -1;
      uint64_t best_key = 0;
      Kernel best_kernel;
      for (size_t k = 0; k < g_.kernels.size(); ++k) {
        if (done[k] || !ready(g_.kernels[k])) continue;
        Kernel ck = g_.kernels[k];
        uint64_t key = order_kernel(ck);
        if (best < 0 || key < best_key) {
          best = int(k);
          best_key = key;
          best_kernel = std::move(ck);
        }
      }
      if (best < 0) {  // a cycle or an unknown tensor: keep the rest in their order
        for (size_t k = 0; k < g_.kernels.size(); ++k)
          if (!done[k]) ordered.push_back(g_.kernels[k]);
        break;
      }
      done[size_t(best)] = true;
      for (const std::string& out : kernel_outputs(best_kernel)) tensor_key_[out] = fnv1a64(hex(best_key) + " writes " + out_key_[out]);
      ordered.push_back(std::move(best_kernel));
    }
    SGraph out = g_;
    out.kernels = std::move(ordered);
    rename(out);
    return out;
  }

 private:
  // Axes as non-negative numbers where the analysis knows the operand's rank.
  void normalize_axes() {
    for (size_t k = 0; k < g_.kernels.size(); ++k) {
      Kernel& kernel = g_.kernels[k];
      if (!kernel.custom) {
        LibraryKernel& lib = kernel.library;
        if (op_class(lib.op) == OpClass::Reduce && !lib.inputs.empty() && a_.tensors.count(lib.inputs[0]))
          lib.attrs.axis = normalized_axis(lib.attrs.axis, a_.tensors.at(lib.inputs[0]).shape.size());
        continue;
      }
      for (BlockOp& op : kernel.block.ops) {
        // Ops with an axis: reductions, split, concat and the rms accumulator.
        bool has_axis = (op.kind == BlockOp::Kind::Compute && (op_class(op.op) == OpClass::Reduce || op.op == Op::Split || op.op == Op::Concat)) ||
                        (op.kind == BlockOp::Kind::Accumulate && op.acc == AccKind::Rms);
        if (!has_axis || op.operands.empty() || op.operands[0] < 0 || size_t(op.operands[0]) >= kernel.block.ops.size()) continue;
        const auto& t = a_.tiles[k][size_t(op.operands[0])].type;
        if (t) op.attrs.axis = normalized_axis(op.attrs.axis, t->shape.size());
      }
    }
  }

  bool ready(const Kernel& k) const {
    for (const std::string& in : kernel_inputs(k))
      if (!tensor_key_.count(in)) return false;
    return true;
  }

  uint64_t tensor_key(const std::string& name) const {
    auto it = tensor_key_.find(name);
    return it == tensor_key_.end() ? fnv1a64("unknown " + name) : it->second;
  }

  // A grid size or loop range: parameters by their local position, everything else as written.
  std::string size_key(const Dim& d, std::map<std::string, int>& local) const {
    auto s = d.as_symbol();
    if (s && params_.count(*s)) {
      auto it = local.emplace(*s, int(local.size())).first;
      return std::string("p").append(std::to_string(it->second));
    }
    return d.canonical();
  }

  std::string save_suffix(const BlockOp& op) const { return interface_.count(op.name) ? " as " + op.name : ""; }

  // Puts the kernel's ops in canonical order (rewriting operand indices) and returns its key.
  uint64_t order_kernel(Kernel& kernel) {
    if (!kernel.custom) {
      const LibraryKernel& lib = kernel.library;
      std::string s = std::string("library ") + op_name(lib.op) + " " + dtype_name(lib.dtype) + " " + attrs_key(lib.attrs);
      for (size_t i = 0; i < lib.inputs.size(); ++i)
        s.append(" ").append(hex(tensor_key(lib.inputs[i]))).append(lib.view(i).empty() ? "" : " view " + view_text(lib.view(i)));
      out_key_[lib.output] = interface_.count(lib.output) ? lib.output : "";
      return fnv1a64(s + (interface_.count(lib.output) ? " as " + lib.output : ""));
    }
    CustomKernel& block = kernel.block;
    auto& ops = block.ops;
    size_t n = ops.size();
    std::vector<uint64_t> key(n);
    for (size_t i = 0; i < n; ++i) {
      BlockOp& op = ops[i];
      // add(a, b) and mul(a, b) are add(b, a) and mul(b, a): operands in key order.
      if (op.kind == BlockOp::Kind::Compute && (op.op == Op::Add || op.op == Op::Mul) && op.operands.size() == 2) {
        auto key_of = [&](int o) { return o >= 0 && size_t(o) < i ? key[size_t(o)] : ~uint64_t(0); };
        if (key_of(op.operands[1]) < key_of(op.operands[0])) std::swap(op.operands[0], op.operands[1]);
      }
      std::string s;
      switch (op.kind) {
        case BlockOp::Kind::Load: s = "load " + hex(tensor_key(op.tensor)) + (op.view.empty() ? "" : " view " + view_text(op.view)) + " " + map_key(op.map); break;
        case BlockOp::Kind::Compute:
          s = std::string(op_name(op.op)) + " " + (op.op == Op::Const ? constant_str(op.attrs.constant) : attrs_key(op.attrs));
          break;
        case BlockOp::Kind::Accumulate: s = std::string(acc_name(op.acc)) + " " + attrs_key(op.attrs); break;
        case BlockOp::Kind::Save: s = std::string("save ") + dtype_name(op.dtype) + (op.view.empty() ? "" : " view " + view_text(op.view)) + " " + map_key(op.map) + save_suffix(op); break;
      }
      for (int o : op.operands) s.append(" ").append(o >= 0 && size_t(o) < i ? hex(key[size_t(o)]) : "bad");
      key[i] = fnv1a64(s);
    }
    // Kahn's algorithm, always taking the ready op with the smallest (kind, key), then the
    // earliest: loads first and saves last, so the canonical text reads top to bottom.
    auto rank = [&](size_t i) {
      BlockOp::Kind kd = ops[i].kind;
      return kd == BlockOp::Kind::Load ? 0 : kd == BlockOp::Kind::Save ? 2 : 1;
    };
    auto before = [&](size_t i, size_t j) { return rank(i) != rank(j) ? rank(i) < rank(j) : key[i] < key[j]; };
    std::vector<int> pending(n, 0);
    std::vector<std::vector<size_t>> users(n);
    for (size_t i = 0; i < n; ++i)
      for (int o : ops[i].operands)
        if (o >= 0 && size_t(o) < i) {
          ++pending[i];
          users[size_t(o)].push_back(i);
        }
    std::vector<size_t> order;
    std::vector<bool> placed(n, false);
    for (size_t step = 0; step < n; ++step) {
      size_t best = n;
      for (size_t i = 0; i < n; ++i)
        if (!placed[i] && pending[i] == 0 && (best == n || before(i, best))) best = i;
      placed[best] = true;
      order.push_back(best);
      for (size_t u : users[best]) --pending[u];
    }
    std::vector<int> new_index(n);
    for (size_t i = 0; i < n; ++i) new_index[order[i]] = int(i);
    std::vector<BlockOp> reordered;
    std::map<std::string, int> local;
    std::string s = "custom grid";
    for (const Dim& g : block.grid) s.append(" ").append(size_key(g, local));
    s.append(" loop ").append(block.loop ? size_key(*block.loop, local) : std::string("none"));
    for (size_t i : order) {
      BlockOp op = ops[i];
      for (int& o : op.operands)
        if (o >= 0 && size_t(o) < n) o = new_index[size_t(o)];
      if (op.kind == BlockOp::Kind::Save) out_key_[op.name] = hex(key[i]);
      reordered.push_back(std::move(op));
      s.append(" ").append(hex(key[i]));
    }
    block.ops = std::move(reordered);
    return fnv1a64(s);
  }

  std::string fresh(const std::string& prefix, int& counter, const std::set<std::string>& taken) {
    std::string name;
    do name = prefix + std::to_string(++counter);
    while (taken.count(name));
    return name;
  }

  void rename(SGraph& out) {
    std::map<std::string, std::string> params, tensors, vars;
    int g = 0, f = 0, t = 0, c = 0;
    std::set<std::string> taken_tensors = interface_;
    auto param = [&](Dim& d, bool loop) {
      auto s = d.as_symbol();
      if (!s || !params_.count(*s)) return;
      if (!params.count(*s)) params[*s] = loop ? fresh("F", f, taken_dims_) : fresh("g", g, taken_dims_);
      d = Dim::symbol(params[*s]);
    };
    auto tensor = [&](std::string& name) {
      if (interface_.count(name)) return;
      if (!tensors.count(name)) tensors[name] = fresh("T", t, taken_tensors);
      name = tensors[name];
    };
    auto choice = [&](Choice& ch) {
      if (!ch.symbolic()) return;
      if (!vars.count(ch.var)) vars[ch.var] = std::string("c").append(std::to_string(++c));
      ch.var = vars[ch.var];
    };
    for (Kernel& k : out.kernels) {
      if (!k.custom) {
        for (std::string& in : k.library.inputs) tensor(in);
        tensor(k.library.output);
        continue;
      }
      for (Dim& d : k.block.grid) param(d, false);
      if (k.block.loop) param(*k.block.loop, true);
      int v = 0;
      for (BlockOp& op : k.block.ops) {
        if (op.kind == BlockOp::Kind::Load) tensor(op.tensor);
        if (op.kind == BlockOp::Kind::Save) tensor(op.name);
        else op.name = std::string("t").append(std::to_string(++v));
        if (op.kind == BlockOp::Kind::Load || op.kind == BlockOp::Kind::Save) {
          for (Choice& ch : op.map.grid) choice(ch);
          choice(op.map.loop);
        }
      }
    }
  }

  SGraph g_;
  Analysis a_;
  std::map<std::string, uint64_t> tensor_key_;
  std::map<std::string, std::string> out_key_;  // tensor -> the key of the save or output name that wrote it
  std::set<std::string> params_, taken_dims_, interface_;
};

}  // namespace

SGraph canonicalize(const SGraph& graph) { return Canonicalizer(graph).run(); }

std::string canonical_text(const SGraph& graph) { return print(canonicalize(graph)); }

uint64_t canonical_hash(const SGraph& graph) { return fnv1a64(canonical_text(graph)); }

}  // namespace prism::sgraph
