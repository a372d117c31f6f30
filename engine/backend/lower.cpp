#include "engine/backend/lower.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/error.h"
#include "engine/ir/shape.h"
#include "engine/sgraph/validate.h"

namespace prism::backend {

using sgraph::BlockOp;

namespace kir {

int64_t CustomKernel::blocks() const { return element_count(grid); }

std::vector<size_t> kernel_tensors(const Program& program, const Kernel& kernel) {
  std::set<size_t> used;
  for (const auto* list : {&kernel.reads, &kernel.writes})
    for (const std::string& name : *list) used.insert(program.index(name));
  return {used.begin(), used.end()};
}

std::map<int, DType> block_value_dtypes(const Program& program, const CustomKernel& kernel) {
  std::map<int, DType> dtypes;
  for (const Tile& t : kernel.tiles) dtypes[t.value] = t.storage;
  for (const auto* phase : {&kernel.before, &kernel.body, &kernel.after})
    for (const Stmt& st : *phase)
      if (st.kind == Stmt::Kind::Bind) dtypes[st.value] = program.tensor(st.out.tensor).dtype;
  return dtypes;
}

size_t Program::index(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return i;
  throw Error(Error::Kind::InvalidArgument, "the kernel program has no device tensor '" + name + "'");
}

}  // namespace kir

namespace {

enum class Phase { Before, Body, After };

class Failure {
 public:
  explicit Failure(const std::string& who) : who_(who) {}
  [[noreturn]] void operator()(const std::string& what) const { throw Error(Error::Kind::InvalidArgument, who_ + ": " + what); }

 private:
  std::string who_;
};

kir::Place tensor_place(const kir::Tensor& t) { return {kir::Place::Kind::Tensor, -1, t.name, {}, t.shape, dense_strides(t.shape)}; }

int normalized_axis(int axis, size_t rank, const Failure& fail, const std::string& what) {
  const int a = axis < 0 ? axis + int(rank) : axis;
  if (a < 0 || a >= int(rank)) fail(what + ": axis out of range");
  return a;
}

// One custom kernel: its values' phases and places, its tiles and its statements.
class CustomLowering {
 public:
  CustomLowering(const sgraph::CustomKernel& k, const std::vector<sgraph::TileInfo>& tiles, const DimBindings& b,
                 const kir::Program& program, const LowerOptions& o)
      : k_(k),
        tiles_(tiles),
        program_(program),
        options_(o),
        fail_(o.who),
        n_(k.ops.size()),
        uses_(n_),
        folded_(n_, false),
        direct_(n_, -1),
        places_(n_),
        bindings_(b) {
    for (const Dim& g : k.grid) out_.grid.push_back(g.evaluate_size(b));
    out_.loop = k.loop_range().evaluate_size(b);
    for (size_t i = 0; i < n_; ++i) {
      if (!tiles[i].type) fail_("op " + std::to_string(i) + " '" + k.ops[i].name + "' has no known tile type");
      shape_.push_back(concrete_shape(tiles[i].type->shape, b));
      for (int o : k.ops[i].operands) uses_[size_t(o)].push_back(i);
    }
  }

  kir::CustomKernel run() {
    plan_in_place();
    layout_tiles();
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Accumulate) continue;
      int64_t count = op.acc == sgraph::AccKind::Rms ? shape_[size_t(op.operands[0])][size_t(rms_axis(i))] * out_.loop : 0;
      out_.accumulators.push_back({int(i), op.name, op.acc, element_count(shape_[i]), count});
      places_[i] = tile(i);  // also where a matmul that adds into it in place leaves its value
      if (op.acc == sgraph::AccKind::Rescaled) {
        const std::vector<int64_t>& m = shape_[size_t(op.operands[1])];
        const int first = int(n_ + 3 * rescaled_.size());
        rescaled_[i] = first;
        for (int j = 0; j < 3; ++j) add_tile(first + j, op.name + (j == 0 ? "_max" : j == 1 ? "_keep" : "_take"), DType::F32, m);
        out_.accumulators.push_back({first, op.name + "_max", sgraph::AccKind::Max, element_count(m), 0});
      }
    }
    for (size_t i = 0; i < n_; ++i) {
      if (part_in_place(i)) places_[i] = part_place(i);
      else if (!folded_[i]) statements(phase_of(i)).push_back(statement(i));
    }
    link_prefetches();
    return std::move(out_);
  }

