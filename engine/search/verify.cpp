#include "engine/search/verify.h"

#include <tbb/task_arena.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "engine/egraph/from_program.h"
#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/input_roles.h"
#include "engine/ir/print.h"
#include "engine/sgraph/evaluate.h"

namespace prism::search {

namespace {

// The largest difference over the reference's largest magnitude, or over `floor` when that is
// larger (outputs near zero are compared absolutely).
double relative_error(const Tensor& a, const Tensor& b, double floor = 1) {
  if (a.shape != b.shape) return INFINITY;
  double diff = 0, scale = floor;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double d = std::fabs(double(a.data[i]) - double(b.data[i]));
    if (std::isnan(d)) return INFINITY;
    diff = std::max(diff, d);
    scale = std::max(scale, double(std::fabs(b.data[i])));
  }
  return diff / scale;
}

constexpr double kTolerance = 2e-2;  // f16 outputs; a wrong map is off by O(1)

}  // namespace

eg::Id family_term(eg::TensorGraph& tg, const Dag& dag, const Family& family, size_t output) {
  const std::vector<Dim>& split = family.split;
  const std::vector<GridCut>& cuts = family.cuts;
  const int G = int(cuts.size());  // leading grid axes of every tile
  // Every block computes the same value from replicated operands: an op whose operands are all
  // replicated (or scalars) is built as the op on the whole tensors, replicated. The lifting
  // axioms (`replicate-*`, `*-replicate`, through matmul's contraction) prove the two equal; done
  // as the term is built, the prover's iterations go to the rest (a deep online-softmax chain
  // over replicated Q and K, with V's columns cut, needed more than its 30).
  // (A copy: adding nodes may move the e-graph's storage.)
  auto replicated = [&](eg::Id x) -> std::optional<eg::ENode> {
    const eg::ENode n = tg.graph().id_node(x);
    if (eg::TOp(n.op) != eg::TOp::Replicate) return std::nullopt;
    return n;
  };
  std::function<eg::Id(eg::TOp, const std::vector<eg::Id>&, int, uint32_t)> top = [&](eg::TOp o, const std::vector<eg::Id>& kids, int axis,
                                                                                      uint32_t payload) {
    const bool grid_op = o == eg::TOp::Partition || o == eg::TOp::Replicate || o == eg::TOp::Combine || o == eg::TOp::Reduce;
    const bool axis_op = !eg::is_unary(o) && !eg::is_binary(o) && o != eg::TOp::Matmul;
    std::optional<eg::ENode> rep;
    bool hoist = !grid_op && (!axis_op || axis >= 1);
    for (eg::Id k : kids) {
      if (!hoist || tg.rank(k) == 0) continue;
      const std::optional<eg::ENode> r = replicated(k);
      if (!r || (rep && (r->payload != rep->payload || tg.rank(k) != tg.rank(kids[0])))) hoist = false;
      else rep = r;
    }
    if (!hoist || !rep) return tg.op(o, kids, axis, payload);
    std::vector<eg::Id> inner;
    for (eg::Id k : kids) inner.push_back(tg.rank(k) == 0 ? k : replicated(k)->child[0]);
    const eg::Id whole = top(o, inner, axis_op ? axis - 1 : axis, payload);
    return tg.op(eg::TOp::Replicate, {whole}, 0, rep->payload);
  };
  auto node = [&](eg::TOp o, const std::vector<eg::Id>& kids, int axis = 0, uint32_t payload = 0) { return top(o, kids, axis, payload); };
  std::function<eg::Id(eg::Id, const std::vector<Dim>&)> reshape = [&](eg::Id x, const std::vector<Dim>& to) {
    const std::optional<eg::ENode> r = replicated(x);
    if (r && !to.empty() && to[0] == tg.dim(r->payload)) {
      const eg::Id inner = reshape(r->child[0], std::vector<Dim>(to.begin() + 1, to.end()));
      return tg.op(eg::TOp::Replicate, {inner}, 0, r->payload);
    }
    return eg::add_reshape(tg, x, to);
  };
  // The reduction `op` over axis A of x as the reduction over [f, K/f]: the f pieces' partials.
  auto split_reduce = [&](eg::TOp op, eg::Id x, int A, const Dim& f) {
    std::vector<Dim> s = tg.dims_of(x), cut;
    const Dim k = s[size_t(A)];
    cut.insert(cut.end(), s.begin(), s.begin() + A);
    cut.push_back(f);
    cut.push_back(k / f);
    cut.insert(cut.end(), s.begin() + A + 1, s.end());
    eg::Id y = node(op, {node(op, {reshape(x, cut)}, A + 1)}, A);
    s[size_t(A)] = Dim(1);
    return reshape(y, s);
  };
  // Value v as the tiles of the given kernel's grid: every block reads its tile of v along a cut
  // dim's axis, and all of v when v has no axis in the dim's class.
  auto cut = [&](eg::Id x, size_t v, int kernel) {
    for (int k = 0; k < G; ++k) {
      const eg::DimId g = tg.dim_id(kernel == 0 ? cuts[size_t(k)].size : cuts[size_t(k)].size2);
      const int a = cuts[size_t(k)].axis[v];
      x = a >= 0 ? node(eg::TOp::Partition, {x}, a + k, g) : node(eg::TOp::Replicate, {x}, 0, g);
    }
    return x;
  };
  // The tiles of v laid side by side again (the last cut, the outermost grid axis, first).
  auto uncut = [&](eg::Id y, size_t v) {
    for (int k = G - 1; k >= 0; --k) {
      // Only a value the dim lays out has tiles to put together (plan.cpp refuses other families).
      if (cuts[size_t(k)].axis[v] < 0) throw Error(Error::Kind::Failed, "family term: a grid dim would stack copies of a saved value");
      y = node(eg::TOp::Combine, {y}, cuts[size_t(k)].axis[v] + k);
    }
    return y;
  };
  std::vector<eg::Id> at, recut(dag.values.size(), eg::kNoId);
  // A block partial that kernel 1 reads: saved by kernel 0's blocks, loaded by kernel 1's.
  auto in_kernel1 = [&](int o) {
    if (family.kernel[size_t(o)] == 1 || dag.values[size_t(o)].op == Op::Const) return at[size_t(o)];
    if (recut[size_t(o)] == eg::kNoId) recut[size_t(o)] = cut(uncut(at[size_t(o)], size_t(o)), size_t(o), 1);
    return recut[size_t(o)];
  };
  // Online softmax (plan.h): a value relative to a cut max is built on the pieces' layout, axis A
  // of size K as [f, K/f] (a size-1 axis as [1, 1]), with the cut max as each piece's own max
  // ([.., f, 1, ..]); a rescaled sum or matmul multiplies each piece's partial by
  // exp(piece max - overall max) and sums the pieces.
  std::vector<eg::Id> pt(dag.values.size(), eg::kNoId);  // the pieces' terms of local values
  std::map<int, eg::Id> piece_max;
  auto axis_of = [&](int base) { return dag.values[size_t(base)].axis + G; };
  auto pieces = [&](eg::Id x, int A, const Dim& f) {
    if (tg.rank(x) == 0) return x;
    std::vector<Dim> s = tg.dims_of(x), cut(s.begin(), s.begin() + A);
    const Dim k = s[size_t(A)];
    if (k == Dim(1)) cut.insert(cut.end(), {Dim(1), Dim(1)});
    else cut.insert(cut.end(), {f, k / f});
    cut.insert(cut.end(), s.begin() + A + 1, s.end());
    return reshape(x, cut);
  };
  auto max_of_pieces = [&](int base) {
    auto it = piece_max.find(base);
    if (it != piece_max.end()) return it->second;
    const int A = axis_of(base);
    const eg::Id m = node(eg::TOp::Max, {pieces(at[size_t(dag.values[size_t(base)].operands[0])], A, split[size_t(base)])}, A + 1);
    return piece_max[base] = m;
  };
  // exp(piece max - overall max) for each piece ([.., f, 1, ..], as the pieces' max).
  auto rescale_factor = [&](int base) {
    const eg::Id m = max_of_pieces(base);
    return node(eg::TOp::Exp, {node(eg::TOp::Sub, {m, node(eg::TOp::Max, {m}, axis_of(base))})});
  };
  for (size_t i = 0; i < dag.values.size(); ++i) {
    const DagValue& d = dag.values[i];
    if (!family.local.empty() && family.local[i] >= 0) {
      const int base = family.local[i], A = axis_of(base);
      std::vector<eg::Id> ops;
      for (int o : d.operands)
        ops.push_back(o == base ? max_of_pieces(base) : family.local[size_t(o)] == base ? pt[size_t(o)] : pieces(at[size_t(o)], A, split[size_t(base)]));
      pt[i] = node(eg::term_op(d.op), ops);
      at.push_back(eg::kNoId);  // only read piece by piece
      continue;
    }
    if (!family.rescaled.empty() && family.rescaled[i] >= 0) {
      // Each piece's partial times its factor, summed over the pieces.
      const int base = family.rescaled[i], A = axis_of(base);
      const eg::Id factor = rescale_factor(base);
      const eg::Id x = pt[size_t(d.operands[0])];
      eg::Id total;
      std::vector<Dim> out;
      if (d.op == Op::Sum) {
        total = node(eg::TOp::Sum, {node(eg::TOp::Mul, {factor, node(eg::TOp::Sum, {x}, A + 1)})}, A);
        out = tg.dims_of(x);
        out.erase(out.begin() + A + 1);
        out[size_t(A)] = Dim(1);
      } else {
        // x: [.., n, f, K/f] (A = r - 1) against b: [.., K, m], as the split matmul below.
        const std::vector<Dim> sx = tg.dims_of(x), sb = tg.dims_of(at[size_t(d.operands[1])]);
        const size_t r = sb.size();
        std::vector<Dim> cx = sx, cb(sb.begin(), sb.end() - 2), cf = tg.dims_of(factor);
        cx.push_back(Dim(1));
        cb.insert(cb.end(), {Dim(1), sx[r - 1], sx[r], sb[r - 1]});
        cf.push_back(Dim(1));
        const eg::Id prod = node(eg::TOp::Mul, {reshape(x, cx), reshape(at[size_t(d.operands[1])], cb)});
        total = node(eg::TOp::Sum, {node(eg::TOp::Mul, {reshape(factor, cf), node(eg::TOp::Sum, {prod}, int(r))})}, int(r) - 1);
        out.assign(sx.begin(), sx.end() - 2);
        out.push_back(sb[r - 1]);
      }
      at.push_back(reshape(total, out));
      continue;
    }
    if (d.op == Op::Const) {  // a scalar: the same in every block (no grid axis)
      at.push_back(leaf_term(tg, d));
      continue;
    }
    if (d.op == Op::Input) {
      at.push_back(cut(leaf_term(tg, d), i, 0));
      continue;
    }
    const OpClass cls = op_class(d.op);
    if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && !is_data_movement(d.op))
      throw Error(Error::Kind::Failed, std::string("family term: no term for ") + op_name(d.op));
    const eg::TOp op = eg::term_op(d.op);
    std::vector<eg::Id> ops;
    for (int o : d.operands) ops.push_back(family.kernel[i] == 1 ? in_kernel1(o) : at[size_t(o)]);
    const Dim f = split[i];
    const int A = d.axis + G;
    if (d.op == Op::Split) {  // its axis is whole in every tile (plan.cpp): a split of each tile
      at.push_back(tg.split_part(A, d.parts, d.index, ops[0]));
    } else if (d.op == Op::Concat) {
      at.push_back(node(op, ops, A));
    } else if (f == Dim(1)) {
      at.push_back(is_reduction(d.op) ? node(op, ops, A) : node(op, ops));
    } else if (d.op == Op::Matmul) {
      // [.., n, K] x [.., K, m] = sum over the pieces of (a as [.., n, f, K/f, 1]) * (b as [.., 1, f, K/f, m]).
      std::vector<Dim> sa = tg.dims_of(ops[0]), sb = tg.dims_of(ops[1]);
      const size_t r = sa.size();
      const Dim k = sa[r - 1];
      std::vector<Dim> ca(sa.begin(), sa.end() - 1), cb(sb.begin(), sb.end() - 2);
      ca.insert(ca.end(), {f, k / f, Dim(1)});
      cb.insert(cb.end(), {Dim(1), f, k / f, sb[r - 1]});
      eg::Id prod = node(eg::TOp::Mul, {reshape(ops[0], ca), reshape(ops[1], cb)});
      eg::Id sum = node(eg::TOp::Sum, {node(eg::TOp::Sum, {prod}, int(r))}, int(r) - 1);
      std::vector<Dim> out = tg.dims_of(sum);
      out.erase(out.begin() + int(r) - 1, out.begin() + int(r) + 1);
      at.push_back(reshape(sum, out));
    } else if (d.op == Op::Rms) {
      // rms_accumulate: sqrt(sum of squares over all pieces / K).
      eg::Id k = tg.constant(Constant{tg.dims_of(ops[0])[size_t(A)], 0});
      eg::Id total = split_reduce(eg::TOp::Sum, node(eg::TOp::Mul, {ops[0], ops[0]}), A, f);
      at.push_back(node(eg::TOp::Sqrt, {node(eg::TOp::Div, {total, k})}));
    } else {
      // sum: the sum of the pieces' sums; max: the max of the pieces' maxes.
      at.push_back(split_reduce(op, ops[0], A, f));
    }
  }
  // The output: saved by the combining kernel when there is one (a partial sink: it only sums).
  const int out = dag.outputs().at(output);
  return uncut(family.combining ? in_kernel1(out) : at[size_t(out)], size_t(out));
}

