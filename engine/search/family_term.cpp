// A family's term for the proof (verify.h, step 2): its DAG computed on tiles with one leading
// grid axis per data-parallel grid dim, every cut reduction written as the sum (or max) of its
// pieces, the output tiles put back together.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/search/verify.h"

namespace prism::search {

namespace {

class FamilyTerm {
 public:
  FamilyTerm(eg::TensorGraph& tg, const Dag& dag, const Family& family)
      : tg_(tg), dag_(dag), family_(family), grid_axes_(int(family.cuts.size())), recut_(dag.values.size(), eg::kNoId),
        pieces_of_(dag.values.size(), eg::kNoId) {}

  eg::Id output(size_t output) {
    for (size_t i = 0; i < dag_.values.size(); ++i) at_.push_back(value(i));
    // Saved by the combining kernel when there is one (a partial sink: it only sums).
    const int out = dag_.outputs().at(output);
    return uncut(family_.combining ? in_kernel1(out) : at_[size_t(out)], size_t(out));
  }

 private:
  // Value i's term on its tiles (kNoId for one only read piece by piece).
  eg::Id value(size_t i) {
    const DagValue& d = dag_.values[i];
    if (!family_.local.empty() && family_.local[i] >= 0) {
      pieces_of_[i] = local_value(i);
      return eg::kNoId;
    }
    if (!family_.rescaled.empty() && family_.rescaled[i] >= 0) return rescaled_value(i);
    if (d.op == Op::Const) return leaf_term(tg_, d);  // a scalar: the same in every block (no grid axis)
    if (d.op == Op::Input) return cut(leaf_term(tg_, d), i, 0);
    return computed_value(i);
  }

  // Every block computes the same value from replicated operands: an op whose operands are all
  // replicated (or scalars) is built as the op on the whole tensors, replicated. The lifting
  // axioms (`replicate-*`, `*-replicate`, through matmul's contraction) prove the two equal; done
  // as the term is built, the prover's iterations go to the rest (a deep online-softmax chain
  // over replicated Q and K, with V's columns cut, needed more than its 30).
  eg::Id node(eg::TOp o, const std::vector<eg::Id>& kids, int axis = 0, uint32_t payload = 0) {
    const bool grid_op = o == eg::TOp::Partition || o == eg::TOp::Replicate || o == eg::TOp::Combine || o == eg::TOp::Reduce;
    const bool axis_op = !eg::is_unary(o) && !eg::is_binary(o) && o != eg::TOp::Matmul;
    std::optional<eg::ENode> rep;
    bool hoist = !grid_op && (!axis_op || axis >= 1);
    for (eg::Id k : kids) {
      if (!hoist || tg_.rank(k) == 0) continue;
      const std::optional<eg::ENode> r = replicated(k);
      if (!r || (rep && (r->payload != rep->payload || tg_.rank(k) != tg_.rank(kids[0])))) hoist = false;
      else rep = r;
    }
    if (!hoist || !rep) return tg_.op(o, kids, axis, payload);
    std::vector<eg::Id> inner;
    for (eg::Id k : kids) inner.push_back(tg_.rank(k) == 0 ? k : replicated(k)->child[0]);
    const eg::Id whole = node(o, inner, axis_op ? axis - 1 : axis, payload);
    return tg_.op(eg::TOp::Replicate, {whole}, 0, rep->payload);
  }

  // x's node when it is a replicate (a copy: adding nodes may move the e-graph's storage).
  std::optional<eg::ENode> replicated(eg::Id x) const {
    const eg::ENode n = tg_.graph().id_node(x);
    if (eg::TOp(n.op) != eg::TOp::Replicate) return std::nullopt;
    return n;
  }

  // x reshaped to `to`, inside its replicates when they lead `to`.
  eg::Id reshape(eg::Id x, const std::vector<Dim>& to) {
    const std::optional<eg::ENode> r = replicated(x);
    if (r && !to.empty() && to[0] == tg_.dim(r->payload)) {
      const eg::Id inner = reshape(r->child[0], std::vector<Dim>(to.begin() + 1, to.end()));
      return tg_.op(eg::TOp::Replicate, {inner}, 0, r->payload);
    }
    return eg::add_reshape(tg_, x, to);
  }

  // The reduction `op` over axis A of x as the reduction over [f, K/f]: the f pieces' partials.
  eg::Id split_reduce(eg::TOp op, eg::Id x, int A, const Dim& f) {
    std::vector<Dim> s = tg_.dims_of(x), cut;
    const Dim k = s[size_t(A)];
    cut.insert(cut.end(), s.begin(), s.begin() + A);
    cut.push_back(f);
    cut.push_back(k / f);
    cut.insert(cut.end(), s.begin() + A + 1, s.end());
    eg::Id y = node(op, {node(op, {reshape(x, cut)}, A + 1)}, A);
    s[size_t(A)] = Dim(1);
    return reshape(y, s);
  }