 private:
  Phase phase_of(size_t i) const {
    if (k_.ops[i].kind == BlockOp::Kind::Accumulate) return Phase::Body;
    sgraph::LoopRole r = tiles_[i].role;
    if (r == sgraph::LoopRole::Unknown) fail_("op '" + k_.ops[i].name + "' has an unknown loop role");
    return r == sgraph::LoopRole::Invariant ? Phase::Before : r == sgraph::LoopRole::After ? Phase::After : Phase::Body;
  }

  std::vector<kir::Stmt>& statements(Phase p) { return p == Phase::Before ? out_.before : p == Phase::Body ? out_.body : out_.after; }

  int rms_axis(size_t i) const {
    return normalized_axis(k_.ops[i].attrs.axis, shape_[size_t(k_.ops[i].operands[0])].size(), fail_,
                           "accumulator '" + k_.ops[i].name + "'");
  }

  // A matmul whose only use is a sum accumulator of its shape in the body adds into it; a compute
  // op whose only use is a save in the same phase writes into the saved tensor (each as the
  // options allow).
  void plan_in_place() {
    if (!options_.write_in_place && !options_.matmul_into_accumulator) return;
    for (size_t i = 0; i < n_; ++i) {
      const BlockOp& op = k_.ops[i];
      if (op.kind != BlockOp::Kind::Compute || op.op == Op::Const || part_in_place(i) || uses_[i].size() != 1) continue;
      size_t u = uses_[i][0];
      const BlockOp& user = k_.ops[u];
      const bool into_sum = options_.matmul_into_accumulator && op.op == Op::Matmul && user.kind == BlockOp::Kind::Accumulate &&
                            user.acc == sgraph::AccKind::Sum && phase_of(i) == Phase::Body && shape_[u] == shape_[i];
      // A matmul stores f32 vectors: it writes in place only into an f32 tensor (elementwise ops and
      // reductions round as they store).
      const bool into_save = options_.write_in_place && user.kind == BlockOp::Kind::Save && phase_of(u) == phase_of(i) &&
                             (op.op != Op::Matmul || user.dtype == DType::F32);
      if (into_sum || into_save) {
        folded_[u] = true;
        direct_[i] = int(u);
      }
    }
  }

  // A split part is read where its operand lies (no copy, no tile of its own).
  bool part_in_place(size_t i) const { return k_.ops[i].kind == BlockOp::Kind::Compute && k_.ops[i].op == Op::Split; }

  kir::Place part_place(size_t i) const {
    const BlockOp& op = k_.ops[i];
    kir::Place p = places_[size_t(op.operands.at(0))];
    const int axis = normalized_axis(op.attrs.axis, p.shape.size(), fail_, "op '" + op.name + "'");
    p.start += op.attrs.index * shape_[i][size_t(axis)] * p.strides[size_t(axis)];
    p.shape = shape_[i];
    return p;
  }

  bool has_tile(size_t i) const {
    switch (k_.ops[i].kind) {
      case BlockOp::Kind::Load: return staged(i);
      case BlockOp::Kind::Compute: return direct_[i] < 0 && !part_in_place(i);
      case BlockOp::Kind::Accumulate: return true;
      case BlockOp::Kind::Save: return false;
    }
    return false;
  }

  void add_tile(int value, const std::string& name, DType storage, const std::vector<int64_t>& shape) {
    const int64_t bytes = element_count(shape) * sgraph::element_bytes(storage);
    out_.tiles.push_back({value, name, storage, shape, out_.fast_memory_bytes});
    out_.fast_memory_bytes += (bytes + options_.tile_align_bytes - 1) / options_.tile_align_bytes * options_.tile_align_bytes;
  }

