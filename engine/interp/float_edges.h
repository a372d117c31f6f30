// Inputs where IEEE arithmetic and the reals part (docs/design.md, "Numerics"): the sets on which
// the search, `equiv` and the tuner's edge suite judge a computation that the e-graph proved equal
// to its program over the reals. Seeded inputs in [-1, 1) never show that
//   exp(S) * exp(-max S) overflows where exp(S - max S) does not,
//   sum(x^2) - k m^2 cancels where sum((x - m)^2) does not,
//   A/C + B/C overflows where (A + B)/C does not.
//
// Each set changes the inputs a computation's stability depends on (ir/input_roles.h): weights
// stay as drawn; "large" inputs are the activations and every mask candidate (in S + M either may
// be the scores).
//   "mean-shifted rows"        activations drawn in [-1, 1) plus a mean of 2^16 (f32), 16 (f16) or
//                              2 (bf16): a spread the dtype still resolves beside a large mean
//   "near exp overflow"        activations at log(max) of their dtype (88.7 for f32) plus the draw,
//                              the first positive, the next negative, and so on
//   "large logits beside a zero mask (M)", "… a causal -inf mask (M)"
//                              per mask candidate M: M as named, the other large inputs of std 100
//   "opposite outliers over tiny values …"
//                              at four evenly spread places of each large input, +H, -H or 1/H
//                              (H = 1e20, 256 for f16), assigned to the inputs in rotation (three
//                              sets), or every assignment with `every_outlier_pattern`
//   "near the 16-bit range"    f16 large inputs drawn times half of 65504 (bf16 has f32's range)
// An input with a domain (>= 0, > 0) keeps it: a negative value becomes positive.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/domain.h"
#include "engine/ir/input_roles.h"
#include "engine/ir/program.h"

namespace prism {

// What input sets are made from: the program (lowered), its dims, the seeded inputs (every input
// by name), the seed of fresh draws, and what each input is (ir/input_roles.h, input_domains.h).
struct SetBasis {
  const Program& program;
  const DimBindings& dims;
  const std::map<std::string, Tensor>& seeded;
  uint64_t seed;
  InputRoles roles;
  std::vector<Domain> domains;

  // The basis of those sets, reading roles and domains off `program`.
  static SetBasis of(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded, uint64_t seed);
  const std::string& name(size_t input) const { return program.value(program.inputs[input]).name; }
};

struct FloatEdge {
  std::string name;
  std::function<std::map<std::string, Tensor>()> make;  // every input, by name, at its dtype
};

struct FloatEdgeOptions {
  // Every assignment of +H, -H, 1/H to the large inputs (3^n sets, up to four inputs) instead of
  // three rotations: what `equiv` affords on its small programs and the search does not.
  bool every_outlier_pattern = false;
  // Every input large, vectors too (which a layer's roles call gains and biases): `equiv`'s
  // programs are identities, not layers.
  bool every_input_large = false;
};

// The sets of `program` (lowered) at `dims`; inputs a set leaves alone are `seeded`'s. The makers
// refer to `program`, `dims` and `seeded`, which must outlive them.
std::vector<FloatEdge> float_edges(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                                   uint64_t seed, const FloatEdgeOptions& options = {});

// Which places of an additive mask are -inf: masked(query, key, queries, keys), keys along the
// mask's axis, queries along the axis before it (0 of 1 when there is none).
using MaskPattern = std::function<bool(int64_t query, int64_t key, int64_t queries, int64_t keys)>;
// `t` as that mask along `axis`: -inf where `masked`, else 0.
void fill_mask(Tensor& t, int axis, const MaskPattern& masked);

// The program with every value it computes an output: its own outputs first, then the rest.
Program with_every_value(const Program& program);

// Whether `program` overflows inside on `inputs`: some value it computes is NaN, +inf, or -inf
// where no input holds -inf (a mask's -inf passing through is no overflow). What follows an
// overflow is no answer to judge a computation against (rsqrt(inf) is 0), so the checks drop
// such a set for that program. Throws as interpret.
bool overflows_inside(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& inputs,
                      const CancelToken* cancel = nullptr);
// The same judged on `values`, every value of the program (with_every_value) on `inputs`.
bool overflowed(const std::vector<Tensor>& values, const std::map<std::string, Tensor>& inputs);

// The largest difference of `got` from `exact` where `exact` and `own` (the program's own value)
// are finite, over exact's largest magnitude there; infinite where `got` is not finite there.
double error_where_finite(const Tensor& got, const Tensor& exact, const Tensor& own);

// How far from the exact value a computation may be beyond the program's own error on a set: a
// few roundings of the output's dtype (1e-4 f32, 1e-3 f16, 8e-3 bf16).
double dtype_tolerance(DType dtype);

}  // namespace prism
