#include "engine/sgraph/validate.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/ir/infer_shapes.h"
#include "engine/sgraph/visitor.h"

namespace prism::sgraph {

std::string Constraint::str() const {
  std::string what = kind == Kind::Divides ? b.str() + " divides " + a.str() : a.str() + " == " + b.str();
  return what + " (" + where + ")";
}

const char* role_name(LoopRole role) {
  switch (role) {
    case LoopRole::Unknown: return "unknown";
    case LoopRole::Invariant: return "loop-invariant";
    case LoopRole::Walks: return "walked by the loop";
    case LoopRole::Partial: return "a partial of a reduction the loop walks";
    case LoopRole::Mixed: return "mixed across loop iterations";
    case LoopRole::After: return "after the loop";
  }
  return "?";
}

int64_t element_bytes(DType dtype) { return dtype_bytes(dtype); }

namespace {

std::string dim_name(int d) { return d == Choice::kNone ? "-" : std::to_string(d); }

class Analyzer : public Visitor {
 public:
  explicit Analyzer(const SGraph& g) : g_(g) {}

  Analysis run() {
    for (const TensorDecl& in : g_.inputs) {
      if (a_.tensors.count(in.name)) error("input '" + in.name + "' is declared twice");
      a_.tensors[in.name] = in.type;
      for (const Dim& d : in.type.shape)
        for (const std::string& s : d.symbols()) tensor_dims_.push_back(s);
    }
    for (const std::string& p : g_.parameters())
      if (std::find(tensor_dims_.begin(), tensor_dims_.end(), p) != tensor_dims_.end())
        error("'" + p + "' is both a tensor dim and a grid size or loop range");
    a_.tiles.resize(g_.kernels.size());
    a_.footprint.resize(g_.kernels.size());
    for (size_t k = 0; k < g_.kernels.size(); ++k) {
      try {
        visit_kernel(int(k), g_.kernels[k]);
      } catch (const DimError& e) {  // overflow or division by zero in a size expression
        error("kernel " + std::to_string(k) + ": " + e.what());
        a_.footprint[k].reset();
      }
    }
    for (const std::string& o : g_.outputs) {
      if (a_.unknown.count(o)) continue;
      if (!a_.tensors.count(o)) error("output '" + o + "' is not an input and no kernel writes it");
      else if (partial(o) > 0)
        error("output '" + o + "' still has " + std::to_string(partial(o)) +
              " partial axis(es) of a cross-block reduction: combine them in a later kernel (a sum over axis 0)");
    }
    return std::move(a_);
  }

 protected:
  void visit_library(int k, const LibraryKernel& lib) override {
    kernel_ = k;
    where_ = "kernel " + std::to_string(k) + ": " + lib.output + " = " + op_name(lib.op);
    std::vector<Type> types;
    bool known = true;
    int parts = 0;
    if (!lib.views.empty() && lib.views.size() != lib.inputs.size())
      error(where_ + ": " + std::to_string(lib.views.size()) + " views for " + std::to_string(lib.inputs.size()) + " inputs");
    else if (!lib.views.empty() && lib.op != Op::Matmul && op_class(lib.op) != OpClass::Reshape)
      error(where_ + ": only a library matmul or a reshape reads its inputs through views (a vendor matmul takes transposed "
                     "operands; a layout copy permutes)");
    for (size_t i = 0; i < lib.inputs.size(); ++i) {
      const std::string& in = lib.inputs[i];
      if (a_.unknown.count(in)) {
        known = false;
        continue;
      }
      if (!a_.tensors.count(in)) {
        error(where_ + ": reads '" + in + "', which is not an input and no earlier kernel writes");
        known = false;
        continue;
      }
      Type t = a_.tensors[in];
      if (!lib.view(i).empty()) {
        if (partial(in) > 0) error(where_ + ": '" + in + "' has partial axes and cannot be read through a view");
        try {
          t.shape = view_shape(t.shape, lib.view(i));
        } catch (const Error& e) {
          error(where_ + ": " + e.what());
          known = false;
          continue;
        }
      }
      types.push_back(std::move(t));
      parts = std::max(parts, partial(in));
    }
    OpClass cls = op_class(lib.op);
    if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && !is_layout(lib.op))
      error(where_ + ": a library kernel is a unary, binary, matmul, reduction, reshape or transpose op");
    else if (is_layout(lib.op) && parts > 0)
      error(where_ + ": a reshape or transpose cannot read a tensor with partial axes");
    else if (known) {
      Attrs attrs = lib.attrs;
      Inferred inf = infer_type(lib.op, attrs, types);
      if (!inf.type) error(where_ + ": " + inf.error);
      else {
        // A reduction over the first partial axis combines it.
        if (cls == OpClass::Reduce && parts > 0 && attrs.axis == 0) --parts;
        define(lib.output, Type{lib.dtype, inf.type->shape, false}, parts);
      }
    }
    if (!a_.tensors.count(lib.output)) define_unknown(lib.output);
  }