  void layout_tiles() {
    auto add = [&](size_t i) {
      const BlockOp& op = k_.ops[i];
      add_tile(int(i), op.name,
               op.kind == BlockOp::Kind::Load && !options_.wide_staged_tiles ? program_.tensor(op.tensor).dtype : DType::F32,
               staged_as_stored(i) ? last_two_swapped(shape_[i]) : shape_[i]);
    };
    const bool first = options_.accumulators_first;
    for (size_t i = 0; i < n_; ++i)
      if (first && k_.ops[i].kind == BlockOp::Kind::Accumulate) add(i);
    for (size_t i = 0; i < n_; ++i)
      if (has_tile(i) && !(first && k_.ops[i].kind == BlockOp::Kind::Accumulate)) add(i);
  }

  kir::Place tile(size_t i) const { return {kir::Place::Kind::Tile, int(i), "", {}, shape_[i], dense_strides(shape_[i])}; }

  // The terms of the (block, iteration) tile of shape `tile` in a tensor with `strides` (data dims
  // from `first`), as sgraph::evaluate places it: along dim j, block b of a grid dim partitioning
  // j starts at b * tile[j] * (the loop range if the loop walks j too), iteration f at f * tile[j].
  kir::Offset tile_terms(const sgraph::Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& strides,
                         size_t first) const {
    kir::Offset off;
    auto add = [&](int block, int64_t scale) {
      if (scale != 0) off.push_back({block, scale});
    };
    for (size_t j = 0; j < tile.size(); ++j) {
      const int64_t walk = map.loop.dim == int(j) ? out_.loop : 1;
      for (size_t gi = 0; gi < map.grid.size(); ++gi)
        if (map.grid[gi].dim == int(j)) add(int(gi), tile[j] * walk * strides[first + j]);
      if (walk > 1) add(-1, tile[j] * strides[first + j]);
    }
    return off;
  }

  // A load is copied into a tile when the backend stages every load, or when its view does not
  // keep the tensor's last dim last (a transposed W): the printers read bound boxes with a last
  // stride of 1.
  bool staged(size_t i) const {
    if (options_.stage_loads) return true;
    const std::vector<int>& view = k_.ops[i].view;
    if (view.empty() || shape_[i].empty() || shape_[i].back() == 1) return false;
    const int last = int(program_.tensor(k_.ops[i].tensor).shape.size()) - 1;
    if (view.back() == last) return false;
    return !(options_.transposed_b_in_place && transposed_b_only(i, last));
  }

  // Load i's view swaps the tensor's last two dims (its second-to-last view dim is the tensor's
  // last, so that dim is contiguous) and every use is a matmul's B with few rows for its
  // contraction: the in-place kernel sums lanes once per result element, which a copy of B
  // beats when the rows are many (measured: docs/tuning.md, "The CPU's other kernel choices").
  bool transposed_b_only(size_t i, int last) const {
    const std::vector<int>& view = k_.ops[i].view;
    if (view.size() < 2 || view[view.size() - 2] != last || uses_[i].empty()) return false;
    const int64_t k = shape_[i][shape_[i].size() - 2];
    for (size_t u : uses_[i]) {
      const BlockOp& user = k_.ops[u];
      if (user.kind != BlockOp::Kind::Compute || user.op != Op::Matmul || user.operands.at(0) == int(i)) return false;
      const std::vector<int64_t>& a = shape_[size_t(user.operands[0])];
      if (a.size() < 2) return false;
      const BlockOp& left = k_.ops[size_t(user.operands[0])];
      const DType a_dtype = left.kind == BlockOp::Kind::Load ? program_.tensor(left.tensor).dtype : DType::F32;
      if (options_.transposed_b_any_rows && options_.transposed_b_any_rows(a_dtype, program_.tensor(k_.ops[i].tensor).dtype, a[a.size() - 2]))
        continue;
      if (a[a.size() - 2] * 8 > k) return false;
    }
    return true;
  }