std::string family_key(const Dag& dag, const Family& family) {
  std::string key = dag.key();
  key += " | split";
  for (const Dim& f : family.split) key.append(" ").append(f.canonical());
  for (const GridCut& c : family.cuts) {
    key.append(" | cut ").append(c.size.canonical()).append(" ").append(c.size2.canonical()).append(":");
    for (int a : c.axis) key.append(" ").append(std::to_string(a));
  }
  key += family.combining ? " | kernels" : " | kernel";
  for (int k : family.kernel) key.append(" ").append(std::to_string(k));
  return key;
}

DimBindings check_sizes(const sgraph::SGraph& family) {
  static const std::map<std::string, int64_t> kSizes = {{"g1", 2}, {"g2", 3}, {"g3", 2}, {"g4", 3}, {"F1", 2}};
  DimBindings sizes;
  for (const std::string& p : family.parameters()) {
    auto it = kSizes.find(p);
    sizes[p] = it == kSizes.end() ? 2 : it->second;
  }
  return sizes;
}

DimBindings check_dims(const Program& program) {
  // Distinct multiples of 12: every product of the check sizes on one dim (2*2, 3*2) divides
  // them. Small, so that a program of rank-4 tensors over five dims ([b, h, s, e] attention)
  // stays a few MB at these dims (multiples of 24 made it 16x larger and its checks that slower).
  DimBindings dims;
  for (size_t i = 0; i < program.dims.size(); ++i) dims[program.dims[i]] = int64_t(12 * (i + 1));
  return dims;
}

