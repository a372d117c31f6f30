#include "engine/search/fingerprint.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"
#include "engine/ir/shape.h"
#include "engine/util/hash.h"

namespace prism::search {

namespace {

constexpr uint64_t kP = 2147483579, kQ = 1073741789, kG = 4;  // p = 2q + 1; g = 2^2 has order q
constexpr uint64_t kNoMax = ~uint64_t(0);                     // the max accumulator's start (p component)
struct Cannot {};                                             // no fingerprint: fall back

uint64_t mix(uint64_t z) {  // splitmix64's finalizer
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t pow_mod(uint64_t b, uint64_t e, uint64_t m) {
  uint64_t r = 1;
  for (b %= m; e; e >>= 1, b = b * b % m)
    if (e & 1) r = r * b % m;
  return r;
}
FieldElem add(FieldElem a, FieldElem b) { return {(a.p + b.p) % kP, (a.q + b.q) % kQ}; }
FieldElem neg(FieldElem a) { return {(kP - a.p) % kP, (kQ - a.q) % kQ}; }
FieldElem mul(FieldElem a, FieldElem b) { return {a.p * b.p % kP, a.q * b.q % kQ}; }
FieldElem inv(FieldElem a) {
  if (a.p == 0 || a.q == 0) throw Cannot{};
  return {pow_mod(a.p, kP - 2, kP), pow_mod(a.q, kQ - 2, kQ)};
}
// kG^x for x < q < 2^30 from two tables of kG^lo and kG^(hi * 2^15): one product instead of a
// 30-step power (exp is applied to every element of attention-sized tensors).
FieldElem exp(FieldElem a) {
  struct Tables {
    std::vector<uint64_t> lo, hi;
    Tables() : lo(1u << 15), hi(1u << 15) {
      const uint64_t step = pow_mod(kG, 1u << 15, kP);
      lo[0] = hi[0] = 1;
      for (size_t i = 1; i < lo.size(); ++i) lo[i] = lo[i - 1] * kG % kP, hi[i] = hi[i - 1] * step % kP;
    }
  };
  static const Tables t;
  return {t.lo[a.q & 0x7fff] * t.hi[a.q >> 15] % kP, 1};
}
FieldElem of_int(int64_t n) { return {uint64_t((n % int64_t(kP) + int64_t(kP)) % int64_t(kP)), uint64_t((n % int64_t(kQ) + int64_t(kQ)) % int64_t(kQ))}; }
FieldElem of_rational(const Rational& r) { return mul(of_int(r.num()), inv(of_int(r.den()))); }
FieldElem of_double(double x) {  // the dyadic rational m * 2^e it stores
  if (!std::isfinite(x)) throw Cannot{};
  int e = 0;
  const int64_t m = int64_t(std::ldexp(std::frexp(x, &e), 53));
  const uint64_t s = uint64_t(e >= 53 ? e - 53 : 53 - e);
  const FieldElem pow2{pow_mod(2, s, kP), pow_mod(2, s, kQ)}, scale = e >= 53 ? pow2 : inv(pow2);
  return mul(of_int(m), scale);
}
// An uninterpreted function of the element (keyed by the op): a nonzero pair.
FieldElem opaque(uint64_t key, FieldElem a) {
  const uint64_t h = mix(key ^ mix(a.p * kQ + a.q));
  return {1 + h % (kP - 1), 1 + mix(h) % (kQ - 1)};
}
// Max under a random total order (a keyed hash, ties by value); kNoMax is the identity.
FieldElem max2(FieldElem a, FieldElem b) {
  if (a.p == kNoMax) return b;
  if (b.p == kNoMax) return a;
  const uint64_t ka = mix(0x6d6178 ^ mix(a.p * kQ + a.q)), kb = mix(0x6d6178 ^ mix(b.p * kQ + b.q));
  if (ka != kb) return ka > kb ? a : b;
  return a.p * kQ + a.q > b.p * kQ + b.q ? a : b;
}

FieldTensor filled(std::vector<int64_t> shape, FieldElem v = {}) {
  const int64_t n = element_count(shape);
  return {std::move(shape), std::vector<FieldElem>(size_t(n), v)};
}
std::vector<int64_t> bshape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (auto out = broadcast_shape(a, b)) return *out;
  throw Cannot{};
}
// fn(i, offset in a, offset in b) over every element of `out` (row-major).
template <typename Fn>
void each(const std::vector<int64_t>& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, Fn fn) {
  const int64_t n = element_count(out);
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t i = 0, oa = 0, ob = 0; i < n; ++i) {
    fn(i, oa, ob);
    for (size_t d = out.size(); d-- > 0;) {
      oa += sa[d], ob += sb[d];
      if (++idx[d] < out[d]) break;
      oa -= sa[d] * out[d], ob -= sb[d] * out[d], idx[d] = 0;
    }
  }
}

// x read through a load's view (sgraph.h; a transpose's perm is one), copied.
FieldTensor viewed(const FieldTensor& x, const std::vector<int>& view) {
  return {sgraph::view_dims(x.shape, view, int64_t(1)), sgraph::view_elements(x.data, x.shape, view)};
}

FieldTensor constant_value(const Constant& c, const DimBindings& dims) {
  return filled({}, c.exact ? of_rational(c.exact->evaluate(dims)) : of_double(c.number));
}

// The op table's field model of an elementwise op (ir/ops.h). An opaque op is keyed by its code:
// sqrt's key also serves rsqrt = 1 / sqrt.
uint64_t opaque_key(Op op) { return uint64_t(op) + 1; }
FieldElem unary(Op op, FieldElem x) {
  switch (op_info(op).field) {
    case FieldModel::Opaque: return opaque(opaque_key(op), x);
    case FieldModel::Identity: return x;
    case FieldModel::Neg: return neg(x);
    case FieldModel::Exp: return exp(x);
    case FieldModel::Square: return mul(x, x);
    case FieldModel::Silu: return mul(x, inv(add(of_int(1), exp(neg(x)))));
    case FieldModel::Rsqrt: return inv(opaque(opaque_key(Op::Sqrt), x));
    default: throw Cannot{};  // no model (log: the field has no log), or not a unary op
  }
}
FieldElem binary(Op op, FieldElem a, FieldElem b) {
  switch (op_info(op).field) {
    case FieldModel::Add: return add(a, b);
    case FieldModel::Sub: return add(a, neg(b));
    case FieldModel::Mul: return mul(a, b);
    case FieldModel::Div: return mul(a, inv(b));
    case FieldModel::Opaque: return opaque(opaque_key(op) ^ mix(b.p * kQ + b.q), a);  // keyed by b's element too
    default: throw Cannot{};
  }
}

FieldTensor matmul(const FieldTensor& a, const FieldTensor& b) {
  const size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra < 2 || rb < 2 || a.shape[ra - 1] != b.shape[rb - 2]) throw Cannot{};
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2), batch = bshape(ba, bb), shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  FieldTensor out = filled(shape);
  each(batch, broadcast_strides(ba, batch), broadcast_strides(bb, batch), [&](int64_t bi, int64_t oa, int64_t ob) {
    // Products are below 2^62: summed in 128 bits, reduced once per output instead of per term
    // (the modulo dominates otherwise).
    std::vector<unsigned __int128> sp(static_cast<size_t>(n), 0), sq(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(sp.begin(), sp.end(), 0);
      std::fill(sq.begin(), sq.end(), 0);
      for (int64_t p = 0; p < k; ++p) {
        const FieldElem x = a.data[size_t(oa * m * k + i * k + p)];
        const FieldElem* row = &b.data[size_t(ob * k * n + p * n)];
        for (int64_t j = 0; j < n; ++j) {
          sp[size_t(j)] += uint64_t(x.p * row[j].p);
          sq[size_t(j)] += uint64_t(x.q * row[j].q);
        }
      }
      for (int64_t j = 0; j < n; ++j)
        out.data[size_t(bi * m * n + i * n + j)] = {uint64_t(sp[size_t(j)] % kP), uint64_t(sq[size_t(j)] % kQ)};
    }
  });
  return out;
}

