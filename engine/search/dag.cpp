#include "engine/search/dag.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <set>

#include "engine/egraph/from_program.h"
#include "engine/error.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/print.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

bool is_reduction(Op op) { return op == Op::Sum || op == Op::Max || op == Op::Rms; }

bool is_data_movement(Op op) { return op == Op::Split || op == Op::Concat; }

Attrs dag_attrs(const DagValue& v) {
  Attrs a;
  if (is_reduction(v.op) || is_data_movement(v.op)) a.axis = v.axis;
  if (is_reduction(v.op)) a.keepdims = true;
  if (v.op == Op::Split) {
    a.parts = v.parts;
    a.index = v.index;
  }
  return a;
}

std::string Dag::key() const {
  std::string out;
  for (size_t i = size_t(num_inputs); i < values.size(); ++i) {
    const DagValue& v = values[i];
    if (!out.empty()) out.push_back(' ');
    out.append(op_name(v.op));
    if (is_reduction(v.op) || is_data_movement(v.op)) out.append("@").append(std::to_string(v.axis));
    if (v.op == Op::Split) out.append("/").append(std::to_string(v.parts)).append(":").append(std::to_string(v.index));
    out.push_back('(');
    for (size_t k = 0; k < v.operands.size(); ++k) {
      if (k) out.push_back(',');
      out.append(std::to_string(v.operands[k]));
    }
    out.push_back(')');
  }
  if (!returned.empty()) {
    out += " ->";
    for (int o : returned) out.append(" ").append(std::to_string(o));
  }
  return out;
}

std::string Dag::ops_text() const {
  std::string out;
  for (size_t i = size_t(num_inputs); i < values.size(); ++i) {
    if (!out.empty()) out.append(", ");
    out.append(op_name(values[i].op));
  }
  return out;
}

Program Dag::to_program(const std::string& name, const std::vector<const Value*>& inputs) const {
  Program p;
  p.name = name;
  auto add = [&p](Value v) {
    v.id = int(p.values.size());
    if (v.name.empty()) v.name = std::string("t").append(std::to_string(v.id));  // append: GCC 12's -Wrestrict misfires on "t" + s
    p.values.push_back(std::move(v));
    return p.values.back().id;
  };
  std::map<std::string, int> input_id;
  for (const Value* in : inputs) {
    Value v;
    v.op = Op::Input;
    v.name = in->name;
    v.named = true;
    v.type = in->type;
    input_id[in->name] = add(v);
    p.inputs.push_back(input_id[in->name]);
    for (const Dim& dim : in->type.shape)
      for (const std::string& s : dim.symbols())
        if (std::find(p.dims.begin(), p.dims.end(), s) == p.dims.end()) p.dims.push_back(s);
  }
  std::vector<int> id(values.size(), -1);
  for (size_t i = 0; i < values.size(); ++i) {
    const DagValue& d = values[i];
    Value v;
    v.type = d.type;
    if (d.op == Op::Input) {
      const int in = input_id.at(d.name);
      if (d.view.empty()) {
        id[i] = in;
        continue;
      }
      // A pure padding (new axes, then the tensor's dims in order) is a reshape; else a transpose,
      // padded by the op that reads it (leading new axes: the program's broadcast, as written).
      bool pad = true;
      for (size_t k = 0, next = 0; k < d.view.size(); ++k)
        if (d.view[k] != sgraph::BlockOp::kNewAxis) pad = pad && d.view[k] == int(next++);
      v.op = pad ? Op::Reshape : Op::Transpose;
      v.operands = {in};
      const size_t lead = size_t(std::find_if(d.view.begin(), d.view.end(), [](int a) { return a != sgraph::BlockOp::kNewAxis; }) - d.view.begin());
      const bool between = std::count(d.view.begin(), d.view.end(), sgraph::BlockOp::kNewAxis) > long(lead);
      if (pad) {
        v.attrs.shape = d.type.shape;
      } else if (!between) {
        v.attrs.perm.assign(d.view.begin() + long(lead), d.view.end());
        v.type.shape.assign(d.type.shape.begin() + long(lead), d.type.shape.end());
      } else {  // new axes between permuted ones: the transpose, then the reshape adding them
        std::copy_if(d.view.begin(), d.view.end(), std::back_inserter(v.attrs.perm), [](int a) { return a != sgraph::BlockOp::kNewAxis; });
        v.type.shape.clear();
        for (int a : v.attrs.perm) v.type.shape.push_back(p.value(in).type.shape[size_t(a)]);
        Value r;
        r.op = Op::Reshape;
        r.operands = {add(std::move(v))};
        r.type = d.type;
        r.attrs.shape = d.type.shape;
        v = std::move(r);
      }
    } else if (d.op == Op::Const) {
      v.op = Op::Const;
      v.attrs.constant = d.constant;
      v.type = Type{DType::F32, {}, true};
    } else {
      v.op = d.op;
      for (int o : d.operands) v.operands.push_back(id[size_t(o)]);
      v.attrs = dag_attrs(d);
    }
    id[i] = add(std::move(v));
  }
  for (int o : outputs()) p.outputs.push_back(id[size_t(o)]);
  return p;
}