  template <class T>
  static std::vector<T> last_two_swapped(std::vector<T> v) {
    std::swap(v[v.size() - 2], v[v.size() - 1]);
    return v;
  }

  // Load i is staged in its tensor's own order (LowerOptions::stage_transposed_as_stored): its
  // view swaps the tensor's last two dims and keeps the others, and every use is a matmul's B.
  bool staged_as_stored(size_t i) const {
    const BlockOp& op = k_.ops[i];
    if (!options_.stage_transposed_as_stored || op.kind != BlockOp::Kind::Load || !staged(i) || uses_[i].empty()) return false;
    const std::vector<int>& view = op.view;
    const size_t r = view.size();
    if (r < 2 || r != program_.tensor(op.tensor).shape.size() || view[r - 2] != int(r) - 1 || view[r - 1] != int(r) - 2) return false;
    for (size_t d = 0; d + 2 < r; ++d)
      if (view[d] != int(d)) return false;
    for (size_t u : uses_[i]) {
      const BlockOp& user = k_.ops[u];
      if (user.kind != BlockOp::Kind::Compute || user.op != Op::Matmul || user.operands.at(0) == int(i) || user.operands.at(1) != int(i)) return false;
    }
    return true;
  }

  kir::Place load_box(size_t i) const {
    const BlockOp& op = k_.ops[i];
    const kir::Tensor& t = program_.tensor(op.tensor);
    auto strides = sgraph::view_dims(dense_strides(t.shape), op.view, int64_t(0));
    if (strides.size() != shape_[i].size()) fail_("load '" + op.name + "': tile rank differs from its view of " + op.tensor);
    return {kir::Place::Kind::Tensor, int(i), op.tensor, tile_terms(op.map, shape_[i], strides, 0), shape_[i], strides};
  }

  // Where a save writes: partial axes (grid dims its map does not place) first, then the tile.
  kir::Place save_box(size_t i) const {
    const BlockOp& op = k_.ops[i];
    const auto& whole = program_.tensor(op.name).shape;
    auto strides = sgraph::view_dims(dense_strides(whole), op.view, int64_t(0));  // a save's view: no partial axes
    const auto& tile = shape_[size_t(op.operands[0])];
    if (whole.size() < tile.size()) fail_("save '" + op.name + "': its tensor has a lower rank than the tile");
    const size_t parts = whole.size() - tile.size();
    kir::Offset off;
    size_t p = 0;
    for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
      if (op.map.grid[gi].is_none()) {
        if (p >= parts) fail_("save '" + op.name + "': more partial axes than its tensor has");
        off.push_back({int(gi), strides[p++]});
      }
    if (p != parts) fail_("save '" + op.name + "': partial axes do not match its tensor");
    for (const kir::Term& t : tile_terms(op.map, tile, strides, parts)) off.push_back(t);
    return {kir::Place::Kind::Tensor, int(i), op.name, off, tile, std::vector<int64_t>(strides.begin() + long(parts), strides.end())};
  }

  std::string label(const BlockOp& op) const {
    switch (op.kind) {
      case BlockOp::Kind::Load: return op.name + " = load " + op.tensor;
      case BlockOp::Kind::Compute: return op.name + " = " + op_name(op.op);
      case BlockOp::Kind::Accumulate: return op.name + " = " + sgraph::acc_name(op.acc);
      case BlockOp::Kind::Save: return "save " + op.name;
    }
    return op.name;
  }