FieldTensor reduce(Op op, const FieldTensor& x, int axis, bool keepdims) {
  const size_t r = x.shape.size();
  if (axis < 0) axis += int(r);
  if (axis < 0 || size_t(axis) >= r) throw Cannot{};
  int64_t outer = 1, inner = 1, k = x.shape[size_t(axis)];
  for (size_t i = 0; i < size_t(axis); ++i) outer *= x.shape[i];
  for (size_t i = size_t(axis) + 1; i < r; ++i) inner *= x.shape[i];
  std::vector<int64_t> shape = x.shape;
  if (keepdims) shape[size_t(axis)] = 1;
  else shape.erase(shape.begin() + axis);
  FieldTensor out = filled(shape, op == Op::Max ? FieldElem{kNoMax, 0} : FieldElem{});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const FieldElem v = x.data[size_t((o * k + j) * inner + i)];
        FieldElem& acc = out.data[size_t(o * inner + i)];
        acc = op == Op::Max ? max2(acc, v) : op == Op::Rms ? add(acc, mul(v, v)) : add(acc, v);
      }
  if (op == Op::Rms)
    for (FieldElem& v : out.data) v = unary(Op::Sqrt, mul(v, inv(of_int(k))));
  return out;
}

// One op on field tensors; `shape` is the result's concrete shape where known (reshape needs it).
FieldTensor apply(Op op, const Attrs& attrs, const std::vector<const FieldTensor*>& xs, const std::vector<int64_t>& shape) {
  switch (op_class(op)) {
    case OpClass::Unary: {
      FieldTensor out = *xs[0];
      for (FieldElem& v : out.data) v = unary(op, v);
      return out;
    }
    case OpClass::Binary: {
      if (op == Op::Div) {
        // Invert the divisor once per element of its own (often broadcast, much smaller) tensor.
        FieldTensor inverse = *xs[1];
        for (FieldElem& v : inverse.data) v = inv(v);
        return apply(Op::Mul, attrs, {xs[0], &inverse}, shape);
      }
      const FieldTensor &a = *xs[0], &b = *xs[1];
      FieldTensor out = filled(bshape(a.shape, b.shape));
      each(out.shape, broadcast_strides(a.shape, out.shape), broadcast_strides(b.shape, out.shape),
           [&](int64_t i, int64_t oa, int64_t ob) { out.data[size_t(i)] = binary(op, a.data[size_t(oa)], b.data[size_t(ob)]); });
      return out;
    }
    case OpClass::Matmul: return matmul(*xs[0], *xs[1]);
    case OpClass::Reduce: return reduce(op, *xs[0], attrs.axis, attrs.keepdims);
    case OpClass::Reshape: {
      if (element_count(shape) != element_count(xs[0]->shape)) throw Cannot{};
      return {shape, xs[0]->data};
    }
    case OpClass::Transpose: return viewed(*xs[0], attrs.perm);
    case OpClass::Concat:
    case OpClass::Split: {
      // Both as copies of contiguous chunks along the axis.
      const size_t axis = size_t(attrs.axis);
      FieldTensor out = filled(shape);
      int64_t outer = 1, inner = 1;
      for (size_t i = 0; i < axis; ++i) outer *= shape[i];
      for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
      size_t at = 0;
      for (int64_t o = 0; o < outer; ++o) {
        if (op == Op::Split) {
          const int64_t part = shape[axis] * inner, whole = xs[0]->shape[axis] * inner;
          std::copy_n(xs[0]->data.begin() + o * whole + attrs.index * part, part, out.data.begin() + o * part);
          continue;
        }
        for (const FieldTensor* x : xs) {
          const int64_t chunk = x->shape[axis] * inner;
          std::copy_n(x->data.begin() + o * chunk, chunk, out.data.begin() + int64_t(at));
          at += size_t(chunk);
        }
      }
      return out;
    }
    default: throw Cannot{};
  }
}