NumericCheck::NumericCheck(const Program& program, const CancelToken* cancel) : program_(program), dims_(check_dims(program)) {
  // Inside each input's domain (random_inputs), scaled to [-1/4, 1/4): exp of a dot product over
  // a few dozen terms must not overflow f16.
  random_inputs(program, dims_, 17, &inputs_);
  std::map<std::string, Tensor> drawn = inputs_;
  for (auto& [name, t] : inputs_) {
    for (float& x : t.data) x *= 0.25f;
    round_all(t.dtype, t.data.data(), t.data.size());
  }
  reference_ = interpret(program, dims_, inputs_, cancel);
  // The draw in [-1, 1) has std 1/sqrt(3).
  const InputRoles roles = input_roles(program);
  bool any = false;
  large_inputs_ = inputs_;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (!roles.activation(i)) continue;
    Tensor& t = large_inputs_[program.value(program.inputs[i]).name] = drawn.at(program.value(program.inputs[i]).name);
    for (float& x : t.data) x *= float(100 * std::sqrt(3.0));
    round_all(t.dtype, t.data.data(), t.data.size());
    any = true;
  }
  if (any) large_reference_ = interpret(program, dims_, large_inputs_, cancel);
  else large_inputs_.clear();
}

std::optional<std::string> NumericCheck::overflows(const sgraph::Instance& family, const CancelToken* cancel) const {
  if (large_reference_.empty()) return std::nullopt;
  std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return sgraph::evaluate(family, large_inputs_, cancel); });
  for (size_t o = 0; o < got.size() && o < large_reference_.size(); ++o) {
    int64_t bad = 0;
    for (size_t i = 0; i < got[o].data.size() && i < large_reference_[o].data.size(); ++i)
      bad += std::isfinite(large_reference_[o].data[i]) && !std::isfinite(got[o].data[i]);
    if (bad > 0)
      return "overflows: " + std::to_string(bad) + " values of output " + std::to_string(o) +
             " are NaN or infinite on activations of std 100 where the program's are finite";
  }
  return std::nullopt;
}