  void begin_custom(int k, const CustomKernel& kernel) override {
    kernel_ = k;
    a_.tiles[size_t(k)].assign(kernel.ops.size(), TileInfo{});
    for (size_t i = 0; i < kernel.grid.size(); ++i) {
      check_positive(kernel.grid[i], "grid dim " + std::to_string(i));
      for (size_t j = 0; j < i; ++j)
        if (kernel.grid[i] == kernel.grid[j])
          error("kernel " + std::to_string(k) + ": grid dims " + std::to_string(j) + " and " + std::to_string(i) + " have the same size " +
                kernel.grid[i].str() + "; give each grid dim its own size so maps can name it");
    }
    if (kernel.loop) check_positive(*kernel.loop, "loop range");
    footprint_ = Dim(0);
    footprint_known_ = true;
  }

  void end_custom(int k, const CustomKernel&) override {
    if (footprint_known_) a_.footprint[size_t(k)] = footprint_;
  }

  void visit_load(const CustomKernel& kernel, int i, const BlockOp& op) override {
    where_ = at(i) + "'" + op.name + "' = load " + op.tensor;
    if (a_.unknown.count(op.tensor)) return count_unknown();
    auto it = a_.tensors.find(op.tensor);
    if (it == a_.tensors.end()) return error(where_ + ": '" + op.tensor + "' is not an input and no earlier kernel writes it");
    Type t = it->second;
    try {
      t.shape = view_shape(t.shape, op.view);
    } catch (const Error& e) {
      return error(where_ + ": " + e.what());
    }
    if (!check_map(kernel, op.map, t.shape.size(), op.tensor)) return;
    TileInfo& tile = tile_at(i);
    if (!op.map.is_concrete()) return count_unknown();
    Type tt{t.dtype, {}, false};
    for (size_t d = 0; d < t.shape.size(); ++d) {
      Dim factor(1);
      for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
        if (op.map.grid[gi].dim == int(d)) factor = factor * kernel.grid[gi];
      if (op.map.loop.dim == int(d)) factor = factor * kernel.loop_range();
      tt.shape.push_back(divide(t.shape[d], factor, where_ + ", dim " + std::to_string(d)));
    }
    tile.type = tt;
    tile.role = op.map.loop.is_none() ? LoopRole::Invariant : LoopRole::Walks;
    tile.loop_axis = op.map.loop.dim;
    for (size_t d = 0; d < tt.shape.size(); ++d)
      tile.cut.push_back(std::any_of(op.map.grid.begin(), op.map.grid.end(), [&](const Choice& c) { return c.dim == int(d); }));
    add_footprint(tt);
  }

