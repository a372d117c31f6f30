// build_family (plan.h): a plan becomes an sGraph family in named steps over the state they
// share: place every value (its phase, its kernel, its relation to a cut max), check the
// structural rules, print kernel 0 and the combining kernel, and summarize.
#include <algorithm>
#include <map>

#include "engine/search/plan.h"
#include "engine/util/text.h"

namespace prism::search {

namespace {

using sgraph::BlockOp;
using sgraph::Choice;

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

int push(std::vector<BlockOp>& ops, BlockOp op) {
  ops.push_back(std::move(op));
  return int(ops.size()) - 1;
}

class FamilyBuilder {
 public:
  FamilyBuilder(const Dag& dag, const Indices& ix, const Plan& plan, const Program& program, const SearchLimits& limits)
      : dag_(dag), ix_(ix), plan_(plan), program_(program), limits_(limits), n_(int(dag.values.size())), L_(plan.loop),
        outs_(dag.outputs()), sink_(outs_.front()), phase_(size_t(n_), Inv), kernel_(size_t(n_), 0), partial_(size_t(n_), false),
        split_(size_t(n_), Dim(1)), used_in_k0_(size_t(n_), false), read_by_k1_(size_t(n_), false), rel_(size_t(n_), Plain),
        local_(size_t(n_), -1), rescaled_(size_t(n_), -1), split_max_(size_t(n_), false) {}

  std::optional<Family> build(std::string& why) {
    why = assign_grid();
    if (why.empty()) why = place_values();
    if (why.empty()) why = check_rules();
    if (!why.empty()) return std::nullopt;
    sgraph::SGraph g;
    for (int id : program_.inputs) g.inputs.push_back({program_.value(id).name, program_.value(id).type});
    g.kernels.push_back(block_kernel());
    if (C_ >= 0) g.kernels.push_back(combining_kernel());
    for (size_t j = 0; j < outs_.size(); ++j) g.outputs.push_back(output_name(j));
    std::string s = summary();
    return Family{std::move(g), std::move(split_), grid_cuts(), std::move(kernel_), C_ >= 0, std::move(local_), std::move(rescaled_), s};
  }

 private:
  enum Phase { Inv, Walk, After };
  // Online softmax: a max that the loop or the cross-block grid cuts (a "split max") may be
  // subtracted inside the pieces, each piece using its own max; local[v] is that max for a value
  // computed per piece relative to it (x - max, then exp, then linear ops), and rescaled[v] for
  // a sum or matmul over the cut class of such a value, whose pieces are rescaled to the overall
  // max when they are combined (rescaled_sum_accumulate; kernel 2 for the cross-block grid).
  enum Rel { Plain, Shifted, Scaled };

  bool is_output(int v) const { return std::find(outs_.begin(), outs_.end(), v) != outs_.end(); }
  // Output j is saved as O (one output) or O<j+1>, at the program's dtype for it.
  std::string output_name(size_t j) const { return output_tensor_name(program_, j); }
  // A device tensor the family writes, named apart from the program's inputs (an input called O).
  std::string tensor_name(const std::string& base) const { return unused_tensor_name(base, program_); }

  // The grid's classes: the data-parallel ones, and at most one reduced (C_, the cross-block
  // reduction).
  std::string assign_grid() {
    for (int c : plan_.grid) {
      if (!ix_.reduced[size_t(c)]) {
        data_parallel_.push_back(c);
        continue;
      }
      if (C_ >= 0) return "two cross-block reductions";
      C_ = c;
    }
    return "";
  }