std::string unused_tensor_name(std::string base, const Program& program) {
  auto taken = [&](const std::string& name) {
    return std::any_of(program.inputs.begin(), program.inputs.end(), [&](int id) { return program.value(id).name == name; });
  };
  while (taken(base)) base += "_";
  return base;
}

std::string output_tensor_name(const Program& program, size_t k) {
  return unused_tensor_name(program.outputs.size() == 1 ? std::string("O") : "O" + std::to_string(k + 1), program);
}

bool is_leaf(const DagValue& v) { return v.op == Op::Input || v.op == Op::Const; }

std::optional<std::vector<int>> input_view(const Program& program, const Value& v) {
  if (v.op == Op::Transpose && program.value(v.operands.at(0)).op == Op::Input) return v.attrs.perm;
  if (v.op != Op::Reshape) return std::nullopt;
  // A reshape that only adds unit dims to an input or to a transpose of one: the dims it reads
  // in order, new axes between.
  const Value& under = program.value(v.operands.at(0));
  std::vector<int> dims(under.type.shape.size());
  std::iota(dims.begin(), dims.end(), 0);
  if (under.op == Op::Transpose && program.value(under.operands.at(0)).op == Op::Input) dims = under.attrs.perm;
  else if (under.op != Op::Input) return std::nullopt;
  std::optional<std::vector<int>> view = unit_axes_added(under.type.shape, v.type.shape);
  if (view)
    for (int& a : *view) a = a < 0 ? sgraph::BlockOp::kNewAxis : dims[size_t(a)];
  return view;
}

const Value& viewed_input(const Program& program, const Value& v) {
  const Value* at = &v;
  while (at->op != Op::Input) at = &program.value(at->operands.at(0));
  return *at;
}