std::optional<std::string> NumericCheck::mismatch(const sgraph::SGraph& family, const CancelToken* cancel) const {
  try {
    sgraph::TileBudget roomy{int64_t(1) << 40};
    sgraph::Instance inst = sgraph::instantiate(family, dims_, check_sizes(family), roomy);
    // The interpreter's matmul may run a parallel loop: isolated, a waiting worker takes only
    // its pieces, never another family's verification (which would hold this one up).
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return sgraph::evaluate(inst, inputs_, cancel); });
    if (got.size() != reference_.size()) return "has " + std::to_string(got.size()) + " outputs, not " + std::to_string(reference_.size());
    for (size_t o = 0; o < got.size(); ++o) {
      double err = relative_error(got[o], reference_[o]);
      if (err > kTolerance) return "differs from the reference by " + std::to_string(err) + " (relative) in output " + std::to_string(o);
    }
    return overflows(inst, cancel);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return std::string("does not instantiate: ") + e.what();
  }
}

namespace {

// Every value at f32 (inputs too: they arrive rounded to their declared dtypes).
Program widened(Program p) {
  for (Value& v : p.values) v.type.dtype = DType::F32;
  return p;
}

// The DAG as a program over `program`'s parameters.
Program dag_program(const Dag& dag, const Program& program) {
  std::vector<const Value*> params;
  for (int id : program.inputs) params.push_back(&program.value(id));
  return dag.to_program("dag", params);
}

}  // namespace