  // v's relation to a split max (none, x - max, or exp(x - max) times plain factors): sets
  // rel_, rescaled_ and `base` (the max), and whether v is computed per piece (`region_op`).
  std::string relate_to_split_max(int v, int r, int& base, bool& region_op) {
    const DagValue& d = dag_.values[size_t(v)];
    for (int o : d.operands)
      if (rel_[size_t(o)] != Plain) base = local_[size_t(o)];
    if (d.op == Op::Sub && split_max_[size_t(d.operands[1])] && rel_[size_t(d.operands[0])] == Plain &&
        axis_in(ix_, d.operands[0], ix_.reduced_by(dag_, d.operands[1])) >= 0) {
      base = d.operands[1];
      rel_[size_t(v)] = Shifted;
      region_op = true;
      return "";
    }
    if (base < 0) return "";
    const int cut = ix_.reduced_by(dag_, base);
    auto is = [&](size_t k, Rel want) { return k < d.operands.size() && rel_[size_t(d.operands[k])] == want; };
    const bool plain1 = d.operands.size() > 1 && rel_[size_t(d.operands[1])] == Plain;
    if (d.op == Op::Exp && is(0, Shifted)) rel_[size_t(v)] = Scaled;
    else if (d.op == Op::Neg && is(0, Scaled)) rel_[size_t(v)] = Scaled;
    else if ((d.op == Op::Mul && ((is(0, Scaled) && plain1) || (is(1, Scaled) && is(0, Plain)))) || (d.op == Op::Div && is(0, Scaled) && plain1))
      rel_[size_t(v)] = Scaled;
    else if ((d.op == Op::Add || d.op == Op::Sub) && is(0, Scaled) && is(1, Scaled) && local_[size_t(d.operands[1])] == base &&
             local_[size_t(d.operands[0])] == base)
      rel_[size_t(v)] = Scaled;
    // A sum along the max's axis, or a matmul contracting it (then the max's axis is the last).
    else if (r == cut && ((d.op == Op::Sum && is(0, Scaled) && d.axis == dag_.values[size_t(base)].axis) ||
                          (d.op == Op::Matmul && is(0, Scaled) && plain1 && dag_.values[size_t(base)].axis + 1 == int(d.type.shape.size()))))
      rescaled_[size_t(v)] = base;
    else
      return "a value depends on a cut max in a way the pieces cannot be rescaled";
    if (rescaled_[size_t(v)] < 0) region_op = true;
    return "";
  }

  // A reduction over the cross-block class with no axis in a data-parallel grid dim's class,
  // computed from the leaves by elementwise ops that nothing else reads: kernel 0's blocks along
  // that dim would each save the same partial (a norm's statistic beside a matmul whose columns
  // the grid cuts). The combining kernel computes it instead, from the leaves loaded whole along
  // the reduced class (rms_linear's GEMV form): the elementwise ops it reads through (in DAG
  // order), with its leaves marked as kernel 1's loads; none where v is no such reduction.
  std::optional<std::vector<int>> cone_kernel0_would_copy(int v) {
    bool copied = false;
    for (int c : data_parallel_) copied = copied || axis_in(ix_, v, c) < 0;
    if (!copied) return std::nullopt;
    std::vector<int> cone, leaves;
    std::vector<int> stack(dag_.values[size_t(v)].operands);
    while (!stack.empty()) {
      const int o = stack.back();
      stack.pop_back();
      const DagValue& d = dag_.values[size_t(o)];
      if (is_leaf(d)) {
        leaves.push_back(o);
        continue;
      }
      const OpClass cls = op_class(d.op);
      if ((cls != OpClass::Unary && cls != OpClass::Binary) || users(o) != 1 || local_[size_t(o)] >= 0) return std::nullopt;
      cone.push_back(o);
      stack.insert(stack.end(), d.operands.begin(), d.operands.end());
    }
    for (int leaf : leaves) read_by_k1_[size_t(leaf)] = read_by_k1_[size_t(leaf)] || dag_.values[size_t(leaf)].op == Op::Input;
    std::sort(cone.begin(), cone.end());
    cone.erase(std::unique(cone.begin(), cone.end()), cone.end());
    return cone;
  }

  // How many values read value v.
  int users(int v) const {
    int n = 0;
    for (const DagValue& d : dag_.values) n += int(std::count(d.operands.begin(), d.operands.end(), v));
    return n;
  }

  // A value downstream of the block partials: computed by the combining kernel from them only
  // (and from leaves it loads itself, cone_kernel0_would_copy).
  std::string place_in_combining_kernel(int v) {
    kernel_[size_t(v)] = 1;
    for (int o : dag_.values[size_t(v)].operands) {
      if (dag_.values[size_t(o)].op == Op::Const) continue;  // a constant is made where it is used
      if (read_by_k1_[size_t(o)] && dag_.values[size_t(o)].op == Op::Input) continue;  // a leaf kernel 1 loads whole
      if (!partial_[size_t(o)] && kernel_[size_t(o)] != 1) return "the combining kernel would read a value other than the block partials";
      if (partial_[size_t(o)]) read_by_k1_[size_t(o)] = true;
    }
    phase_[size_t(v)] = After;
    return "";
  }