  void visit_compute(const CustomKernel& kernel, int i, const BlockOp& op) override {
    where_ = at(i) + "'" + op.name + "' = " + op_name(op.op);
    OpClass cls = op_class(op.op);
    size_t want = cls == OpClass::Const ? 0 : cls == OpClass::Unary || cls == OpClass::Reduce || cls == OpClass::Split ? 1 : 2;
    if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && cls != OpClass::Const &&
        cls != OpClass::Split && cls != OpClass::Concat)
      return error(where_ + ": a block op is a unary, binary, matmul, reduction, split, concat or const op");
    if (op.operands.size() != want)
      return error(where_ + ": takes " + std::to_string(want) + " operand(s) but has " + std::to_string(op.operands.size()));
    std::vector<const TileInfo*> xs;
    for (int o : op.operands) {
      const TileInfo* x = operand(kernel, i, o);
      if (!x) return;
      xs.push_back(x);
    }
    TileInfo& out = tile_at(i);
    for (const TileInfo* x : xs)
      if (!x->type) return count_unknown();
    Type t{DType::F32, {}, false};
    std::vector<std::pair<LoopRole, int>> roles;  // each operand's role, in result axes
    if (cls == OpClass::Const) {
      out.type = t;  // a scalar, the same in every block and iteration
      out.role = LoopRole::Invariant;
      return add_footprint(t);
    }
    if (cls == OpClass::Unary) {
      t.shape = xs[0]->type->shape;
      roles.push_back({xs[0]->role, xs[0]->loop_axis});
      out.cut = aligned_cut(*xs[0], t.shape.size());
    } else if (cls == OpClass::Split || cls == OpClass::Concat) {
      // Data moves along the axis: every block must hold all of it (no grid dim, not the loop).
      std::vector<Type> types;
      for (const TileInfo* x : xs) types.push_back(*x->type);
      Attrs attrs = op.attrs;
      Inferred inf = infer_type(op.op, attrs, types);
      if (!inf.type) return error(where_ + ": " + inf.error);
      t.shape = inf.type->shape;
      out.cut.assign(t.shape.size(), false);
      for (const TileInfo* x : xs) {
        const std::vector<bool> c = aligned_cut(*x, t.shape.size());
        if (c[size_t(attrs.axis)]) return error(where_ + ": a grid dim cuts tile axis " + std::to_string(attrs.axis) + ", which it moves data along");
        if (x->role == LoopRole::Walks && x->loop_axis == attrs.axis)
          return error(where_ + ": the loop walks tile axis " + std::to_string(attrs.axis) + ", which it moves data along");
        for (size_t a = 0; a < c.size(); ++a) out.cut[a] = out.cut[a] || c[a];
        roles.push_back({x->role, x->loop_axis});
      }
    } else if (cls == OpClass::Binary) {
      const auto& sa = xs[0]->type->shape;
      const auto& sb = xs[1]->type->shape;
      size_t rank = std::max(sa.size(), sb.size());
      t.shape.resize(rank);
      for (size_t r = 0; r < rank; ++r) {
        const Dim* da = r < sa.size() ? &sa[sa.size() - 1 - r] : nullptr;
        const Dim* db = r < sb.size() ? &sb[sb.size() - 1 - r] : nullptr;
        Dim& o = t.shape[rank - 1 - r];
        if (!da) o = *db;
        else if (!db) o = *da;
        else if (*db == Dim(1)) o = *da;
        else if (*da == Dim(1)) o = *db;
        else if (!unify(*da, *db, where_ + ": broadcast dims " + da->str() + " and " + db->str())) return;
        else o = *da;
      }
      for (const TileInfo* x : xs) roles.push_back(shifted(*x, int(rank - x->type->shape.size())));
      out.cut.assign(rank, false);
      for (const TileInfo* x : xs) {
        const std::vector<bool> c = aligned_cut(*x, rank);
        for (size_t a = 0; a < rank; ++a) out.cut[a] = out.cut[a] || c[a];
      }
    } else if (cls == OpClass::Matmul) {
      const auto& sa = xs[0]->type->shape;
      const auto& sb = xs[1]->type->shape;
      if (sa.size() < 2 || sb.size() < 2) return error(where_ + ": matmul needs tiles of rank 2 or more");
      if (!unify(sa.back(), sb[sb.size() - 2], where_ + ": inner dims " + sa.back().str() + " and " + sb[sb.size() - 2].str()))
        return;
      std::vector<Dim> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
      std::string err;
      auto batch = broadcast_shapes(ba, bb, err);
      if (!batch) return error(where_ + ": batch " + err);
      t.shape = *batch;
      t.shape.push_back(sa[sa.size() - 2]);
      t.shape.push_back(sb.back());
      int rank = int(t.shape.size());
      const std::vector<bool> ca = aligned_cut(*xs[0], size_t(rank)), cb = aligned_cut(*xs[1], size_t(rank));
      out.cut.assign(size_t(rank), false);
      for (int a = 0; a < rank - 2; ++a) out.cut[size_t(a)] = ca[size_t(a)] || cb[size_t(a)];
      out.cut[size_t(rank - 2)] = ca[size_t(rank - 2)];
      out.cut[size_t(rank - 1)] = cb[size_t(rank - 1)];
      for (int side = 0; side < 2; ++side) {
        const TileInfo& x = *xs[size_t(side)];
        int xr = int(x.type->shape.size());
        int contracted = side == 0 ? xr - 1 : xr - 2;
        if (x.role == LoopRole::Walks && x.loop_axis == contracted) roles.push_back({LoopRole::Partial, -1});
        else if (x.role == LoopRole::Walks && x.loop_axis >= xr - 2) roles.push_back({LoopRole::Walks, side == 0 ? rank - 2 : rank - 1});
        else roles.push_back(shifted(x, rank - xr));
      }
    } else {
      Attrs attrs = op.attrs;
      Inferred inf = infer_type(op.op, attrs, {*xs[0]->type});
      if (!inf.type) return error(where_ + ": " + inf.error);
      t.shape = inf.type->shape;
      const TileInfo& x = *xs[0];
      out.cut = aligned_cut(x, x.type->shape.size());
      if (attrs.keepdims) out.cut[size_t(attrs.axis)] = false;
      else out.cut.erase(out.cut.begin() + attrs.axis);
      if (x.role == LoopRole::Walks && x.loop_axis == attrs.axis) roles.push_back({LoopRole::Partial, -1});
      else if (x.role == LoopRole::Walks && !attrs.keepdims && x.loop_axis > attrs.axis) roles.push_back({LoopRole::Walks, x.loop_axis - 1});
      else roles.push_back({x.role, x.loop_axis});
    }
    out.type = t;
    auto role = combine(roles);
    if (!role) return;
    out.role = role->first;
    out.loop_axis = role->second;
    add_footprint(t);
  }