// Copies the box `extent` at `from` in src to `to` in dst (same rank).
void copy_box(const FieldTensor& src, const std::vector<int64_t>& from, FieldTensor& dst, const std::vector<int64_t>& to,
              const std::vector<int64_t>& extent) {
  const std::vector<int64_t> ss = dense_strides(src.shape), ds = dense_strides(dst.shape);
  int64_t s0 = 0, d0 = 0;
  for (size_t i = 0; i < extent.size(); ++i) s0 += from[i] * ss[i], d0 += to[i] * ds[i];
  each(extent, ss, ds, [&](int64_t, int64_t s, int64_t d) { dst.data[size_t(d0 + d)] = src.data[size_t(s0 + s)]; });
}

// A rescaled accumulator's step: acc * exp(M - M') + x * exp(m - M'), M' = max(M, m), with M the
// running max `run` (updated to M'): exact, since exp is a homomorphism the rescalings telescope
// to exp(m_f - final max) whatever order the max takes.
void rescale_into(FieldTensor& acc, const FieldTensor& x, const FieldTensor& m, FieldTensor& run) {
  if (m.shape.size() > x.shape.size() || acc.data.size() != x.data.size()) throw Cannot{};
  auto factor = [](FieldElem from, FieldElem to) { return from.p == kNoMax ? FieldElem{} : exp(add(from, neg(to))); };
  std::vector<FieldElem> keep(m.data.size()), take(m.data.size());
  for (size_t j = 0; j < m.data.size(); ++j) {
    const FieldElem next = max2(run.data[j], m.data[j]);
    keep[j] = factor(run.data[j], next);
    take[j] = factor(m.data[j], next);
    run.data[j] = next;
  }
  std::vector<int64_t> ms(x.shape.size() - m.shape.size(), 1);  // m's strides against x's shape
  ms.insert(ms.end(), m.shape.begin(), m.shape.end());
  std::vector<int64_t> strides(ms.size(), 0);
  for (int64_t d = int64_t(ms.size()) - 1, st = 1; d >= 0; --d) {
    strides[size_t(d)] = ms[size_t(d)] == 1 ? 0 : st;
    st *= ms[size_t(d)];
  }
  each(x.shape, strides, strides, [&](int64_t e, int64_t j, int64_t) {
    acc.data[size_t(e)] = add(mul(acc.data[size_t(e)], keep[size_t(j)]), mul(x.data[size_t(e)], take[size_t(j)]));
  });
}