  // Every value's phase (invariant, walked by the loop, after it), kernel, split and relation to a
  // cut max, in DAG order.
  std::string place_values() {
    for (int v = 0; v < n_; ++v) {
      const DagValue& d = dag_.values[size_t(v)];
      if (is_leaf(d)) {
        phase_[size_t(v)] = axis_in(ix_, v, L_) >= 0 ? Walk : Inv;
        continue;
      }
      const int r = ix_.reduced_by(dag_, v);
      int base = -1;
      bool region_op = false;
      if (std::string why = relate_to_split_max(v, r, base, region_op); !why.empty()) return why;
      if (region_op) local_[size_t(v)] = base;
      bool walk = false, after = false, k1 = false;
      for (int o : d.operands) {
        if (region_op && o == base) continue;  // read as the piece's own max, in the body
        walk |= phase_[size_t(o)] == Walk;
        after |= phase_[size_t(o)] == After;
        k1 |= partial_[size_t(o)] || kernel_[size_t(o)] == 1;
      }
      if (region_op && k1) return "the combining kernel would read a value other than the block partials";
      if (walk && after) return "a value after the loop meets a loop-body value";
      if (!k1 && r >= 0 && r == C_ && !region_op) {
        if (std::optional<std::vector<int>> cone = cone_kernel0_would_copy(v)) {
          for (int a : *cone)  // computed again by the combining kernel, from the leaves
            if (std::string why = place_in_combining_kernel(a); !why.empty()) return why;
          k1 = true;
        }
      }
      if (k1) {
        if (std::string why = place_in_combining_kernel(v); !why.empty()) return why;
        continue;
      }
      for (int o : d.operands) used_in_k0_[size_t(o)] = true;
      if (r >= 0 && r == L_ && !region_op) {
        ++accumulators_;
        split_[size_t(v)] = split_[size_t(v)] * Dim::symbol("F1");
        phase_[size_t(v)] = After;
      } else if (region_op && ix_.reduced_by(dag_, base) == L_) {
        phase_[size_t(v)] = Walk;  // per iteration, relative to the iteration's own max
      } else {
        phase_[size_t(v)] = walk ? Walk : after ? After : Inv;
      }
      if (r >= 0 && r == C_ && !region_op) {
        if (d.op != Op::Sum && d.op != Op::Matmul && d.op != Op::Max) return "a cross-block reduction that is not a sum or a max";
        partial_[size_t(v)] = true;
        const int g = int(std::find(plan_.grid.begin(), plan_.grid.end(), C_) - plan_.grid.begin());
        split_[size_t(v)] = split_[size_t(v)] * Dim::symbol("g" + std::to_string(g + 1));
      }
      if (d.op == Op::Max && r >= 0 && (r == L_ || r == C_)) split_max_[size_t(v)] = true;
      if (rescaled_[size_t(v)] >= 0 && partial_[size_t(v)]) read_by_k1_[size_t(rescaled_[size_t(v)])] = true;  // kernel 2 rescales by it
    }
    return "";
  }

  // The structural rules on the placed values (plan.h), and the values kernel 0 saves.
  std::string check_rules() {
    for (int o : outs_) {
      if (phase_[size_t(o)] == Walk) return "the output would be saved inside the loop";
      if (local_[size_t(o)] >= 0) return "the output would be relative to each piece's own max";
    }
    if (outs_.size() > 1 && C_ >= 0) return "several outputs beside a cross-block reduction";
    if (accumulators_ > limits_.max_accumulators) return "more accumulators than allowed";
    if (kernels() > limits_.max_kernels) return "more kernels than allowed";
    for (int c : data_parallel_)
      for (int o : outs_)
        if (axis_in(ix_, o, c) < 0) return "a grid dim that lays out no output dim";
    if (C_ < 0) saved_ = outs_;
    for (int v = 0; v < n_; ++v)
      if (partial_[size_t(v)] && (read_by_k1_[size_t(v)] || v == sink_)) saved_.push_back(v);
    for (int v : saved_)
      for (int c : data_parallel_)
        if (axis_in(ix_, v, c) < 0) return "a grid dim would stack copies of a block partial";
    auto conflict = [&](int v) {
      for (int c : plan_.grid)
        if (axes_in(ix_, v, c) > 1) return true;
      return L_ >= 0 && axes_in(ix_, v, L_) > 1;
    };
    for (int v = 0; v < n_; ++v)
      if ((used_in_k0_[size_t(v)] && dag_.values[size_t(v)].op == Op::Input) || is_output(v) || partial_[size_t(v)])
        if (conflict(v)) return "a tensor with two axes in one grid or loop class";
    return "";
  }