  void visit_accumulate(const CustomKernel& kernel, int i, const BlockOp& op) override {
    where_ = at(i) + "'" + op.name + "' = " + acc_name(op.acc);
    if (!kernel.loop) return error(where_ + ": an accumulator needs a kernel with a loop");
    const size_t arity = op.acc == AccKind::Rescaled ? 2 : 1;
    if (op.operands.size() != arity)
      return error(where_ + ": takes " + std::to_string(arity) + " operand" + (arity == 1 ? "" : "s") + " but has " + std::to_string(op.operands.size()));
    const TileInfo* x = operand(kernel, i, op.operands[0]);
    if (!x) return;
    const TileInfo* m = arity == 2 ? operand(kernel, i, op.operands[1]) : x;
    if (!m) return;
    TileInfo& out = tile_at(i);
    out.role = LoopRole::After;
    for (const TileInfo* o : {x, m}) {
      if (o->role == LoopRole::Invariant) return error(where_ + ": its operand is loop-invariant; there is nothing to accumulate");
      if (o->role == LoopRole::After) return error(where_ + ": its operand is computed after the loop");
    }
    if (!x->type || !m->type) return count_unknown();
    Type t{DType::F32, x->type->shape, false};
    if (op.acc == AccKind::Rescaled) {
      // The max m scales whole rows of x: it broadcasts against x without widening it.
      const auto &sx = x->type->shape, &sm = m->type->shape;
      if (sm.size() > sx.size()) return error(where_ + ": its max has a higher rank than its value");
      for (size_t r = 0; r < sm.size(); ++r) {
        const Dim &dm = sm[sm.size() - 1 - r], &dx = sx[sx.size() - 1 - r];
        if (dm == Dim(1)) continue;
        if (dx == Dim(1)) return error(where_ + ": its max (dim " + dm.str() + ") would widen its value");
        if (!unify(dm, dx, where_ + ": the max's dim " + dm.str() + " against the value's " + dx.str())) return;
      }
    }
    out.cut = aligned_cut(*x, t.shape.size());
    if (op.acc == AccKind::Rms) {
      int axis = op.attrs.axis, rank = int(t.shape.size());
      if (axis < -rank || axis >= rank) return error(where_ + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
      t.shape[size_t(axis < 0 ? axis + rank : axis)] = Dim(1);
      out.cut[size_t(axis < 0 ? axis + rank : axis)] = false;
    }
    out.type = t;
    add_footprint(t);
  }

  void visit_save(const CustomKernel& kernel, int i, const BlockOp& op) override {
    where_ = at(i) + "save " + op.name;
    if (op.operands.size() != 1) return error(where_ + ": takes 1 operand but has " + std::to_string(op.operands.size()));
    const TileInfo* x = operand(kernel, i, op.operands[0]);
    if (!x) return;
    int rank = x->type ? int(x->type->shape.size()) : -1;
    bool map_ok = rank >= 0 ? check_map(kernel, op.map, size_t(rank), op.name) : true;
    TileInfo& out = tile_at(i);
    out.role = x->role;
    if (x->role == LoopRole::Partial)
      error(where_ + ": the loop walks a reduction in this value: save it after an accumulator");
    else if (x->role == LoopRole::Mixed)
      error(where_ + ": this value mixes loop iterations; accumulate it or save a value the loop walks along one axis");
    else if (!op.map.loop.symbolic() && (x->role == LoopRole::Invariant || x->role == LoopRole::After) && !op.map.loop.is_none())
      error(where_ + ": the value is " + role_name(x->role) + " but the map has the loop walk dim " + dim_name(op.map.loop.dim));
    else if (!op.map.loop.symbolic() && x->role == LoopRole::Walks && op.map.loop.dim != x->loop_axis)
      error(where_ + ": the loop walks tile axis " + std::to_string(x->loop_axis) + " but the map has the loop walk dim " +
            dim_name(op.map.loop.dim));
    if (!x->type || !map_ok || !op.map.is_concrete()) {
      define_unknown(op.name);
      return;
    }
    Type t{op.dtype, {}, false};
    int parts = 0;
    for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
      if (op.map.grid[gi].is_none()) {
        t.shape.push_back(kernel.grid[gi]);
        ++parts;
      }
    for (int d = 0; d < rank; ++d) {
      Dim size = x->type->shape[size_t(d)];
      for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
        if (op.map.grid[gi].dim == d) size = size * kernel.grid[gi];
      if (op.map.loop.dim == d) size = size * kernel.loop_range();
      t.shape.push_back(size);
    }
    if (!op.view.empty() && !saved_through_view(op.view, t.shape, parts)) return define_unknown(op.name);
    out.type = t;
    define(op.name, t, parts);
  }

 private:
  std::string at(int i) const { return "kernel " + std::to_string(kernel_) + ": op " + std::to_string(i) + " "; }

  // A save's view (BlockOp::view): `shape`, in the view's dims, becomes the tensor's own; false
  // after an error.
  bool saved_through_view(const std::vector<int>& view, std::vector<Dim>& shape, int parts) {
    const size_t rank = shape.size();
    std::vector<bool> seen(rank, false);
    for (int a : view)
      if (a < 0 || size_t(a) >= rank || seen[size_t(a)]) break;
      else seen[size_t(a)] = true;
    if (parts > 0) {
      error(where_ + ": a save through a view writes whole tiles, not partial results");
      return false;
    }
    if (view.size() != rank || std::find(seen.begin(), seen.end(), false) != seen.end() || view.back() != int(rank) - 1) {
      error(where_ + ": view " + view_text(view) + " must permute the tile's " + std::to_string(rank) + " dims, keeping the last last");
      return false;
    }
    std::vector<Dim> own(rank, Dim(1));
    for (size_t i = 0; i < rank; ++i) own[size_t(view[i])] = shape[i];
    shape = std::move(own);
    return true;
  }

  // x's cut axes aligned to the right of a result of `rank` axes (numpy broadcasting); an axis x
  // lacks, or whose size is 1, is not cut.
  static std::vector<bool> aligned_cut(const TileInfo& x, size_t rank) {
    std::vector<bool> out(rank, false);
    const size_t r = x.type ? x.type->shape.size() : 0;
    if (r > rank) return out;
    for (size_t a = 0; a < r && a < x.cut.size(); ++a)
      out[rank - r + a] = x.cut[a] && x.type->shape[a] != Dim(1);
    return out;
  }
  void error(const std::string& m) { a_.errors.push_back(m); }
  TileInfo& tile_at(int i) { return a_.tiles[size_t(kernel_)][size_t(i)]; }
  int partial(const std::string& t) const {
    auto it = a_.partial_axes.find(t);
    return it == a_.partial_axes.end() ? 0 : it->second;
  }
  void count_unknown() { footprint_known_ = false; }

  void define_unknown(const std::string& name) {
    if (a_.tensors.count(name) || a_.unknown.count(name)) return error("kernel " + std::to_string(kernel_) + ": '" + name + "' is written a second time");
    a_.unknown.insert(name);
  }

  void define(const std::string& name, const Type& t, int parts) {
    if (a_.tensors.count(name) || a_.unknown.count(name)) return error("kernel " + std::to_string(kernel_) + ": '" + name + "' is written a second time");
    a_.tensors[name] = t;
    if (parts > 0) a_.partial_axes[name] = parts;
  }

  void check_positive(const Dim& d, const std::string& what) {
    auto c = d.constant_value();
    if (c && !(c->is_integer() && c->num() > 0))
      error("kernel " + std::to_string(kernel_) + ": " + what + " is " + d.str() + ", not a positive integer");
  }

  void add_footprint(const Type& t) {
    footprint_ = footprint_ + element_count(t.shape) * Dim(element_bytes(t.dtype));
  }

  // The operand's tile; reports a reference to a save or to a later op.
  const TileInfo* operand(const CustomKernel& kernel, int i, int o) {
    if (o < 0 || o >= i) {
      error(where_ + ": operand " + std::to_string(o) + " is not an earlier op");
      return nullptr;
    }
    if (kernel.ops[size_t(o)].kind == BlockOp::Kind::Save) {
      error(where_ + ": operand " + std::to_string(o) + " is a save, not a tile");
      return nullptr;
    }
    return &a_.tiles[size_t(kernel_)][size_t(o)];
  }

  bool check_map(const CustomKernel& kernel, const Map& map, size_t rank, const std::string& tensor) {
    bool ok = true;
    if (map.grid.size() != kernel.grid.size()) {
      error(where_ + ": the map has " + std::to_string(map.grid.size()) + " grid entries but the grid has " +
            std::to_string(kernel.grid.size()) + " dims");
      return false;
    }
    auto in_range = [&](const Choice& c, const std::string& what) {
      if (c.symbolic() || c.dim == Choice::kNone || (c.dim >= 0 && size_t(c.dim) < rank)) return true;
      error(where_ + ": " + what + " names dim " + std::to_string(c.dim) + " but " + tensor + " has rank " + std::to_string(rank));
      return false;
    };
    for (size_t gi = 0; gi < map.grid.size(); ++gi) {
      ok = in_range(map.grid[gi], "grid " + kernel.grid[gi].str()) && ok;
      for (size_t gj = 0; gj < gi; ++gj)
        if (!map.grid[gi].symbolic() && !map.grid[gi].is_none() && map.grid[gi] == map.grid[gj]) {
          error(where_ + ": grid dims " + kernel.grid[gj].str() + " and " + kernel.grid[gi].str() + " both partition dim " +
                std::to_string(map.grid[gi].dim) + " of " + tensor);
          ok = false;
        }
    }
    ok = in_range(map.loop, "the loop") && ok;
    if (!kernel.loop && !map.loop.is_none() && !map.loop.symbolic()) {
      error(where_ + ": the map has the loop walk dim " + std::to_string(map.loop.dim) + " but the kernel has no loop");
      ok = false;
    }
    return ok;
  }

  // dim / factor, recording or deciding the divisibility.
  Dim divide(const Dim& dim, const Dim& factor, const std::string& where) {
    if (factor == Dim(1)) return dim;
    Dim q = dim / factor;
    auto c = q.constant_value();
    if (c) {
      if (!c->is_integer() || c->num() < 1) error(where + ": " + dim.str() + " is not divisible by " + factor.str());
    } else {
      a_.constraints.push_back({Constraint::Kind::Divides, dim, factor, where});
    }
    return q;
  }

  // Dims that must be equal: false (with an error) when they provably differ.
  bool unify(const Dim& a, const Dim& b, const std::string& where) {
    if (a == b) return true;
    auto ratio = (a / b).constant_value();
    if (ratio) {
      error(where + " differ");
      return false;
    }
    a_.constraints.push_back({Constraint::Kind::Equal, a, b, where});
    return true;
  }

  static std::pair<LoopRole, int> shifted(const TileInfo& x, int by) {
    return {x.role, x.role == LoopRole::Walks ? x.loop_axis + by : -1};
  }

  std::optional<std::pair<LoopRole, int>> combine(const std::vector<std::pair<LoopRole, int>>& roles) {
    std::pair<LoopRole, int> out{LoopRole::Invariant, -1};
    for (const auto& r : roles) {
      if (r.first == LoopRole::Unknown || out.first == LoopRole::Unknown) {
        out = {LoopRole::Unknown, -1};
        continue;
      }
      bool r_body = r.first != LoopRole::Invariant && r.first != LoopRole::After;
      bool o_body = out.first != LoopRole::Invariant && out.first != LoopRole::After;
      if ((r.first == LoopRole::After && o_body) || (out.first == LoopRole::After && r_body)) {
        error(where_ + ": mixes a value computed after the loop with a value of the loop body");
        return std::nullopt;
      }
      if (out.first == LoopRole::Invariant) out = r;
      else if (r.first == LoopRole::Invariant || r == out) continue;
      else if (out.first == LoopRole::After && r.first == LoopRole::After) continue;
      else out = {LoopRole::Mixed, -1};
    }
    return out;
  }

  const SGraph& g_;
  Analysis a_;
  std::vector<std::string> tensor_dims_;
  int kernel_ = 0;
  std::string where_;
  Dim footprint_;
  bool footprint_known_ = true;
};

}  // namespace