// One custom kernel over the field, block by block, as sgraph::evaluate does it.
void run_custom(const sgraph::CustomKernel& k, const std::vector<sgraph::TileInfo>& tiles, const DimBindings& b, FieldInputs& tensors,
                const CancelToken* cancel) {
  using sgraph::BlockOp;
  std::vector<int64_t> grid;
  for (const Dim& g : k.grid) grid.push_back(g.evaluate_size(b));
  const int64_t loop = k.loop_range().evaluate_size(b);
  std::vector<std::vector<int64_t>> tile(k.ops.size());
  FieldInputs outputs;
  for (size_t i = 0; i < k.ops.size(); ++i) {
    if (!tiles[i].type) throw Cannot{};
    tile[i] = concrete_shape(tiles[i].type->shape, b);
    if (k.ops[i].kind == BlockOp::Kind::Save) outputs[k.ops[i].name] = filled(sgraph::view_dims(tile[i], k.ops[i].view, int64_t(1)));
  }
  // Where the tile of (block, iteration) starts along each data dim under `map`.
  auto offsets = [&](const sgraph::Map& map, const std::vector<int64_t>& t, const std::vector<int64_t>& block, int64_t f) {
    std::vector<int64_t> at(t.size(), 0);
    for (size_t j = 0; j < t.size(); ++j) {
      const int64_t walk = map.loop.dim == int(j) ? loop : 1;
      for (size_t gi = 0; gi < map.grid.size(); ++gi)
        if (map.grid[gi].dim == int(j)) at[j] += block[gi] * t[j] * walk;
      if (walk > 1) at[j] += f * t[j];
    }
    return at;
  };
  auto phase = [&](size_t i) {
    if (k.ops[i].kind == BlockOp::Kind::Accumulate) return 1;
    const sgraph::LoopRole r = tiles[i].role;
    return r == sgraph::LoopRole::Invariant ? 0 : r == sgraph::LoopRole::After ? 2 : 1;
  };
  auto rms_axis = [&](size_t i) {
    const int rank = int(tile[size_t(k.ops[i].operands[0])].size()), axis = k.ops[i].attrs.axis;
    return axis < 0 ? axis + rank : axis;
  };
  std::vector<FieldTensor> values(k.ops.size());
  std::map<size_t, FieldTensor> views;  // loads through a view: the viewed tensor, made once
  std::map<size_t, FieldTensor> running_max;  // a rescaled accumulator's, by op
  auto run_phase = [&](int ph, const std::vector<int64_t>& block, int64_t f) {
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (phase(i) != ph) continue;
      const BlockOp& op = k.ops[i];
      if (op.kind == BlockOp::Kind::Load) {
        const FieldTensor& src = op.view.empty() ? tensors.at(op.tensor) : views.try_emplace(i, viewed(tensors.at(op.tensor), op.view)).first->second;
        values[i] = filled(tile[i]);
        copy_box(src, offsets(op.map, tile[i], block, f), values[i], std::vector<int64_t>(tile[i].size(), 0), tile[i]);
      } else if (op.kind == BlockOp::Kind::Compute && op.op == Op::Const) {
        values[i] = constant_value(op.attrs.constant, b);
      } else if (op.kind == BlockOp::Kind::Compute) {
        std::vector<const FieldTensor*> xs;
        for (int o : op.operands) xs.push_back(&values[size_t(o)]);
        values[i] = apply(op.op, op.attrs, xs, tile[i]);
      } else if (op.kind == BlockOp::Kind::Accumulate) {
        const FieldTensor& x = values[size_t(op.operands[0])];
        FieldTensor& acc = values[i];
        if (op.acc == sgraph::AccKind::Rescaled) {
          rescale_into(acc, x, values[size_t(op.operands[1])], running_max.at(i));
          continue;
        }
        if (op.acc == sgraph::AccKind::Rms) {
          const FieldTensor s = reduce(Op::Sum, apply(Op::Square, {}, {&x}, x.shape), rms_axis(i), true);
          if (s.data.size() != acc.data.size()) throw Cannot{};
          for (size_t e = 0; e < acc.data.size(); ++e) acc.data[e] = add(acc.data[e], s.data[e]);
        } else {
          if (x.data.size() != acc.data.size()) throw Cannot{};
          for (size_t e = 0; e < acc.data.size(); ++e)
            acc.data[e] = op.acc == sgraph::AccKind::Max ? max2(acc.data[e], x.data[e]) : add(acc.data[e], x.data[e]);
        }
      } else {  // save: partial axes first, then the tile where its map says
        const FieldTensor& x = values[size_t(op.operands[0])];
        std::vector<int64_t> to;
        for (size_t gi = 0; gi < op.map.grid.size(); ++gi)
          if (op.map.grid[gi].is_none()) to.push_back(block[gi]);
        const size_t parts = to.size();
        for (int64_t o : offsets(op.map, x.shape, block, f)) to.push_back(o);
        std::vector<int64_t> extent(parts, 1);
        extent.insert(extent.end(), x.shape.begin(), x.shape.end());
        FieldTensor view{extent, x.data};
        copy_box(view, std::vector<int64_t>(extent.size(), 0), outputs.at(op.name), to, extent);
      }
    }
  };
  std::vector<int64_t> block(grid.size(), 0);
  while (true) {
    if (cancel) cancel->check();
    for (size_t i = 0; i < k.ops.size(); ++i)
      if (k.ops[i].kind == BlockOp::Kind::Accumulate) {
        values[i] = filled(tile[i], k.ops[i].acc == sgraph::AccKind::Max ? FieldElem{kNoMax, 0} : FieldElem{});
        if (k.ops[i].acc == sgraph::AccKind::Rescaled) running_max[i] = filled(tile[size_t(k.ops[i].operands[1])], FieldElem{kNoMax, 0});
      }
    run_phase(0, block, 0);
    for (int64_t f = 0; f < loop; ++f) run_phase(1, block, f);
    for (size_t i = 0; i < k.ops.size(); ++i)  // rms: sqrt(sum of squares / count seen along the axis)
      if (k.ops[i].kind == BlockOp::Kind::Accumulate && k.ops[i].acc == sgraph::AccKind::Rms) {
        const FieldElem n = inv(of_int(tile[size_t(k.ops[i].operands[0])][size_t(rms_axis(i))] * loop));
        for (FieldElem& v : values[i].data) v = unary(Op::Sqrt, mul(v, n));
      }
    run_phase(2, block, 0);
    size_t i = block.size();
    while (i-- > 0) {
      if (++block[i] < grid[i]) break;
      block[i] = 0;
    }
    if (i == size_t(-1)) break;
  }
  for (const BlockOp& op : k.ops)  // a save through a view: into the tensor's own dims
    if (op.kind == BlockOp::Kind::Save && !op.view.empty()) outputs[op.name] = viewed(outputs.at(op.name), sgraph::inverse_view(op.view));
  for (auto& [name, t] : outputs) tensors[name] = std::move(t);
}