  int kernels() const { return C_ >= 0 ? 2 : 1; }

  sgraph::Map map_of(int v, const std::vector<int>& grid, int offset, bool place_cross) const {
    sgraph::Map m;
    for (int c : grid) {
      int a = (c == C_ && !place_cross) ? -1 : axis_in(ix_, v, c);
      m.grid.push_back(a < 0 ? Choice::none() : Choice::of(a + offset));
    }
    return m;
  }

  // A constant leaf: a block op of the kernel that reads it.
  int constant(std::vector<BlockOp>& ops, int v) const {
    BlockOp c;
    c.kind = BlockOp::Kind::Compute;
    c.name = "c" + std::to_string(v);
    c.op = Op::Const;
    c.attrs.constant = dag_.values[size_t(v)].constant;
    return push(ops, c);
  }

  // A load of input leaf v, its tiles cut by `map`.
  BlockOp leaf_load(int v, sgraph::Map map) const {
    BlockOp load;
    load.kind = BlockOp::Kind::Load;
    load.name = "x" + std::to_string(v);
    load.tensor = dag_.values[size_t(v)].name;
    load.view = dag_.values[size_t(v)].view;
    load.map = std::move(map);
    return load;
  }

  // Kernel 0's loads of the leaves it uses.
  void load_leaves(std::vector<BlockOp>& ops, std::vector<int>& at) const {
    for (int v = 0; v < dag_.num_inputs; ++v) {
      if (!used_in_k0_[size_t(v)]) continue;
      if (dag_.values[size_t(v)].op == Op::Const) {
        at[size_t(v)] = constant(ops, v);
        continue;
      }
      sgraph::Map map = map_of(v, plan_.grid, 0, true);
      const int la = axis_in(ix_, v, L_);
      map.loop = la < 0 ? Choice::none() : Choice::of(la);
      at[size_t(v)] = push(ops, leaf_load(v, map));
    }
  }

  // Kernel 0: the grid over the plan's classes, the loop, every value it computes (reductions
  // over the loop accumulated), and its saves (the outputs, or the block partials).
  sgraph::Kernel block_kernel() {
    sgraph::Kernel k0;
    k0.custom = true;
    for (size_t i = 0; i < plan_.grid.size(); ++i) k0.block.grid.push_back(Dim::symbol("g" + std::to_string(i + 1)));
    if (L_ >= 0) k0.block.loop = Dim::symbol("F1");
    std::vector<int> at(size_t(n_), -1), piece_at(size_t(n_), -1);
    auto& ops0 = k0.block.ops;
    load_leaves(ops0, at);
    for (int v = dag_.num_inputs; v < n_; ++v) {
      if (kernel_[size_t(v)] != 0) continue;
      const DagValue& d = dag_.values[size_t(v)];
      const int r = ix_.reduced_by(dag_, v);
      BlockOp op;
      op.name = "v" + std::to_string(v);
      // A value relative to a cut max reads the piece's own max (the op before its accumulator).
      for (int o : d.operands) op.operands.push_back(o == local_[size_t(v)] ? piece_at[size_t(o)] : at[size_t(o)]);
      if (r >= 0 && r == L_ && d.op == Op::Rms) {
        op.kind = BlockOp::Kind::Accumulate;
        op.acc = sgraph::AccKind::Rms;
        op.attrs.axis = d.axis;
        at[size_t(v)] = push(ops0, op);
        acc_names_.push_back("rms");
        continue;
      }
      op.kind = BlockOp::Kind::Compute;
      op.op = d.op;
      op.attrs = dag_attrs(d);
      piece_at[size_t(v)] = at[size_t(v)] = push(ops0, op);
      if (r >= 0 && r == L_) {
        BlockOp acc;
        acc.kind = BlockOp::Kind::Accumulate;
        acc.name = "a" + std::to_string(v);
        acc.acc = d.op == Op::Max ? sgraph::AccKind::Max : sgraph::AccKind::Sum;
        acc.operands = {at[size_t(v)]};
        if (rescaled_[size_t(v)] >= 0) {
          acc.acc = sgraph::AccKind::Rescaled;
          acc.operands.push_back(piece_at[size_t(rescaled_[size_t(v)])]);
        }
        at[size_t(v)] = push(ops0, acc);
        acc_names_.push_back(rescaled_[size_t(v)] >= 0 ? "rescaled " + std::string(op_name(d.op)) : op_name(d.op));
      } else if (phase_[size_t(v)] == After) {
        after_names_.push_back(op_name(d.op));
      }
    }
    for (size_t i = 0; i < saved_.size(); ++i) {
      const int v = saved_[i];
      BlockOp save;
      save.kind = BlockOp::Kind::Save;
      save.name = C_ < 0 ? output_name(i) : tensor_name("P" + std::to_string(i + 1));
      save.dtype = C_ < 0 ? program_.value(program_.outputs.at(i)).type.dtype : DType::F32;
      save.map = map_of(v, plan_.grid, 0, false);
      save.map.loop = Choice::none();
      save.operands = {at[size_t(v)]};
      push(ops0, save);
    }
    return k0;
  }