  // The statement of op i; records where its value lives for the ops after it.
  kir::Stmt statement(size_t i) {
    const BlockOp& op = k_.ops[i];
    kir::Stmt s;
    s.value = int(i);
    s.name = op.name;
    s.label = label(op);
    for (int o : op.operands) s.in.push_back(places_[size_t(o)]);
    switch (op.kind) {
      case BlockOp::Kind::Load:
        if (staged_as_stored(i)) {  // copied as it lies, read back transposed
          s.kind = kir::Stmt::Kind::Stage;
          kir::Place box = load_box(i);
          box.shape = last_two_swapped(box.shape), box.strides = last_two_swapped(box.strides);
          s.in = {box};
          const std::vector<int64_t> stored = last_two_swapped(shape_[i]);
          s.out = {kir::Place::Kind::Tile, int(i), "", {}, stored, dense_strides(stored)};
          places_[i] = {kir::Place::Kind::Tile, int(i), "", {}, shape_[i], last_two_swapped(dense_strides(stored))};
        } else if (staged(i)) {
          s.kind = kir::Stmt::Kind::Stage;
          s.in = {load_box(i)};
          s.out = places_[i] = tile(i);
        } else {
          s.kind = kir::Stmt::Kind::Bind;
          s.out = load_box(i);
          places_[i] = {kir::Place::Kind::Bound, int(i), op.tensor, {}, s.out.shape, s.out.strides};
        }
        break;
      case BlockOp::Kind::Compute: {
        s.kind = kir::Stmt::Kind::Compute;
        s.op = op.op;
        const OpClass cls = op_class(op.op);
        // (A split part has no statement: part_in_place.)
        const bool concat = cls == OpClass::Concat;
        if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && cls != OpClass::Const && !concat)
          fail_("op '" + op.name + "': cannot lower '" + op_name(op.op) + "' in a block");
        if (cls == OpClass::Const) s.constant = op.attrs.constant.value(bindings_);
        s.finite_shift = sgraph::shifts_by_own_max(k_, i);
        if (cls == OpClass::Reduce || concat) s.axis = normalized_axis(op.attrs.axis, s.in.at(0).shape.size(), fail_, "op '" + op.name + "'");
        s.keepdims = op.attrs.keepdims;
        const int u = direct_[i];
        if (u >= 0 && k_.ops[size_t(u)].kind == BlockOp::Kind::Accumulate) {
          s.out = tile(size_t(u));
          s.into_accumulator = true;
        } else if (u >= 0) {
          s.out = save_box(size_t(u));
        } else {
          s.out = tile(i);
        }
        places_[i] = s.out;
        break;
      }
      case BlockOp::Kind::Accumulate:
        s.kind = kir::Stmt::Kind::Accumulate;
        s.acc = op.acc;
        if (op.acc == sgraph::AccKind::Rms) s.axis = rms_axis(i);
        s.out = places_[i] = tile(i);
        if (op.acc == sgraph::AccKind::Rescaled) {
          const std::vector<int64_t>& m = shape_[size_t(op.operands[1])];
          for (int j = 0; j < 3; ++j) s.in.push_back({kir::Place::Kind::Tile, rescaled_.at(i) + j, "", {}, m, dense_strides(m)});
        }
        break;
      case BlockOp::Kind::Save:
        s.kind = kir::Stmt::Kind::Save;
        s.out = save_box(i);
        break;
    }
    return s;
  }

  // Each body matmul that reads a loaded B learns the B the next one reads; the last one, the
  // first one's in the next iteration. Only where two or more such matmuls share the body.
  void link_prefetches() {
    std::vector<kir::Stmt*> loaded_b;
    for (kir::Stmt& s : out_.body)
      if (s.kind == kir::Stmt::Kind::Compute && s.op == Op::Matmul && s.in.size() == 2 &&
          k_.ops[size_t(k_.ops[size_t(s.value)].operands[1])].kind == BlockOp::Kind::Load &&
          k_.ops[size_t(k_.ops[size_t(s.value)].operands[1])].view.empty())
        loaded_b.push_back(&s);
    if (loaded_b.size() < 2) return;
    auto b_of = [&](const kir::Stmt* s) { return load_box(size_t(k_.ops[size_t(s->value)].operands[1])); };
    for (size_t j = 0; j + 1 < loaded_b.size(); ++j) loaded_b[j]->next_b = b_of(loaded_b[j + 1]);
    loaded_b.back()->next_b = b_of(loaded_b.front());
    loaded_b.back()->next_iteration = true;
  }

  const sgraph::CustomKernel& k_;
  const std::vector<sgraph::TileInfo>& tiles_;
  const kir::Program& program_;
  const LowerOptions& options_;
  Failure fail_;
  size_t n_;
  std::vector<std::vector<int64_t>> shape_;
  std::vector<std::vector<size_t>> uses_;
  std::vector<bool> folded_;  // an accumulator or save done by the op that computes its operand
  std::vector<int> direct_;   // the accumulator or save a compute op writes into, or -1
  std::vector<kir::Place> places_;
  std::map<size_t, int> rescaled_;  // a rescaled accumulator -> the value of its first extra tile
  const DimBindings& bindings_;
  kir::CustomKernel out_;
};

