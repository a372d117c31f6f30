#include "engine/search/plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace prism::search {

namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  }
  void join(int a, int b) { parent[size_t(find(a))] = find(b); }
};

int axis_in(const Indices& ix, int value, int cls) {
  if (cls < 0) return -1;
  const auto& of = ix.of[size_t(value)];
  for (size_t a = 0; a < of.size(); ++a)
    if (of[a] == cls) return int(a);
  return -1;
}

int axes_in(const Indices& ix, int value, int cls) {
  return int(std::count(ix.of[size_t(value)].begin(), ix.of[size_t(value)].end(), cls));
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

int Indices::reduced_by(const Dag& dag, int value) const {
  const DagValue& v = dag.values[size_t(value)];
  if (is_reduction(v.op)) return of[size_t(v.operands[0])][size_t(v.axis)];
  if (v.op == Op::Matmul) {
    const auto& a = of[size_t(v.operands[0])];
    return a.back();
  }
  return -1;
}

Indices analyze_indices(const Dag& dag) {
  const Dim one(1);
  std::vector<int> offset;
  int total = 0;
  for (const DagValue& v : dag.values) {
    offset.push_back(total);
    total += int(v.type.shape.size());
  }
  UnionFind uf{size_t(total)};
  std::vector<int> reduced_axes, whole_axes;  // node ids
  auto node = [&](int v, size_t axis) { return offset[size_t(v)] + int(axis); };
  auto big = [&](int v, size_t axis) { return dag.values[size_t(v)].type.shape[axis] != one; };
  for (int i = dag.num_inputs; i < int(dag.values.size()); ++i) {
    const DagValue& v = dag.values[size_t(i)];
    const size_t r = v.type.shape.size();
    if (is_reduction(v.op)) {
      for (size_t a = 0; a < r; ++a)
        if (int(a) != v.axis && big(i, a)) uf.join(node(i, a), node(v.operands[0], a));
      reduced_axes.push_back(node(v.operands[0], size_t(v.axis)));
      continue;
    }
    if (is_data_movement(v.op)) {  // its own axis is a new class, kept whole with its operands'
      for (size_t a = 0; a < r; ++a)
        for (int o : v.operands) {
          if (int(a) == v.axis) whole_axes.push_back(node(o, a));
          else if (big(i, a) && big(o, a)) uf.join(node(i, a), node(o, a));
        }
      whole_axes.push_back(node(i, size_t(v.axis)));
      continue;
    }
    const size_t pass = v.op == Op::Matmul ? r - 2 : r;  // axes that pass through elementwise
    for (size_t a = 0; a < pass; ++a)
      for (int o : v.operands)  // a scalar operand has no axes to join
        if (dag.values[size_t(o)].type.shape.size() == r && big(i, a) && big(o, a)) uf.join(node(i, a), node(o, a));
    if (v.op == Op::Matmul) {
      int x = v.operands[0], y = v.operands[1];
      if (big(i, r - 2)) uf.join(node(i, r - 2), node(x, r - 2));
      if (big(i, r - 1)) uf.join(node(i, r - 1), node(y, r - 1));
      uf.join(node(x, r - 1), node(y, r - 2));
      reduced_axes.push_back(node(x, r - 1));
    }
  }
  Indices ix;
  std::vector<int> cls_of_root(size_t(total), -1);
  for (int v = 0; v < int(dag.values.size()); ++v) {
    std::vector<int> row;
    for (size_t a = 0; a < dag.values[size_t(v)].type.shape.size(); ++a) {
      if (!big(v, a)) {
        row.push_back(-1);
        continue;
      }
      int root = uf.find(node(v, a));
      if (cls_of_root[size_t(root)] < 0) {
        cls_of_root[size_t(root)] = ix.count();
        ix.size.push_back(dag.values[size_t(v)].type.shape[a]);
        ix.reduced.push_back(false);
        ix.whole.push_back(false);
      }
      row.push_back(cls_of_root[size_t(root)]);
    }
    ix.of.push_back(row);
  }
  for (int n : reduced_axes) {
    int c = cls_of_root[size_t(uf.find(n))];
    if (c >= 0) ix.reduced[size_t(c)] = true;
  }
  for (int n : whole_axes) {
    int c = cls_of_root[size_t(uf.find(n))];
    if (c >= 0) ix.whole[size_t(c)] = true;
  }
  return ix;
}

std::vector<Plan> enumerate_plans(const Indices& ix) {
  auto cuttable = [&](int c) { return ix.whole.empty() || !ix.whole[size_t(c)]; };
  std::vector<std::vector<int>> grids = {{}};
  for (int a = 0; a < ix.count(); ++a) {
    if (!cuttable(a)) continue;
    grids.push_back({a});
    for (int b = a + 1; b < ix.count(); ++b)
      if (cuttable(b)) grids.push_back({a, b});
  }
  std::vector<Plan> plans;
  for (const auto& g : grids) {
    plans.push_back({g, -1});
    for (int c = 0; c < ix.count(); ++c)
      if (ix.reduced[size_t(c)] && cuttable(c)) plans.push_back({g, c});
  }
  return plans;
}

std::optional<Family> build_family(const Dag& dag, const Indices& ix, const Plan& plan, const Program& program,
                                   const SearchLimits& limits, std::string& why) {
  using sgraph::BlockOp;
  using sgraph::Choice;
  const int n = int(dag.values.size()), L = plan.loop;
  const std::vector<int> outs = dag.outputs();
  const int sink = outs.front();  // with a combining kernel, the only output
  auto is_output = [&](int v) { return std::find(outs.begin(), outs.end(), v) != outs.end(); };
  int C = -1;  // the class of the cross-block reduction
  std::vector<int> data_parallel;
  for (int c : plan.grid) {
    if (!ix.reduced[size_t(c)]) {
      data_parallel.push_back(c);
      continue;
    }
    if (C >= 0) return why = "two cross-block reductions", std::nullopt;
    C = c;
  }
  enum Phase { Inv, Walk, After };
  std::vector<Phase> phase(size_t(n), Inv);
  std::vector<int> kernel(size_t(n), 0);
  std::vector<bool> partial(size_t(n), false);  // a block partial of the cross-block reduction
  std::vector<Dim> split(size_t(n), Dim(1));
  std::vector<bool> used_in_k0(size_t(n), false), read_by_k1(size_t(n), false);
  // Online softmax: a max that the loop or the cross-block grid cuts (a "split max") may be
  // subtracted inside the pieces, each piece using its own max; local[v] is that max for a value
  // computed per piece relative to it (x - max, then exp, then linear ops), and rescaled[v] for
  // a sum or matmul over the cut class of such a value, whose pieces are rescaled to the overall
  // max when they are combined (rescaled_sum_accumulate; kernel 2 for the cross-block grid).
  enum Rel { Plain, Shifted, Scaled };
  std::vector<Rel> rel(size_t(n), Plain);
  std::vector<int> local(size_t(n), -1), rescaled(size_t(n), -1);
  std::vector<bool> split_max(size_t(n), false);
  int accumulators = 0;
  for (int v = 0; v < n; ++v) {
    const DagValue& d = dag.values[size_t(v)];
    if (is_leaf(d)) {
      phase[size_t(v)] = axis_in(ix, v, L) >= 0 ? Walk : Inv;
      continue;
    }
    const int r = ix.reduced_by(dag, v);
    // The relation of v to a split max (none, x - max, or exp(x - max) times plain factors).
    int base = -1;
    bool region_op = false;
    for (int o : d.operands)
      if (rel[size_t(o)] != Plain) base = local[size_t(o)];
    if (d.op == Op::Sub && split_max[size_t(d.operands[1])] && rel[size_t(d.operands[0])] == Plain &&
        axis_in(ix, d.operands[0], ix.reduced_by(dag, d.operands[1])) >= 0) {
      base = d.operands[1];
      rel[size_t(v)] = Shifted;
      region_op = true;
    } else if (base >= 0) {
      const int cut = ix.reduced_by(dag, base);
      auto is = [&](size_t k, Rel want) { return k < d.operands.size() && rel[size_t(d.operands[k])] == want; };
      const bool plain1 = d.operands.size() > 1 && rel[size_t(d.operands[1])] == Plain;
      if (d.op == Op::Exp && is(0, Shifted)) rel[size_t(v)] = Scaled;
      else if (d.op == Op::Neg && is(0, Scaled)) rel[size_t(v)] = Scaled;
      else if ((d.op == Op::Mul && ((is(0, Scaled) && plain1) || (is(1, Scaled) && is(0, Plain)))) || (d.op == Op::Div && is(0, Scaled) && plain1))
        rel[size_t(v)] = Scaled;
      else if ((d.op == Op::Add || d.op == Op::Sub) && is(0, Scaled) && is(1, Scaled) && local[size_t(d.operands[1])] == base &&
               local[size_t(d.operands[0])] == base)
        rel[size_t(v)] = Scaled;
      // A sum along the max's axis, or a matmul contracting it (then the max's axis is the last).
      else if (r == cut && ((d.op == Op::Sum && is(0, Scaled) && d.axis == dag.values[size_t(base)].axis) ||
                            (d.op == Op::Matmul && is(0, Scaled) && plain1 && dag.values[size_t(base)].axis + 1 == int(d.type.shape.size()))))
        rescaled[size_t(v)] = base;
      else
        return why = "a value depends on a cut max in a way the pieces cannot be rescaled", std::nullopt;
      if (rescaled[size_t(v)] < 0) region_op = true;
    }
    if (region_op) local[size_t(v)] = base;
    bool walk = false, after = false, k1 = false;
    for (int o : d.operands) {
      if (region_op && o == base) continue;  // read as the piece's own max, in the body
      walk |= phase[size_t(o)] == Walk;
      after |= phase[size_t(o)] == After;
      k1 |= partial[size_t(o)] || kernel[size_t(o)] == 1;
    }
    if (region_op && k1) return why = "the combining kernel would read a value other than the block partials", std::nullopt;
    if (walk && after) return why = "a value after the loop meets a loop-body value", std::nullopt;
    if (k1) {
      kernel[size_t(v)] = 1;
      for (int o : d.operands) {
        if (dag.values[size_t(o)].op == Op::Const) continue;  // a constant is made where it is used
        if (!partial[size_t(o)] && kernel[size_t(o)] != 1)
          return why = "the combining kernel would read a value other than the block partials", std::nullopt;
        if (partial[size_t(o)]) read_by_k1[size_t(o)] = true;
      }
      phase[size_t(v)] = After;
      continue;
    }
    for (int o : d.operands) used_in_k0[size_t(o)] = true;
    if (r >= 0 && r == L && !region_op) {
      ++accumulators;
      split[size_t(v)] = split[size_t(v)] * Dim::symbol("F1");
      phase[size_t(v)] = After;
    } else if (region_op && ix.reduced_by(dag, base) == L) {
      phase[size_t(v)] = Walk;  // per iteration, relative to the iteration's own max
    } else {
      phase[size_t(v)] = walk ? Walk : after ? After : Inv;
    }
    if (r >= 0 && r == C && !region_op) {
      if (d.op != Op::Sum && d.op != Op::Matmul && d.op != Op::Max) return why = "a cross-block reduction that is not a sum or a max", std::nullopt;
      partial[size_t(v)] = true;
      const int g = int(std::find(plan.grid.begin(), plan.grid.end(), C) - plan.grid.begin());
      split[size_t(v)] = split[size_t(v)] * Dim::symbol("g" + std::to_string(g + 1));
    }
    if (d.op == Op::Max && r >= 0 && (r == L || r == C)) split_max[size_t(v)] = true;
    if (rescaled[size_t(v)] >= 0 && partial[size_t(v)]) read_by_k1[size_t(rescaled[size_t(v)])] = true;  // kernel 2 rescales by it
  }
  for (int o : outs) {
    if (phase[size_t(o)] == Walk) return why = "the output would be saved inside the loop", std::nullopt;
    if (local[size_t(o)] >= 0) return why = "the output would be relative to each piece's own max", std::nullopt;
  }
  if (outs.size() > 1 && C >= 0) return why = "several outputs beside a cross-block reduction", std::nullopt;
  if (accumulators > limits.max_accumulators) return why = "more accumulators than allowed", std::nullopt;
  const int kernels = C >= 0 ? 2 : 1;
  if (kernels > limits.max_kernels) return why = "more kernels than allowed", std::nullopt;
  for (int c : data_parallel)
    for (int o : outs)
      if (axis_in(ix, o, c) < 0) return why = "a grid dim that lays out no output dim", std::nullopt;
  std::vector<int> saved;  // kernel-0 values saved (the outputs, or the block partials kernel 1 reads)
  if (C < 0) saved = outs;
  for (int v = 0; v < n; ++v)
    if (partial[size_t(v)] && (read_by_k1[size_t(v)] || v == sink)) saved.push_back(v);
  for (int v : saved)
    for (int c : data_parallel)
      if (axis_in(ix, v, c) < 0) return why = "a grid dim would stack copies of a block partial", std::nullopt;
  auto conflict = [&](int v) {
    for (int c : plan.grid)
      if (axes_in(ix, v, c) > 1) return true;
    return L >= 0 && axes_in(ix, v, L) > 1;
  };
  for (int v = 0; v < n; ++v)
    if ((used_in_k0[size_t(v)] && dag.values[size_t(v)].op == Op::Input) || is_output(v) || partial[size_t(v)])
      if (conflict(v)) return why = "a tensor with two axes in one grid or loop class", std::nullopt;

  // ---- kernel 0 ----------------------------------------------------------------------------
  // Output j is saved as O (one output) or O<j+1>, at the program's dtype for it.
  auto output_name = [&](size_t j) { return outs.size() == 1 ? std::string("O") : "O" + std::to_string(j + 1); };
  const Value& out = program.value(program.outputs.at(0));
  sgraph::SGraph g;
  for (int id : program.inputs) g.inputs.push_back({program.value(id).name, program.value(id).type});
  sgraph::Kernel k0;
  k0.custom = true;
  for (size_t i = 0; i < plan.grid.size(); ++i) k0.block.grid.push_back(Dim::symbol("g" + std::to_string(i + 1)));
  if (L >= 0) k0.block.loop = Dim::symbol("F1");
  auto map_of = [&](int v, const std::vector<int>& grid, int offset, bool place_cross) {
    sgraph::Map m;
    for (int c : grid) {
      int a = (c == C && !place_cross) ? -1 : axis_in(ix, v, c);
      m.grid.push_back(a < 0 ? Choice::none() : Choice::of(a + offset));
    }
    return m;
  };
  std::vector<int> at(size_t(n), -1), piece_at(size_t(n), -1);
  auto& ops0 = k0.block.ops;
  auto push = [](std::vector<BlockOp>& ops, BlockOp op) {
    ops.push_back(std::move(op));
    return int(ops.size()) - 1;
  };
  // A constant leaf: a block op of the kernel that reads it.
  auto constant = [&](std::vector<BlockOp>& ops, int v) {
    BlockOp c;
    c.kind = BlockOp::Kind::Compute;
    c.name = "c" + std::to_string(v);
    c.op = Op::Const;
    c.attrs.constant = dag.values[size_t(v)].constant;
    return push(ops, c);
  };
  for (int v = 0; v < dag.num_inputs; ++v) {
    if (!used_in_k0[size_t(v)]) continue;
    if (dag.values[size_t(v)].op == Op::Const) {
      at[size_t(v)] = constant(ops0, v);
      continue;
    }
    BlockOp load;
    load.kind = BlockOp::Kind::Load;
    load.name = "x" + std::to_string(v);
    load.tensor = dag.values[size_t(v)].name;
    load.view = dag.values[size_t(v)].view;
    load.map = map_of(v, plan.grid, 0, true);
    int la = axis_in(ix, v, L);
    load.map.loop = la < 0 ? Choice::none() : Choice::of(la);
    at[size_t(v)] = push(ops0, load);
  }
  std::vector<std::string> acc_names, after_names, k1_names;
  for (int v = dag.num_inputs; v < n; ++v) {
    if (kernel[size_t(v)] != 0) continue;
    const DagValue& d = dag.values[size_t(v)];
    const int r = ix.reduced_by(dag, v);
    BlockOp op;
    op.name = "v" + std::to_string(v);
    // A value relative to a cut max reads the piece's own max (the op before its accumulator).
    for (int o : d.operands) op.operands.push_back(o == local[size_t(v)] ? piece_at[size_t(o)] : at[size_t(o)]);
    if (r >= 0 && r == L && d.op == Op::Rms) {
      op.kind = BlockOp::Kind::Accumulate;
      op.acc = sgraph::AccKind::Rms;
      op.attrs.axis = d.axis;
      at[size_t(v)] = push(ops0, op);
      acc_names.push_back("rms");
      continue;
    }
    op.kind = BlockOp::Kind::Compute;
    op.op = d.op;
    op.attrs = dag_attrs(d);
    piece_at[size_t(v)] = at[size_t(v)] = push(ops0, op);
    if (r >= 0 && r == L) {
      BlockOp acc;
      acc.kind = BlockOp::Kind::Accumulate;
      acc.name = "a" + std::to_string(v);
      acc.acc = d.op == Op::Max ? sgraph::AccKind::Max : sgraph::AccKind::Sum;
      acc.operands = {at[size_t(v)]};
      if (rescaled[size_t(v)] >= 0) {
        acc.acc = sgraph::AccKind::Rescaled;
        acc.operands.push_back(piece_at[size_t(rescaled[size_t(v)])]);
      }
      at[size_t(v)] = push(ops0, acc);
      acc_names.push_back(rescaled[size_t(v)] >= 0 ? "rescaled " + std::string(op_name(d.op)) : op_name(d.op));
    } else if (phase[size_t(v)] == After) {
      after_names.push_back(op_name(d.op));
    }
  }
  for (size_t i = 0; i < saved.size(); ++i) {
    const int v = saved[i];
    BlockOp save;
    save.kind = BlockOp::Kind::Save;
    save.name = C < 0 ? output_name(i) : "P" + std::to_string(i + 1);
    save.dtype = C < 0 ? program.value(program.outputs.at(i)).type.dtype : DType::F32;
    save.map = map_of(v, plan.grid, 0, false);
    save.map.loop = Choice::none();
    save.operands = {at[size_t(v)]};
    push(ops0, save);
  }
  g.kernels.push_back(std::move(k0));

  // ---- kernel 1: sums the block partials, computes the rest --------------------------------
  if (C >= 0) {
    sgraph::Kernel k1;
    k1.custom = true;
    for (size_t i = 0; i < data_parallel.size(); ++i) k1.block.grid.push_back(Dim::symbol("g" + std::to_string(plan.grid.size() + i + 1)));
    auto& ops1 = k1.block.ops;
    std::vector<int> at1(size_t(n), -1), loaded(size_t(n), -1);
    for (size_t i = 0; i < saved.size(); ++i) {
      const int v = saved[i];
      BlockOp load;
      load.kind = BlockOp::Kind::Load;
      load.name = "p" + std::to_string(i + 1);
      load.tensor = "P" + std::to_string(i + 1);
      load.map = map_of(v, data_parallel, 1, true);
      load.map.loop = Choice::none();
      loaded[size_t(v)] = push(ops1, load);
    }
    // Each partial combined over the partial axis: a max by max, a sum by sum, and a sum
    // relative to its block's max by the sum of the partials rescaled to the overall max.
    auto compute = [&](const std::string& name, Op o, std::vector<int> operands, bool reduce) {
      BlockOp c;
      c.kind = BlockOp::Kind::Compute;
      c.name = name;
      c.op = o;
      if (reduce) {
        c.attrs.axis = 0;
        c.attrs.keepdims = false;
      }
      c.operands = std::move(operands);
      return push(ops1, c);
    };
    for (size_t i = 0; i < saved.size(); ++i) {
      const int v = saved[i];
      if (rescaled[size_t(v)] < 0)
        at1[size_t(v)] = compute("s" + std::to_string(i + 1), dag.values[size_t(v)].op == Op::Max ? Op::Max : Op::Sum, {loaded[size_t(v)]}, true);
    }
    std::map<int, int> factor;  // per cut max: exp(block max - overall max), made once
    for (size_t i = 0; i < saved.size(); ++i) {
      const int v = saved[i], base = rescaled[size_t(v)];
      if (base < 0) continue;
      const std::string name = "s" + std::to_string(i + 1);
      if (!factor.count(base)) {
        const int shift = compute(name + "d", Op::Sub, {loaded[size_t(base)], at1[size_t(base)]}, false);
        factor[base] = compute(name + "e", Op::Exp, {shift}, false);
      }
      at1[size_t(v)] = compute(name, Op::Sum, {compute(name + "w", Op::Mul, {loaded[size_t(v)], factor[base]}, false)}, true);
    }
    for (int v = dag.num_inputs; v < n; ++v) {
      if (kernel[size_t(v)] != 1) continue;
      const DagValue& d = dag.values[size_t(v)];
      for (int o : d.operands)
        if (dag.values[size_t(o)].op == Op::Const && at1[size_t(o)] < 0) at1[size_t(o)] = constant(ops1, o);
      BlockOp op;
      op.kind = BlockOp::Kind::Compute;
      op.name = "v" + std::to_string(v);
      op.op = d.op;
      op.attrs = dag_attrs(d);
      for (int o : d.operands) op.operands.push_back(at1[size_t(o)]);
      at1[size_t(v)] = push(ops1, op);
      k1_names.push_back(op_name(d.op));
    }
    BlockOp save;
    save.kind = BlockOp::Kind::Save;
    save.name = "O";
    save.dtype = out.type.dtype;
    save.map = map_of(sink, data_parallel, 0, true);
    save.map.loop = Choice::none();
    save.operands = {at1[size_t(sink)]};
    push(ops1, save);
    g.kernels.push_back(std::move(k1));
  }
  g.outputs.clear();
  for (size_t j = 0; j < outs.size(); ++j) g.outputs.push_back(output_name(j));

  // ---- summary -----------------------------------------------------------------------------
  std::vector<std::string> grid_text;
  for (size_t i = 0; i < plan.grid.size(); ++i)
    grid_text.push_back("g" + std::to_string(i + 1) + (plan.grid[i] == C ? " reduces " : " splits ") + ix.size[size_t(plan.grid[i])].str());
  std::string s = std::to_string(kernels) + (kernels == 1 ? " custom kernel: " : " custom kernels: ") + dag.ops_text();
  if (!grid_text.empty()) s += "; grid " + join(grid_text, ", ");
  if (L >= 0) s += "; loop F1 over " + ix.size[size_t(L)].str() + ", " + join(acc_names, "+") + " accumulated";
  if (!after_names.empty()) s += ", " + join(after_names, "+") + " after";
  const bool online = std::any_of(rescaled.begin(), rescaled.end(), [](int b) { return b >= 0; });
  if (C >= 0)
    s += std::string(online ? "; kernel 2 rescales the g partials to their overall max and sums them" : "; kernel 2 sums the g partials") +
         (k1_names.empty() ? std::string() : ", then " + join(k1_names, "+"));
  if (online) s += C >= 0 ? " (flash-decoding)" : " (online softmax)";
  // The data-parallel dims with kernel 0's and kernel 1's names for them (as the grids above).
  std::vector<GridCut> cuts;
  for (size_t i = 0; i < data_parallel.size(); ++i) {
    const size_t at = size_t(std::find(plan.grid.begin(), plan.grid.end(), data_parallel[i]) - plan.grid.begin());
    GridCut cut{Dim::symbol("g" + std::to_string(at + 1)), Dim::symbol("g" + std::to_string(plan.grid.size() + i + 1)), {}};
    for (int v = 0; v < n; ++v) cut.axis.push_back(axis_in(ix, v, data_parallel[i]));
    cuts.push_back(std::move(cut));
  }
  return Family{std::move(g), std::move(split), std::move(cuts), std::move(kernel), C >= 0, std::move(local), std::move(rescaled), s};
}

}  // namespace prism::search