  // Kernel 1 (a cross-block reduction's): loads the block partials and combines each over the
  // partial axis (a max by max, a sum by sum, a sum relative to its block's max by the sum of the
  // partials rescaled to the overall max), then computes everything downstream and saves O.
  sgraph::Kernel combining_kernel() {
    sgraph::Kernel k1;
    k1.custom = true;
    for (size_t i = 0; i < data_parallel_.size(); ++i) k1.block.grid.push_back(Dim::symbol("g" + std::to_string(plan_.grid.size() + i + 1)));
    auto& ops1 = k1.block.ops;
    std::vector<int> at1(size_t(n_), -1), loaded(size_t(n_), -1);
    for (size_t i = 0; i < saved_.size(); ++i) {
      const int v = saved_[i];
      BlockOp load;
      load.kind = BlockOp::Kind::Load;
      load.name = "p" + std::to_string(i + 1);
      load.tensor = tensor_name("P" + std::to_string(i + 1));
      load.map = map_of(v, data_parallel_, 1, true);
      load.map.loop = Choice::none();
      loaded[size_t(v)] = push(ops1, load);
    }
    for (int v = 0; v < dag_.num_inputs; ++v)  // leaves it reads whole along the reduced class
      if (read_by_k1_[size_t(v)] && dag_.values[size_t(v)].op == Op::Input) at1[size_t(v)] = push(ops1, leaf_load(v, map_of(v, data_parallel_, 0, true)));
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
    for (size_t i = 0; i < saved_.size(); ++i) {
      const int v = saved_[i];
      if (rescaled_[size_t(v)] < 0)
        at1[size_t(v)] = compute("s" + std::to_string(i + 1), dag_.values[size_t(v)].op == Op::Max ? Op::Max : Op::Sum, {loaded[size_t(v)]}, true);
    }
    std::map<int, int> factor;  // per cut max: exp(block max - overall max), made once
    for (size_t i = 0; i < saved_.size(); ++i) {
      const int v = saved_[i], base = rescaled_[size_t(v)];
      if (base < 0) continue;
      const std::string name = "s" + std::to_string(i + 1);
      if (!factor.count(base)) {
        const int shift = compute(name + "d", Op::Sub, {loaded[size_t(base)], at1[size_t(base)]}, false);
        factor[base] = compute(name + "e", Op::Exp, {shift}, false);
      }
      at1[size_t(v)] = compute(name, Op::Sum, {compute(name + "w", Op::Mul, {loaded[size_t(v)], factor[base]}, false)}, true);
    }
    for (int v = dag_.num_inputs; v < n_; ++v) {
      if (kernel_[size_t(v)] != 1) continue;
      const DagValue& d = dag_.values[size_t(v)];
      for (int o : d.operands)
        if (dag_.values[size_t(o)].op == Op::Const && at1[size_t(o)] < 0) at1[size_t(o)] = constant(ops1, o);
      BlockOp op;
      op.kind = BlockOp::Kind::Compute;
      op.name = "v" + std::to_string(v);
      op.op = d.op;
      op.attrs = dag_attrs(d);
      for (int o : d.operands) op.operands.push_back(at1[size_t(o)]);
      at1[size_t(v)] = push(ops1, op);
      k1_names_.push_back(op_name(d.op));
    }
    BlockOp save;
    save.kind = BlockOp::Kind::Save;
    save.name = output_name(0);
    save.dtype = program_.value(program_.outputs.at(0)).type.dtype;
    save.map = map_of(sink_, data_parallel_, 0, true);
    save.map.loop = Choice::none();
    save.operands = {at1[size_t(sink_)]};
    push(ops1, save);
    return k1;
  }