// A reshape or transpose library kernel: a copy of its input, read through its view (or the
// transpose's permutation), into the output in the row-major order of what it reads. A reshape
// keeps that order, so the output is written densely at the read shape.
kir::Stmt layout_copy(const sgraph::LibraryKernel& lib, const kir::Program& program, const Failure& fail) {
  if (lib.inputs.size() != 1) fail("library kernel '" + lib.output + "' (" + op_name(lib.op) + ") takes 1 input");
  kir::Stmt s;
  s.kind = kir::Stmt::Kind::Save;
  s.name = lib.output;
  s.label = lib.output + " = " + op_name(lib.op);
  kir::Place in = tensor_place(program.tensor(lib.inputs[0]));
  const std::vector<int>& view = op_class(lib.op) == OpClass::Transpose ? lib.attrs.perm : lib.view(0);
  if (!view.empty()) {
    in.strides = sgraph::view_dims(in.strides, view, int64_t(0));
    in.shape = sgraph::view_dims(in.shape, view, int64_t(1));
  }
  s.out = tensor_place(program.tensor(lib.output));
  if (element_count(in.shape) != element_count(s.out.shape)) fail("library kernel '" + lib.output + "': a reshape changes the element count");
  s.out.shape = in.shape;
  s.out.strides = dense_strides(in.shape);
  s.in.push_back(std::move(in));
  return s;
}

kir::Stmt library_statement(const sgraph::LibraryKernel& lib, const kir::Program& program, const Failure& fail) {
  kir::Stmt s;
  s.kind = kir::Stmt::Kind::Compute;
  s.op = lib.op;
  s.name = lib.output;
  s.label = lib.output + " = " + op_name(lib.op);
  const OpClass cls = op_class(lib.op);
  if (sgraph::is_layout(lib.op)) return layout_copy(lib, program, fail);
  if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce)
    fail("library kernel '" + lib.output + "': cannot lower op '" + op_name(lib.op) + "'");
  const size_t arity = size_t(op_info(lib.op).arity);
  if (lib.inputs.size() != arity)
    fail("library kernel '" + lib.output + "' (" + op_name(lib.op) + ") takes " + std::to_string(arity) + " inputs, not " +
         std::to_string(lib.inputs.size()));
  for (size_t i = 0; i < lib.inputs.size(); ++i) {
    kir::Place in = tensor_place(program.tensor(lib.inputs[i]));
    if (!lib.view(i).empty()) {  // read in place: the view's shape over the tensor's own strides
      in.strides = sgraph::view_dims(in.strides, lib.view(i), int64_t(0));
      in.shape = sgraph::view_dims(in.shape, lib.view(i), int64_t(1));
    }
    s.in.push_back(std::move(in));
  }
  s.out = tensor_place(program.tensor(lib.output));
  if (cls == OpClass::Reduce) s.axis = normalized_axis(lib.attrs.axis, s.in[0].shape.size(), fail, "library kernel '" + lib.output + "'");
  s.keepdims = lib.attrs.keepdims;
  return s;
}