  // Value v as the tiles of the given kernel's grid: every block reads its tile of v along a cut
  // dim's axis, and all of v when v has no axis in the dim's class.
  eg::Id cut(eg::Id x, size_t v, int kernel) {
    for (int k = 0; k < grid_axes_; ++k) {
      const GridCut& c = family_.cuts[size_t(k)];
      const eg::DimId g = tg_.dim_id(kernel == 0 ? c.size : c.size2);
      x = c.axis[v] >= 0 ? node(eg::TOp::Partition, {x}, c.axis[v] + k, g) : node(eg::TOp::Replicate, {x}, 0, g);
    }
    return x;
  }

  // The tiles of v laid side by side again (the last cut, the outermost grid axis, first).
  eg::Id uncut(eg::Id y, size_t v) {
    for (int k = grid_axes_ - 1; k >= 0; --k) {
      // Only a value the dim lays out has tiles to put together (plan.cpp refuses other families).
      const int axis = family_.cuts[size_t(k)].axis[v];
      if (axis < 0) throw Error(Error::Kind::Failed, "family term: a grid dim would stack copies of a saved value");
      y = node(eg::TOp::Combine, {y}, axis + k);
    }
    return y;
  }

  // A block partial that kernel 1 reads: saved by kernel 0's blocks, loaded by kernel 1's (or a
  // leaf it loads itself, cut by its own grid).
  eg::Id in_kernel1(int o) {
    if (family_.kernel[size_t(o)] == 1 || dag_.values[size_t(o)].op == Op::Const) return at_[size_t(o)];
    if (dag_.values[size_t(o)].op == Op::Input) {  // a leaf kernel 1 loads itself: its own tiles
      if (recut_[size_t(o)] == eg::kNoId) recut_[size_t(o)] = cut(leaf_term(tg_, dag_.values[size_t(o)]), size_t(o), 1);
      return recut_[size_t(o)];
    }
    if (recut_[size_t(o)] == eg::kNoId) recut_[size_t(o)] = cut(uncut(at_[size_t(o)], size_t(o)), size_t(o), 1);
    return recut_[size_t(o)];
  }

  // Online softmax (plan.h): a value relative to a cut max is built on the pieces' layout, axis A
  // of size K as [f, K/f] (a size-1 axis as [1, 1]), with the cut max as each piece's own max
  // ([.., f, 1, ..]); a rescaled sum or matmul multiplies each piece's partial by
  // exp(piece max - overall max) and sums the pieces.
  int axis_of(int base) const { return dag_.values[size_t(base)].axis + grid_axes_; }

  eg::Id pieces(eg::Id x, int A, const Dim& f) {
    if (tg_.rank(x) == 0) return x;
    std::vector<Dim> s = tg_.dims_of(x), cut(s.begin(), s.begin() + A);
    const Dim k = s[size_t(A)];
    if (k == Dim(1)) cut.insert(cut.end(), {Dim(1), Dim(1)});
    else cut.insert(cut.end(), {f, k / f});
    cut.insert(cut.end(), s.begin() + A + 1, s.end());
    return reshape(x, cut);
  }

  eg::Id max_of_pieces(int base) {
    auto it = piece_max_.find(base);
    if (it != piece_max_.end()) return it->second;
    const int A = axis_of(base);
    const eg::Id m = node(eg::TOp::Max, {pieces(at_[size_t(dag_.values[size_t(base)].operands[0])], A, family_.split[size_t(base)])}, A + 1);
    return piece_max_[base] = m;
  }

  // exp(piece max - overall max) for each piece ([.., f, 1, ..], as the pieces' max).
  eg::Id rescale_factor(int base) {
    const eg::Id m = max_of_pieces(base);
    return node(eg::TOp::Exp, {node(eg::TOp::Sub, {m, node(eg::TOp::Max, {m}, axis_of(base))})});
  }

  // A value relative to the cut max `base`, piece by piece.
  eg::Id local_value(size_t i) {
    const DagValue& d = dag_.values[i];
    const int base = family_.local[i], A = axis_of(base);
    std::vector<eg::Id> ops;
    for (int o : d.operands)
      ops.push_back(o == base                            ? max_of_pieces(base)
                    : family_.local[size_t(o)] == base ? pieces_of_[size_t(o)]
                                                       : pieces(at_[size_t(o)], A, family_.split[size_t(base)]));
    return node(eg::term_op(d.op), ops);
  }