FieldTensor evaluate_instance(const sgraph::Instance& inst, const FieldInputs& inputs, const CancelToken* cancel) {
  const sgraph::SGraph& g = inst.graph;
  FieldInputs tensors;
  for (const sgraph::TensorDecl& in : g.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end() || it->second.shape != concrete_shape(in.type.shape, inst.bindings)) throw Cannot{};
    tensors[in.name] = it->second;
  }
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const sgraph::Kernel& kernel = g.kernels[k];
    if (kernel.custom) {
      run_custom(kernel.block, inst.analysis.tiles[k], inst.bindings, tensors, cancel);
      continue;
    }
    const sgraph::LibraryKernel& lib = kernel.library;
    std::vector<const FieldTensor*> xs;
    std::vector<FieldTensor> views(lib.inputs.size());
    for (size_t i = 0; i < lib.inputs.size(); ++i) {
      const FieldTensor& x = tensors.at(lib.inputs[i]);
      if (!lib.view(i).empty()) views[i] = viewed(x, lib.view(i));
      xs.push_back(lib.view(i).empty() ? &x : &views[i]);
    }
    auto type = inst.analysis.tensors.find(lib.output);
    if (type == inst.analysis.tensors.end()) throw Cannot{};
    tensors[lib.output] = apply(lib.op, lib.attrs, xs, concrete_shape(type->second.shape, inst.bindings));
  }
  return tensors.at(g.outputs.at(0));
}

}  // namespace