std::vector<DagValue> dag_leaves(const Program& program) {
  // The highest rank a binary op or matmul reads each value at.
  std::vector<size_t> read_at(program.values.size(), 0);
  for (const Value& v : program.values)
    if (op_class(v.op) == OpClass::Binary || op_class(v.op) == OpClass::Matmul)
      for (int o : v.operands) read_at[size_t(o)] = std::max(read_at[size_t(o)], v.type.shape.size());
  auto padded = [](std::vector<int> view, size_t rank) {
    view.insert(view.begin(), rank > view.size() ? rank - view.size() : 0, sgraph::BlockOp::kNewAxis);
    return view;
  };
  std::vector<DagValue> leaves;
  for (int id : program.inputs) {
    const Value& in = program.value(id);
    DagValue leaf;
    leaf.op = Op::Input;
    leaf.name = in.name;
    leaf.type = in.type;
    const size_t r = in.type.shape.size();
    if (r > 0 && read_at[size_t(id)] > r) {
      std::vector<int> own(r);
      std::iota(own.begin(), own.end(), 0);
      leaf.view = padded(own, read_at[size_t(id)]);
      leaf.type.shape = sgraph::view_shape(in.type.shape, leaf.view);
    }
    leaves.push_back(std::move(leaf));
  }
  for (const Value& v : program.values) {
    std::optional<std::vector<int>> view = input_view(program, v);
    if (!view) continue;
    DagValue leaf;
    leaf.op = Op::Input;
    const Value& input = viewed_input(program, v);
    leaf.name = input.name;
    leaf.view = padded(*view, read_at[size_t(v.id)]);  // W.T read by a matmul of [b, s, d]: [1, d, n]
    leaf.type = Type{input.type.dtype, sgraph::view_shape(input.type.shape, leaf.view), false};
    if (std::none_of(leaves.begin(), leaves.end(), [&](const DagValue& l) { return l.name == leaf.name && l.view == leaf.view; }))
      leaves.push_back(std::move(leaf));
  }
  std::set<std::string> constants;
  for (const Value& v : program.values) {
    if (v.op != Op::Const || !constants.insert(constant_str(v.attrs.constant)).second) continue;
    DagValue leaf;
    leaf.op = Op::Const;
    leaf.constant = v.attrs.constant;
    leaf.type = Type{DType::F32, {}, true};
    leaves.push_back(std::move(leaf));
  }
  return leaves;
}

std::optional<Dag> program_dag(const Program& program, const std::vector<DagValue>& leaves, std::string* why) {
  auto refuse = [why](const std::string& reason) -> std::optional<Dag> {
    if (why) *why = reason;
    return std::nullopt;
  };
  Dag dag;
  dag.values = leaves;
  dag.num_inputs = int(leaves.size());
  auto leaf_of = [&](auto pred) {
    for (size_t i = 0; i < leaves.size(); ++i)
      if (pred(leaves[i])) return int(i);
    return -1;
  };
  std::vector<bool> live(program.values.size(), false);
  for (int o : program.outputs) live[size_t(o)] = true;
  for (size_t i = program.values.size(); i-- > 0;)
    if (live[i])
      for (int o : program.values[i].operands) live[size_t(o)] = true;
  std::vector<int> at(program.values.size(), -1);
  for (const Value& v : program.values) {
    if (!live[size_t(v.id)]) continue;
    int& id = at[size_t(v.id)];
    if (v.op == Op::Input) {
      id = leaf_of([&](const DagValue& l) { return l.op == Op::Input && l.name == v.name && (l.view.empty() || l.view.front() == sgraph::BlockOp::kNewAxis); });
      continue;
    }
    if (v.op == Op::Const) {
      id = leaf_of([&](const DagValue& l) { return l.op == Op::Const && constant_str(l.constant) == constant_str(v.attrs.constant); });
      continue;
    }
    if (const std::optional<std::vector<int>> view = input_view(program, v)) {
      const std::string& name = viewed_input(program, v).name;
      id = leaf_of([&](const DagValue& l) {
        return l.op == Op::Input && l.name == name && l.view.size() >= view->size() &&
               std::equal(view->rbegin(), view->rend(), l.view.rbegin()) &&
               std::all_of(l.view.begin(), l.view.end() - long(view->size()), [](int a) { return a == sgraph::BlockOp::kNewAxis; });
      });
      if (id < 0) return refuse("'" + v.name + "' reads an input through a view the leaves do not have");
      continue;
    }
    const OpClass cls = op_class(v.op);
    if (v.op == Op::Transpose) return refuse("'" + v.name + "' transposes a computed value (only inputs are read transposed, by a load)");
    if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && !is_data_movement(v.op))
      return refuse("'" + v.name + "' is a " + op_name(v.op) + ", which fused kernels do not have yet");
    if (cls == OpClass::Reduce && !v.attrs.keepdims) return refuse("'" + v.name + "' reduces with keepdims=false");
    if (v.op == Op::Concat && v.operands.size() != 2) return refuse("'" + v.name + "' concatenates " + std::to_string(v.operands.size()) + " values (a fused kernel's concat takes two)");
    DagValue d;
    d.op = v.op;
    d.axis = cls == OpClass::Reduce || is_data_movement(v.op) ? v.attrs.axis : -1;
    if (v.op == Op::Split) {
      d.parts = v.attrs.parts;
      d.index = v.attrs.index;
    }
    d.type = Type{DType::F32, v.type.shape, false};
    for (int o : v.operands) {
      if (at[size_t(o)] < 0) return refuse("'" + v.name + "' reads '" + program.value(o).name + "', which no leaf gives");
      d.operands.push_back(at[size_t(o)]);
    }
    // The DAG's conventions: a commutative op takes its operands in index order (as the
    // generator does, so the same family is found once); operands of the result's rank, or scalars.
    if ((v.op == Op::Add || v.op == Op::Mul) && d.operands[0] > d.operands[1]) std::swap(d.operands[0], d.operands[1]);
    for (size_t k = 0; k < d.operands.size(); ++k) {
      const size_t r = dag.values[size_t(d.operands[k])].type.shape.size();
      if (r != 0 && r != d.type.shape.size())
        return refuse("block ops need equal ranks: '" + v.name + "' (" + op_name(v.op) + ") reads a value of rank " + std::to_string(r) +
                      " beside rank " + std::to_string(d.type.shape.size()));
    }
    id = int(dag.values.size());
    dag.values.push_back(std::move(d));
  }
  if (dag.num_ops() == 0) return refuse("the program computes nothing");
  if (program.outputs.size() == 1) {
    if (at[size_t(program.outputs[0])] != int(dag.values.size()) - 1) return refuse("the program's output is not its last computed value");
    return dag;
  }
  for (int o : program.outputs) {
    const int v = at[size_t(o)];
    if (v < dag.num_inputs) return refuse("output '" + program.value(o).name + "' is an input or a constant, not a computed value");
    if (std::find(dag.returned.begin(), dag.returned.end(), v) != dag.returned.end())
      return refuse("output '" + program.value(o).name + "' is returned twice");
    dag.returned.push_back(v);
  }
  return dag;
}