// Every place in a reshape's output reads the tensor it reshapes instead (or, where the graph
// returns the reshape, every place in the tensor it reshapes is the output's): both are dense and
// row-major with the same elements, so a place's offsets and strides (at its own tensor's shape)
// are the same in the other. The tensor each entry names leaves the program.
void read_reshapes_in_place(kir::Program& p, const std::map<std::string, std::string>& in_place) {
  if (in_place.empty()) return;
  auto source = [&](std::string name) {
    for (auto it = in_place.find(name); it != in_place.end(); it = in_place.find(name)) name = it->second;
    return name;
  };
  auto retarget = [&](kir::Stmt& s) {
    for (kir::Place& place : s.in) place.tensor = source(place.tensor);
    s.out.tensor = source(s.out.tensor);
    if (s.kind == kir::Stmt::Kind::Save) s.name = source(s.name);
    if (s.next_b) s.next_b->tensor = source(s.next_b->tensor);
  };
  auto retargeted = [&](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const std::string& n : names)
      if (std::find(out.begin(), out.end(), source(n)) == out.end()) out.push_back(source(n));
    return out;
  };
  for (kir::Kernel& k : p.kernels) {
    if (k.custom)
      for (auto* phase : {&k.block.before, &k.block.body, &k.block.after})
        for (kir::Stmt& s : *phase) retarget(s);
    else
      retarget(k.library);
    k.reads = retargeted(k.reads);
    k.writes = retargeted(k.writes);
  }
  std::erase_if(p.tensors, [&](const kir::Tensor& t) { return in_place.count(t.name) > 0; });
}

}  // namespace

kir::Program lower(const sgraph::Instance& inst, const LowerOptions& options) {
  const Failure fail(options.who);
  const sgraph::SGraph& g = inst.graph;
  if (!g.is_concrete()) fail("the graph has open map choices");
  if (!inst.analysis.ok()) fail("the graph is not valid: " + inst.analysis.errors.front());
  kir::Program p;
  auto add = [&](const std::string& name, const Type& type) {
    for (const kir::Tensor& t : p.tensors)
      if (t.name == name) return;
    p.tensors.push_back({name, concrete_shape(type.shape, inst.bindings), type.dtype});
  };
  for (const sgraph::TensorDecl& in : g.inputs) add(in.name, in.type);
  p.inputs = p.tensors.size();
  for (const sgraph::Kernel& k : g.kernels)
    for (const std::string& out : sgraph::kernel_outputs(k)) {
      auto it = inst.analysis.tensors.find(out);
      if (it == inst.analysis.tensors.end()) fail("no type for device tensor '" + out + "'");
      add(out, it->second);
    }
  p.outputs = g.outputs;
  std::map<std::string, std::string> in_place;  // a reshape read in place -> the tensor it reads
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const sgraph::Kernel& kernel = g.kernels[k];
    if (!kernel.custom && sgraph::reshapes_in_place(g, inst.analysis, kernel.library)) {
      const std::string& from = kernel.library.inputs[0];
      const std::string& to = kernel.library.output;
      const bool returned = std::find(g.outputs.begin(), g.outputs.end(), to) != g.outputs.end();
      if (returned) in_place[from] = to;  // what the kernels wrote to `from` they write to the output
      else in_place[to] = from;
      continue;
    }
    kir::Kernel out;
    out.custom = kernel.custom;
    out.reads = sgraph::kernel_inputs(kernel);
    out.writes = sgraph::kernel_outputs(kernel);
    if (kernel.custom) out.block = CustomLowering(kernel.block, inst.analysis.tiles[k], inst.bindings, p, options).run();
    else out.library = library_statement(kernel.library, p, fail);
    p.kernels.push_back(std::move(out));
  }
  read_reshapes_in_place(p, in_place);
  return p;
}

std::string offset_text(const kir::Offset& offset, const std::string& loop, const std::string& suffix) {
  std::string s;
  for (const kir::Term& t : offset) {
    const std::string var = t.block < 0 ? loop : std::string("b").append(std::to_string(t.block));
    if (var == "0") continue;
    if (!s.empty()) s += " + ";
    s.append(var).append(" * ").append(std::to_string(t.scale)).append(suffix);
  }
  return s.empty() ? "0" : s;
}

}  // namespace prism::backend