FieldInputs random_field_inputs(const Program& program, const DimBindings& dims, uint64_t seed) {
  FieldInputs out;
  for (int id : program.inputs) {
    const Value& v = program.value(id);
    FieldTensor t = filled(concrete_shape(v.type.shape, dims));
    uint64_t state = seed ^ fnv1a64(v.name);
    for (FieldElem& e : t.data) {
      const uint64_t h = mix(state++);
      e = {h % kP, mix(h) % kQ};
    }
    out[v.name] = std::move(t);
  }
  return out;
}

std::optional<FieldTensor> fingerprint(const Program& lowered, const DimBindings& dims, const FieldInputs& inputs, const CancelToken* cancel) {
  std::vector<FieldTensor> at(lowered.values.size());
  try {
    for (const Value& v : lowered.values) {
      if (cancel) cancel->check();
      const std::vector<int64_t> shape = concrete_shape(v.type.shape, dims);
      if (v.op == Op::Input) {
        at[size_t(v.id)] = inputs.at(v.name);
        if (at[size_t(v.id)].shape != shape) throw Cannot{};
      } else if (v.op == Op::Const) {
        at[size_t(v.id)] = constant_value(v.attrs.constant, dims);
      } else {
        std::vector<const FieldTensor*> xs;
        for (int o : v.operands) xs.push_back(&at[size_t(o)]);
        at[size_t(v.id)] = apply(v.op, v.attrs, xs, shape);
        if (at[size_t(v.id)].shape != shape) throw Cannot{};
      }
    }
  } catch (const Cannot&) {
    return std::nullopt;
  }
  return at[size_t(lowered.outputs.at(0))];
}

std::optional<FieldTensor> fingerprint(const sgraph::Instance& inst, const FieldInputs& inputs, const CancelToken* cancel) {
  try {
    return evaluate_instance(inst, inputs, cancel);
  } catch (const Cannot&) {
    return std::nullopt;
  }
}

DimBindings fingerprint_sizes(const sgraph::SGraph& family) {
  static const std::map<std::string, int64_t> kSizes = {{"g1", 2}, {"g2", 4}, {"g3", 2}, {"g4", 4}, {"F1", 3}};
  DimBindings sizes;
  for (const std::string& p : family.parameters()) {
    auto it = kSizes.find(p);
    sizes[p] = it == kSizes.end() ? 2 : it->second;
  }
  return sizes;
}

FingerprintCheck::FingerprintCheck(const Program& program, const DimBindings& dims, const CancelToken* cancel)
    : dims_(dims), inputs_(random_field_inputs(program, dims, 0x5eed)), reference_(fingerprint(program, dims, inputs_, cancel)) {}

FingerprintCheck::Verdict FingerprintCheck::check(const sgraph::SGraph& family, std::string& why, const CancelToken* cancel) const {
  if (!reference_) return Verdict::Cannot;
  std::optional<FieldTensor> got;
  try {
    sgraph::TileBudget roomy{int64_t(1) << 40};
    got = fingerprint(sgraph::instantiate(family, dims_, fingerprint_sizes(family), roomy), inputs_, cancel);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return Verdict::Cannot;  // the numeric check says why it does not instantiate
  }
  if (!got) return Verdict::Cannot;
  if (*got == *reference_) return Verdict::Match;
  why = got->shape != reference_->shape ? "fingerprint: output shape differs" : "fingerprint differs from the program's";
  return Verdict::Differ;
}

}  // namespace prism::search