eg::Id leaf_term(eg::TensorGraph& tg, const DagValue& leaf) {
  if (leaf.op == Op::Const) return tg.constant(leaf.constant);
  if (leaf.view.empty()) return tg.input(leaf.name, leaf.type.shape);
  std::vector<int> perm;  // the tensor dims the view reads, in view order
  for (size_t k = 0; k < leaf.view.size(); ++k)
    if (leaf.view[k] != sgraph::BlockOp::kNewAxis) perm.push_back(leaf.view[k]);
  std::vector<Dim> shape(perm.size());  // the tensor's own shape
  for (size_t k = 0; k < leaf.view.size(); ++k)
    if (leaf.view[k] != sgraph::BlockOp::kNewAxis) shape[size_t(leaf.view[k])] = leaf.type.shape[k];
  eg::Id x = tg.input(leaf.name, shape);
  bool identity = true;
  for (size_t a = 0; a < perm.size(); ++a) identity = identity && perm[a] == int(a);
  const size_t lead = leaf.view.size() - perm.size();
  bool leading = true;  // new axes only before the tensor's dims
  for (size_t k = lead; k < leaf.view.size(); ++k) leading = leading && leaf.view[k] != sgraph::BlockOp::kNewAxis;
  if (!identity) x = tg.transpose(perm, x);
  // As the program's term reads it: a padded operand as unsqueeze@0 per missing leading dim
  // (from_program), a reshape that adds unit dims elsewhere as that reshape of the transpose
  // (push_transposes puts a transpose of such a reshape of an input under it).
  if (!leading) return eg::add_reshape(tg, x, leaf.type.shape);
  for (size_t k = 0; k < lead; ++k) x = tg.op(eg::TOp::Unsqueeze, {x}, 0);
  return x;
}

}  // namespace prism::search