  // A rescaled sum or matmul: each piece's partial times its factor, summed over the pieces.
  eg::Id rescaled_value(size_t i) {
    const DagValue& d = dag_.values[i];
    const int base = family_.rescaled[i], A = axis_of(base);
    const eg::Id factor = rescale_factor(base);
    const eg::Id x = pieces_of_[size_t(d.operands[0])];
    eg::Id total;
    std::vector<Dim> out;
    if (d.op == Op::Sum) {
      total = node(eg::TOp::Sum, {node(eg::TOp::Mul, {factor, node(eg::TOp::Sum, {x}, A + 1)})}, A);
      out = tg_.dims_of(x);
      out.erase(out.begin() + A + 1);
      out[size_t(A)] = Dim(1);
    } else {
      // x: [.., n, f, K/f] (A = r - 1) against b: [.., K, m], as split_matmul.
      const std::vector<Dim> sx = tg_.dims_of(x), sb = tg_.dims_of(at_[size_t(d.operands[1])]);
      const size_t r = sb.size();
      std::vector<Dim> cx = sx, cb(sb.begin(), sb.end() - 2), cf = tg_.dims_of(factor);
      cx.push_back(Dim(1));
      cb.insert(cb.end(), {Dim(1), sx[r - 1], sx[r], sb[r - 1]});
      cf.push_back(Dim(1));
      const eg::Id prod = node(eg::TOp::Mul, {reshape(x, cx), reshape(at_[size_t(d.operands[1])], cb)});
      total = node(eg::TOp::Sum, {node(eg::TOp::Mul, {reshape(factor, cf), node(eg::TOp::Sum, {prod}, int(r))})}, int(r) - 1);
      out.assign(sx.begin(), sx.end() - 2);
      out.push_back(sb[r - 1]);
    }
    return reshape(total, out);
  }

  // An op of the block on its operands' tiles; a reduction its loop or grid cuts into split[i]
  // pieces as the sum (or max) of the pieces' partials.
  eg::Id computed_value(size_t i) {
    const DagValue& d = dag_.values[i];
    const OpClass cls = op_class(d.op);
    if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Matmul && cls != OpClass::Reduce && !is_data_movement(d.op))
      throw Error(Error::Kind::Failed, std::string("family term: no term for ") + op_name(d.op));
    const eg::TOp op = eg::term_op(d.op);
    std::vector<eg::Id> ops;
    for (int o : d.operands) ops.push_back(family_.kernel[i] == 1 ? in_kernel1(o) : at_[size_t(o)]);
    const Dim f = family_.split[i];
    const int A = d.axis + grid_axes_;
    if (d.op == Op::Split) return tg_.split_part(A, d.parts, d.index, ops[0]);  // its axis is whole in every tile (plan.cpp)
    if (d.op == Op::Concat) return node(op, ops, A);
    if (f == Dim(1)) return is_reduction(d.op) ? node(op, ops, A) : node(op, ops);
    if (d.op == Op::Matmul) return split_matmul(ops[0], ops[1], f);
    if (d.op == Op::Rms) {
      // rms_accumulate: sqrt(sum of squares over all pieces / K).
      eg::Id k = tg_.constant(Constant{tg_.dims_of(ops[0])[size_t(A)], 0});
      eg::Id total = split_reduce(eg::TOp::Sum, node(eg::TOp::Mul, {ops[0], ops[0]}), A, f);
      return node(eg::TOp::Sqrt, {node(eg::TOp::Div, {total, k})});
    }
    // sum: the sum of the pieces' sums; max: the max of the pieces' maxes.
    return split_reduce(op, ops[0], A, f);
  }

  // [.., n, K] x [.., K, m] = sum over the pieces of (a as [.., n, f, K/f, 1]) * (b as [.., 1, f, K/f, m]).
  eg::Id split_matmul(eg::Id a, eg::Id b, const Dim& f) {
    std::vector<Dim> sa = tg_.dims_of(a), sb = tg_.dims_of(b);
    const size_t r = sa.size();
    const Dim k = sa[r - 1];
    std::vector<Dim> ca(sa.begin(), sa.end() - 1), cb(sb.begin(), sb.end() - 2);
    ca.insert(ca.end(), {f, k / f, Dim(1)});
    cb.insert(cb.end(), {Dim(1), f, k / f, sb[r - 1]});
    eg::Id prod = node(eg::TOp::Mul, {reshape(a, ca), reshape(b, cb)});
    eg::Id sum = node(eg::TOp::Sum, {node(eg::TOp::Sum, {prod}, int(r))}, int(r) - 1);
    std::vector<Dim> out = tg_.dims_of(sum);
    out.erase(out.begin() + int(r) - 1, out.begin() + int(r) + 1);
    return reshape(sum, out);
  }

  eg::TensorGraph& tg_;
  const Dag& dag_;
  const Family& family_;
  const int grid_axes_;  // leading grid axes of every tile
  std::vector<eg::Id> at_;         // [value] its term on its tiles, as far as built
  std::vector<eg::Id> recut_;      // [value] a kernel-0 value as kernel 1's tiles, once built
  std::vector<eg::Id> pieces_of_;  // [value] a local value's term on the pieces' layout
  std::map<int, eg::Id> piece_max_;
};

}  // namespace

eg::Id family_term(eg::TensorGraph& tg, const Dag& dag, const Family& family, size_t output) {
  return FamilyTerm(tg, dag, family).output(output);
}

}  // namespace prism::search