  // What the search's candidates say of the family.
  std::string summary() const {
    std::vector<std::string> grid_text;
    for (size_t i = 0; i < plan_.grid.size(); ++i)
      grid_text.push_back("g" + std::to_string(i + 1) + (plan_.grid[i] == C_ ? " reduces " : " splits ") + ix_.size[size_t(plan_.grid[i])].str());
    std::string s = std::to_string(kernels()) + (kernels() == 1 ? " custom kernel: " : " custom kernels: ") + dag_.ops_text();
    if (!grid_text.empty()) s += "; grid " + join(grid_text, ", ");
    if (L_ >= 0) s += "; loop F1 over " + ix_.size[size_t(L_)].str() + ", " + join(acc_names_, "+") + " accumulated";
    if (!after_names_.empty()) s += ", " + join(after_names_, "+") + " after";
    const bool online = std::any_of(rescaled_.begin(), rescaled_.end(), [](int b) { return b >= 0; });
    if (C_ >= 0)
      s += std::string(online ? "; kernel 2 rescales the g partials to their overall max and sums them" : "; kernel 2 sums the g partials") +
           (k1_names_.empty() ? std::string() : ", then " + join(k1_names_, "+"));
    if (online) s += C_ >= 0 ? " (flash-decoding)" : " (online softmax)";
    return s;
  }

  // The data-parallel dims with kernel 0's and kernel 1's names for them (as the grids above).
  std::vector<GridCut> grid_cuts() const {
    std::vector<GridCut> cuts;
    for (size_t i = 0; i < data_parallel_.size(); ++i) {
      const size_t at = size_t(std::find(plan_.grid.begin(), plan_.grid.end(), data_parallel_[i]) - plan_.grid.begin());
      GridCut cut{Dim::symbol("g" + std::to_string(at + 1)), Dim::symbol("g" + std::to_string(plan_.grid.size() + i + 1)), {}};
      for (int v = 0; v < n_; ++v) cut.axis.push_back(axis_in(ix_, v, data_parallel_[i]));
      cuts.push_back(std::move(cut));
    }
    return cuts;
  }

  const Dag& dag_;
  const Indices& ix_;
  const Plan& plan_;
  const Program& program_;
  const SearchLimits& limits_;
  const int n_, L_;
  const std::vector<int> outs_;
  const int sink_;  // with a combining kernel, the only output
  int C_ = -1;      // the class of the cross-block reduction
  std::vector<int> data_parallel_;
  std::vector<Phase> phase_;
  std::vector<int> kernel_;
  std::vector<bool> partial_;  // a block partial of the cross-block reduction
  std::vector<Dim> split_;
  std::vector<bool> used_in_k0_, read_by_k1_;
  std::vector<Rel> rel_;
  std::vector<int> local_, rescaled_;
  std::vector<bool> split_max_;
  int accumulators_ = 0;
  std::vector<int> saved_;  // kernel-0 values saved (the outputs, or the block partials kernel 1 reads)
  std::vector<std::string> acc_names_, after_names_, k1_names_;
};

}  // namespace

std::optional<Family> build_family(const Dag& dag, const Indices& ix, const Plan& plan, const Program& program,
                                   const SearchLimits& limits, std::string& why) {
  return FamilyBuilder(dag, ix, plan, program, limits).build(why);
}

}  // namespace prism::search
