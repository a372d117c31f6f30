#include "engine/sgraph/evaluate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/infer_shapes.h"

namespace prism::sgraph {

namespace {

std::vector<Dim> dims_of(const std::vector<int64_t>& shape) { return std::vector<Dim>(shape.begin(), shape.end()); }

// One prism op on concrete tensors, through the reference interpreter: a program of the operands
// as inputs and the op. Results are rounded to `dtype` (f32 for tiles: no rounding).
Tensor apply(Op op, Attrs attrs, const std::vector<const Tensor*>& xs, DType dtype, const DimBindings& bindings,
             const std::vector<Type>& types, const CancelToken* cancel) {
  Program p;
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < xs.size(); ++i) {
    Value v;
    v.id = int(i);
    v.name = std::string("x").append(std::to_string(i));
    v.named = true;
    v.op = Op::Input;
    v.type = types[i];
    p.values.push_back(v);
    p.inputs.push_back(v.id);
    inputs[v.name] = *xs[i];
  }
  Inferred inf = infer_type(op, attrs, types);
  if (!inf.type) throw Error(Error::Kind::InvalidArgument, "evaluate: " + inf.error);
  Value r;
  r.id = int(xs.size());
  r.name = "r";
  r.op = op;
  r.attrs = attrs;
  for (size_t i = 0; i < xs.size(); ++i) r.operands.push_back(int(i));
  r.type = Type{dtype, inf.type->shape, false};
  p.values.push_back(r);
  p.outputs.push_back(r.id);
  return interpret(p, bindings, inputs, cancel).at(0);
}

// Copies the box of size `extent` at `from` in src to `to` in dst (same rank).
void copy_box(const Tensor& src, const std::vector<int64_t>& from, Tensor& dst, const std::vector<int64_t>& to,
              const std::vector<int64_t>& extent) {
  size_t rank = extent.size();
  if (rank == 0) {
    dst.data[0] = src.data[0];
    return;
  }
  auto ss = dense_strides(src.shape), ds = dense_strides(dst.shape);
  int64_t so = 0, d0 = 0;
  for (size_t i = 0; i < rank; ++i) {
    so += from[i] * ss[i];
    d0 += to[i] * ds[i];
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t total = checked_element_count(extent);
  int64_t row = extent[rank - 1];
  for (int64_t done = 0; done < total; done += row) {
    int64_t s = so, d = d0;
    for (size_t i = 0; i + 1 < rank; ++i) {
      s += idx[i] * ss[i];
      d += idx[i] * ds[i];
    }
    std::copy_n(src.data.data() + s, row, dst.data.data() + d);
    for (size_t i = rank - 1; i-- > 0;) {
      if (++idx[i] < extent[i]) break;
      idx[i] = 0;
    }
  }
}

class CustomRunner {
 public:
  CustomRunner(const CustomKernel& k, const std::vector<TileInfo>& tiles, const DimBindings& b, std::map<std::string, Tensor>& tensors,
               const CancelToken* cancel)
      : k_(k), tiles_(tiles), bindings_(b), tensors_(tensors), cancel_(cancel), values_(k.ops.size()) {
    for (const Dim& g : k.grid) grid_.push_back(g.evaluate_size(b));
    loop_ = k.loop_range().evaluate_size(b);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const BlockOp& op = k.ops[i];
      tile_shape_.push_back(tiles[i].type ? concrete_shape(tiles[i].type->shape, b) : std::vector<int64_t>{});
      if (op.kind == BlockOp::Kind::Save)  // in the view's dims until the kernel ends
        outputs_[op.name] = Tensor::zeros(op.dtype, view_dims(tile_shape_.back(), op.view, int64_t(1)));
    }
  }

  void run() {
    std::vector<int64_t> block(grid_.size(), 0);
    while (true) {
      if (cancel_) cancel_->check();
      run_block(block);
      size_t i = block.size();
      while (i-- > 0) {
        if (++block[i] < grid_[i]) break;
        block[i] = 0;
      }
      if (i == size_t(-1)) break;
    }
    for (const BlockOp& op : k_.ops)  // a save through a view: into the tensor's own dims
      if (op.kind == BlockOp::Kind::Save && !op.view.empty()) {
        Tensor& t = outputs_.at(op.name);
        t.data = view_elements(t.data, t.shape, inverse_view(op.view));
        t.shape = view_dims(t.shape, inverse_view(op.view), int64_t(1));
      }
    for (auto& [name, t] : outputs_) {
      round_all(t.dtype, t.data.data(), t.data.size());
      tensors_[name] = std::move(t);
    }
  }

 private:
  enum class Phase { Before, Body, After };

  Phase phase(size_t i) const {
    const BlockOp& op = k_.ops[i];
    if (op.kind == BlockOp::Kind::Accumulate) return Phase::Body;
    LoopRole r = tiles_[i].role;
    return r == LoopRole::Invariant ? Phase::Before : r == LoopRole::After ? Phase::After : Phase::Body;
  }

  void run_block(const std::vector<int64_t>& block) {
    for (size_t i = 0; i < k_.ops.size(); ++i)
      if (k_.ops[i].kind == BlockOp::Kind::Accumulate) start_accumulator(i);
    run_phase(Phase::Before, block, 0);
    for (int64_t f = 0; f < loop_; ++f) run_phase(Phase::Body, block, f);
    for (size_t i = 0; i < k_.ops.size(); ++i)
      if (k_.ops[i].kind == BlockOp::Kind::Accumulate) finish_accumulator(i);
    run_phase(Phase::After, block, 0);
  }

  void run_phase(Phase p, const std::vector<int64_t>& block, int64_t f) {
    for (size_t i = 0; i < k_.ops.size(); ++i) {
      if (phase(i) != p) continue;
      const BlockOp& op = k_.ops[i];
      switch (op.kind) {
        case BlockOp::Kind::Load: load(i, block, f); break;
        case BlockOp::Kind::Compute: compute(i); break;
        case BlockOp::Kind::Accumulate: accumulate(i); break;
        case BlockOp::Kind::Save: save(i, block, f); break;
      }
    }
  }

  // Where the tile of (block, iteration) starts along each data dim of a tensor under `map`.
  std::vector<int64_t> offsets(const Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& block, int64_t f) const {
    std::vector<int64_t> at(tile.size(), 0);
    for (size_t j = 0; j < tile.size(); ++j) {
      int64_t walk = map.loop.dim == int(j) ? loop_ : 1;
      for (size_t gi = 0; gi < map.grid.size(); ++gi)
        if (map.grid[gi].dim == int(j)) at[j] += block[gi] * tile[j] * walk;
      if (walk > 1) at[j] += f * tile[j];
    }
    return at;
  }

  void load(size_t i, const std::vector<int64_t>& block, int64_t f) {
    const BlockOp& op = k_.ops[i];
    const Tensor& src = op.view.empty() ? tensors_.at(op.tensor) : viewed(i);
    Tensor tile = Tensor::zeros(DType::F32, tile_shape_[i]);
    copy_box(src, offsets(op.map, tile.shape, block, f), tile, std::vector<int64_t>(tile.shape.size(), 0), tile.shape);
    values_[i] = std::move(tile);
  }

  // The tensor a load with a view reads, laid out in the view's dims (made once per kernel).
  const Tensor& viewed(size_t i) {
    auto it = viewed_.find(i);
    if (it != viewed_.end()) return it->second;
    const BlockOp& op = k_.ops[i];
    const Tensor& src = tensors_.at(op.tensor);
    Tensor out;
    out.dtype = src.dtype;
    out.shape = view_dims(src.shape, op.view, int64_t(1));
    out.data = view_elements(src.data, src.shape, op.view);
    return viewed_.emplace(i, std::move(out)).first->second;
  }

  void compute(size_t i) {
    const BlockOp& op = k_.ops[i];
    if (op.op == Op::Const) {
      values_[i] = Tensor::zeros(DType::F32, {});
      values_[i].data.assign(1, float(op.attrs.constant.value(bindings_)));
      return;
    }
    std::vector<const Tensor*> xs;
    std::vector<Type> types;
    for (int o : op.operands) {
      xs.push_back(&values_[size_t(o)]);
      types.push_back(Type{DType::F32, dims_of(values_[size_t(o)].shape), false});
    }
    Tensor finite_max;  // a max of -inf read as 0 (shifts_by_own_max)
    if (shifts_by_own_max(k_, i)) {
      finite_max = *xs[1];
      for (float& m : finite_max.data)
        if (m == -std::numeric_limits<float>::infinity()) m = 0;
      xs[1] = &finite_max;
    }
    values_[i] = apply(op.op, op.attrs, xs, DType::F32, {}, types, cancel_);
  }

  void start_accumulator(size_t i) {
    const BlockOp& op = k_.ops[i];
    Tensor t = Tensor::zeros(DType::F32, tile_shape_[i]);
    if (op.acc == AccKind::Max) std::fill(t.data.begin(), t.data.end(), -std::numeric_limits<float>::infinity());
    values_[i] = std::move(t);
    if (op.acc == AccKind::Rescaled) {
      Tensor m = Tensor::zeros(DType::F32, tile_shape_[size_t(op.operands[1])]);
      std::fill(m.data.begin(), m.data.end(), -std::numeric_limits<float>::infinity());
      running_max_[i] = std::move(m);
    }
  }

  // acc = acc * exp(M - M') + x * exp(m - M') with M' = max(M, m) per row of m (broadcast over x);
  // a running max still at -inf contributes nothing (exp(-inf - -inf) would be NaN).
  void rescale(size_t i, const Tensor& x, const Tensor& m) {
    Tensor& acc = values_[i];
    Tensor& run = running_max_.at(i);
    auto factor = [](float from, float to) { return from == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(from - to); };
    std::vector<float> keep(m.data.size()), take(m.data.size());
    for (size_t j = 0; j < m.data.size(); ++j) {
      const float next = std::max(run.data[j], m.data[j]);
      keep[j] = factor(run.data[j], next);
      take[j] = factor(m.data[j], next);
      run.data[j] = next;
    }
    // The row of m that element e of x reads: m's dims broadcast (size 1) or equal to x's.
    const size_t rank = x.shape.size(), offset = rank - m.shape.size();
    std::vector<int64_t> idx(rank, 0);
    for (size_t e = 0; e < x.data.size(); ++e) {
      size_t j = 0;
      for (size_t d = offset; d < rank; ++d) j = j * size_t(m.shape[d - offset]) + (m.shape[d - offset] == 1 ? 0 : size_t(idx[d]));
      acc.data[e] = acc.data[e] * keep[j] + x.data[e] * take[j];
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < x.shape[d]) break;
        idx[d] = 0;
      }
    }
  }

  void accumulate(size_t i) {
    const BlockOp& op = k_.ops[i];
    const Tensor& x = values_[size_t(op.operands[0])];
    Tensor& acc = values_[i];
    if (op.acc == AccKind::Rescaled) {
      rescale(i, x, values_[size_t(op.operands[1])]);
    } else if (op.acc == AccKind::Sum) {
      for (size_t e = 0; e < acc.data.size(); ++e) acc.data[e] += x.data[e];
    } else if (op.acc == AccKind::Max) {
      for (size_t e = 0; e < acc.data.size(); ++e)
        if (x.data[e] > acc.data[e] || std::isnan(x.data[e])) acc.data[e] = std::isnan(acc.data[e]) ? acc.data[e] : x.data[e];
    } else {
      size_t axis = size_t(rms_axis(i));
      int64_t outer = 1, inner = 1, n = x.shape[axis];
      for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
      for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t in = 0; in < inner; ++in) {
            float v = x.data[size_t((o * n + j) * inner + in)];
            acc.data[size_t(o * inner + in)] += v * v;
          }
    }
  }

  // rms: sqrt(sum of squares / count of elements seen along the axis over all iterations).
  void finish_accumulator(size_t i) {
    const BlockOp& op = k_.ops[i];
    if (op.acc != AccKind::Rms) return;
    const auto& xshape = tile_shape_[size_t(op.operands[0])];
    float count = float(xshape[size_t(rms_axis(i))] * loop_);
    for (float& v : values_[i].data) v = std::sqrt(v / count);
  }

  int rms_axis(size_t i) const {
    int rank = int(tile_shape_[size_t(k_.ops[i].operands[0])].size());
    int axis = k_.ops[i].attrs.axis;
    return axis < 0 ? axis + rank : axis;
  }

  void save(size_t i, const std::vector<int64_t>& block, int64_t f) {
    const BlockOp& op = k_.ops[i];
    const Tensor& x = values_[size_t(op.operands[0])];
    Tensor& out = outputs_.at(op.name);
    std::vector<int64_t> to;
    for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
      if (op.map.grid[gi].is_none()) to.push_back(block[gi]);
    size_t parts = to.size();
    for (int64_t o : offsets(op.map, x.shape, block, f)) to.push_back(o);
    std::vector<int64_t> extent(parts, 1), from(out.shape.size(), 0);
    extent.insert(extent.end(), x.shape.begin(), x.shape.end());
    Tensor view = x;  // the tile with the partial axes as leading 1s
    view.shape = extent;
    copy_box(view, from, out, to, extent);
  }

  const CustomKernel& k_;
  const std::vector<TileInfo>& tiles_;
  const DimBindings& bindings_;
  std::map<std::string, Tensor>& tensors_;
  std::map<size_t, Tensor> viewed_;
  const CancelToken* cancel_;
  std::vector<Tensor> values_;
  std::map<size_t, Tensor> running_max_;  // a rescaled accumulator's running max, by op
  std::vector<std::vector<int64_t>> tile_shape_;
  std::map<std::string, Tensor> outputs_;
  std::vector<int64_t> grid_;
  int64_t loop_ = 1;
};

}  // namespace