Analysis analyze(const SGraph& graph) { return Analyzer(graph).run(); }

std::vector<std::string> validate(const SGraph& graph) { return analyze(graph).errors; }

int kernels_run(const SGraph& graph) {
  auto reshape = [](const Kernel& k) { return !k.custom && op_class(k.library.op) == OpClass::Reshape; };
  if (std::none_of(graph.kernels.begin(), graph.kernels.end(), reshape)) return int(graph.kernels.size());
  const Analysis analysis = analyze(graph);
  return int(std::count_if(graph.kernels.begin(), graph.kernels.end(),
                           [&](const Kernel& k) { return !reshape(k) || !reshapes_in_place(graph, analysis, k.library); }));
}

bool reshapes_in_place(const SGraph& graph, const Analysis& analysis, const LibraryKernel& lib) {
  if (op_class(lib.op) != OpClass::Reshape || lib.inputs.size() != 1 || !lib.view(0).empty()) return false;
  auto returned = [&](const std::string& t) { return std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end(); };
  auto given = [&](const std::string& t) {
    return std::any_of(graph.inputs.begin(), graph.inputs.end(), [&](const TensorDecl& in) { return in.name == t; });
  };
  if (returned(lib.output) && (returned(lib.inputs[0]) || given(lib.inputs[0]))) return false;
  if (analysis.partial_axes.count(lib.inputs[0]) || analysis.partial_axes.count(lib.output)) return false;
  auto in = analysis.tensors.find(lib.inputs[0]), out = analysis.tensors.find(lib.output);
  return in != analysis.tensors.end() && out != analysis.tensors.end() && in->second.dtype == out->second.dtype;
}

}  // namespace prism::sgraph
