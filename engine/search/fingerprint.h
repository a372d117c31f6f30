// Finite-field fingerprints: the cheap first pre-filter of verification (verify.h).
//
// The program and an instantiated family are both evaluated on the same random inputs
// over a finite ring instead of floats. The arithmetic is exact, so two computations that are
// equal as real-number expressions give identical fingerprints whatever their summation order,
// tiling or accumulation order; different ones differ with high probability.
//
// The ring: Z_p x Z_q (each element a pair), with q = 1073741789 and p = 2q + 1 = 2147483579 both
// prime (p a safe prime), so products fit in 64 bits.
//   - add, sub, neg, mul, square, sum, matmul: componentwise ring operations (exact, order-free);
//     rational and dim constants, and decimal literals (0.1 is 1/10: engine/ir/decimal.h), are
//     a/b; any other float constant is the dyadic rational it stores.
//   - div: multiply by the inverse in both components. A zero denominator in either component
//     means "cannot fingerprint" (fall back to the numeric check); it never rejects.
//   - exp(x_p, x_q) = (g^x_q mod p, 1) with g = 4, of order q in Z_p^* (the squares). Then
//     exp(a + b) = exp(a) exp(b) and exp(-a) = 1 / exp(a) hold exactly: x -> g^x_q is a group
//     homomorphism (Z_q, +) -> (Z_p^*, ·), and x -> 1 one into Z_q^*. So any identity of the
//     e-graph's exp axioms (exp-add, exp-mul), e.g. a softmax shifted by any max, holds exactly.
//   - silu(x) = x / (1 + exp(-x)), exactly; 1 + exp(-x) is never 0 (-1 has even order, g^k odd).
//   - rms over K elements = sqrt(sum of squares / K) (the e-graph's rms-def); rsqrt = 1 / sqrt.
//   - sqrt, gelu, relu: uninterpreted functions: a keyed hash of the element to a nonzero pair.
//   - max (a reduction or a max accumulator): the maximum under a random total order (by a keyed
//     hash of the element): commutative, associative, idempotent, like max on the reals.
//   - log: "cannot fingerprint" (the e-graph's log-exp axiom, log(exp x) = x, has no model here).
// Soundness (a correct family is never rejected): every law the model violates concerns an
// uninterpreted op (sqrt, gelu, relu) or max's order, and a correct family applies those to the
// same values the program does, since the e-graph proof, the only thing that reports a family,
// treats them as uninterpreted too (no axiom rewrites under them except rms-def, modelled); so the
// family's and the program's field values agree. The exp, silu and ring laws hold exactly.
// Collisions of different computations: about one in q per output element.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/ir/program.h"
#include "engine/search/check_dims.h"
#include "engine/sgraph/instantiate.h"

namespace prism::search {

struct FieldElem {
  uint64_t p = 0, q = 0;
  bool operator==(const FieldElem&) const = default;
};

struct FieldTensor {
  std::vector<int64_t> shape;
  std::vector<FieldElem> data;
  bool operator==(const FieldTensor&) const = default;
};

using FieldInputs = std::map<std::string, FieldTensor>;

// Uniform random field inputs for the program's inputs at `dims` (deterministic in seed).
FieldInputs random_field_inputs(const Program& program, const DimBindings& dims, uint64_t seed);
// Output 0 of a lowered program / an instance over the field; none when it cannot be fingerprinted
// (a zero denominator, a log, an op with no model). Throws Error{Cancelled}.
std::optional<FieldTensor> fingerprint(const Program& lowered, const DimBindings& dims, const FieldInputs& inputs,
                                       const CancelToken* cancel = nullptr);
std::optional<FieldTensor> fingerprint(const sgraph::Instance& instance, const FieldInputs& inputs, const CancelToken* cancel = nullptr);

// The fingerprint's own sizes for a family: g1=2, g2=4, g3=2, g4=4, F1=3 (others 2), at
// fingerprint_dims (check_dims.h). A family whose dims do not divide at these sizes is not
// fingerprinted.
DimBindings fingerprint_sizes(const sgraph::SGraph& family);

// The program's fingerprint at `dims` (fingerprint_dims in the search); families at fingerprint_sizes.
class FingerprintCheck {
 public:
  // Fingerprints the program itself; throws Error{Cancelled} when `cancel` fires.
  FingerprintCheck(const Program& program, const DimBindings& dims, const CancelToken* cancel = nullptr);
  enum class Verdict { Match, Differ, Cannot };
  // Differ: `why` says so. Cannot: no fingerprint (the program's or the family's), or no instance.
  Verdict check(const sgraph::SGraph& family, std::string& why, const CancelToken* cancel) const;

 private:
  DimBindings dims_;
  FieldInputs inputs_;
  std::optional<FieldTensor> reference_;
};

}  // namespace prism::search