std::vector<Tensor> evaluate(const Instance& inst, const std::map<std::string, Tensor>& inputs, const CancelToken* cancel) {
  const SGraph& g = inst.graph;
  const Analysis& a = inst.analysis;
  std::map<std::string, Tensor> tensors;
  for (const TensorDecl& in : g.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) throw Error(Error::Kind::InvalidArgument, "no tensor given for input '" + in.name + "'");
    std::vector<int64_t> want = concrete_shape(in.type.shape, inst.bindings);
    if (it->second.shape != want)
      throw Error(Error::Kind::InvalidArgument, "input '" + in.name + "' has shape " + shape_text(it->second.shape) + " but the graph expects " +
                                                    shape_str(in.type.shape) + " = " + shape_text(want));
    Tensor t = it->second;
    if (t.dtype != in.type.dtype) {
      round_all(in.type.dtype, t.data.data(), t.data.size());
      t.dtype = in.type.dtype;
    }
    tensors[in.name] = std::move(t);
  }
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    if (cancel) cancel->check();
    const Kernel& kernel = g.kernels[k];
    if (kernel.custom) {
      CustomRunner(kernel.block, a.tiles[k], inst.bindings, tensors, cancel).run();
      continue;
    }
    const LibraryKernel& lib = kernel.library;
    std::vector<const Tensor*> xs;
    std::vector<Type> types;
    std::vector<Tensor> viewed(lib.inputs.size());  // inputs read through a view, copied
    for (size_t i = 0; i < lib.inputs.size(); ++i) {
      const Tensor& x = tensors.at(lib.inputs[i]);
      Type t = a.tensors.at(lib.inputs[i]);
      if (!lib.view(i).empty()) {
        viewed[i] = x;
        viewed[i].shape = view_dims(x.shape, lib.view(i), int64_t(1));
        viewed[i].data = view_elements(x.data, x.shape, lib.view(i));
        t.shape = view_shape(t.shape, lib.view(i));
      }
      xs.push_back(lib.view(i).empty() ? &x : &viewed[i]);
      types.push_back(std::move(t));
    }
    tensors[lib.output] = apply(lib.op, lib.attrs, xs, lib.dtype, inst.bindings, types, cancel);
  }
  std::vector<Tensor> out;
  for (const std::string& o : g.outputs) out.push_back(tensors.at(o));
  return out;
}

}  // namespace prism::sgraph