bool NumericCheck::dag_matches(const Dag& dag, const CancelToken* cancel) const {
  return matches([&] { return dag_program(dag, program_); }, inputs_, reference_, 1, cancel);
}

bool NumericCheck::dag_matches_offset(const Dag& dag, const CancelToken* cancel) const {
  // Both the program and the DAG computed at f32, as kernels accumulate: what is judged is the
  // form's cancellation, not the rounding of a 16-bit program's every op (which on data moved
  // by 8 leaves a bf16 row only a few distinct values, whatever the form).
  std::call_once(offset_once_, [&] {
    offset_program_ = widened(program_);
    offset_inputs_ = inputs_;
    for (auto& [name, t] : offset_inputs_) {
      for (float& x : t.data) x += kOffset;
      round_all(t.dtype, t.data.data(), t.data.size());
    }
    offset_reference_ = tbb::this_task_arena::isolate([&] { return interpret(offset_program_, dims_, offset_inputs_); });
  });
  // Relative to the outputs' own magnitude, however small: a variance of these inputs is about
  // 0.02, below the usual floor of 1, and an error as large as it must not pass.
  return matches([&] { return widened(dag_program(dag, offset_program_)); }, offset_inputs_, offset_reference_, 1e-30, cancel);
}

bool NumericCheck::matches(const std::function<Program()>& form, const std::map<std::string, Tensor>& inputs,
                           const std::vector<Tensor>& reference, double floor, const CancelToken* cancel) const {
  try {
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return interpret(form(), dims_, inputs, cancel); });
    if (got.size() != reference.size()) return false;
    for (size_t o = 0; o < got.size(); ++o)
      if (relative_error(got[o], reference[o], floor) > kTolerance) return false;
    return true;
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return false;
  }
}

Prover::Prover(const Program& program) : program_(program) {}

Proof Prover::prove(const Dag& dag, const Family& family, const CancelToken* cancel) {
  const std::string key = family_key(dag, family);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
  }
  // A fresh e-graph per proof: a proof never depends on which thread ran it or what it proved
  // before (one e-graph that kept every earlier family's terms made each later proof match over
  // all of them: slower and slower, and its node cap made verdicts depend on the order).
  // Each output is its own proof: the family's term of that output against the program's.
  Proof p;
  p.proved = true;
  for (size_t o = 0; o < program_.outputs.size() && p.proved; ++o) {
    auto g = std::make_unique<ResidentEGraph>(600000);
    auto build = [&](eg::TensorGraph& tg) { return family_term(tg, dag, family, o); };
    // The program with output o alone (a copy only when there are several).
    Program one;
    if (program_.outputs.size() > 1) {
      one = program_;
      one.outputs = {program_.outputs[o]};
    }
    const Program& target = program_.outputs.size() > 1 ? one : program_;
    EquivResult r;
    try {
      r = g->prove(build, target, EquivLimits{150000, 30, 4.0}, cancel);
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      r.verdict = EquivResult::Verdict::NotProved;
      r.message = e.what();
    } catch (const std::logic_error& e) {  // an ill-shaped family term: nothing to prove
      r.verdict = EquivResult::Verdict::NotProved;
      r.message = e.what();
    }
    if (r.stop_reason == StopReason::Cancelled) throw Error(Error::Kind::Cancelled, "cancelled");
    p.proved = r.verdict == EquivResult::Verdict::Proved;
    if (program_.outputs.size() > 1) p.text += "output " + program_.value(program_.outputs[o]).name + ":\n";
    p.text += "family term:  " + r.a_text + "\nprogram term: " + r.b_text + "\n";
    p.text += p.proved ? "proved (" + std::string(stop_reason_name(r.stop_reason)) + "):\n" + r.explanation : r.message;
    if (program_.outputs.size() > 1 && p.text.back() != '\n') p.text += "\n";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.emplace(key, std::make_shared<const Proof>(p));
  return p;
}

}  // namespace prism::search
