// The edge suite (docs/tuning.md, "The edge suite"): input sets beside the seeded one, drawn from
// the program, on which every candidate must match the reference interpreter where the reference
// is finite. Seeded inputs in [-1, 1] miss what users have: activations of large magnitude and
// outliers, additive -inf masks (a causal mask, a fully masked row, a fully masked chunk of a row
// as kernels cut it), rows of zeros, and inputs at the edge of their domain.
//
// Each set starts from the seeded inputs and changes some of them (ir/input_roles.h says which are
// activations, weights and masks):
//   "std 10", "std 100"     activations drawn as seeded (inside their domains), times std * sqrt(3)
//   "outliers ±M"           the seeded activations with a few values at ±M: the largest of the
//                           dtype's list (f16 60000, 6000, 600; bf16 and f32 1e30, 1e10, 1e4) for
//                           which every value the reference computes stays finite, else the last
//   "rows of zeros"         each activation's first and last row (along its last axis) zero
//   mask sets, per mask     the mask 0 but -inf: causal (key j > query i + keys - queries), a
//                           whole row, the first half, first quarter and last quarter of each row
//   "domain edges"          inputs with a domain half at its edge: 0 (>= 0) or 2^-10 (> 0)
//   floating-point edges    interp/float_edges.h's sets, where IEEE and the reals part (mean-shifted
//                           rows, near exp overflow, large logits beside masks, opposite outliers
//                           over tiny values, near the f16 range), against the program with exact
//                           sums and with no allowance for ill-conditioning; one on which the
//                           program itself overflows, or is off by more than dtype_tolerance
//                           (its own rounding), is skipped with a note
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"

namespace prism::tune {

struct InputSet {
  std::string name;                     // "std 100", "causal -inf mask (M)", "your data (X)"
  std::map<std::string, Tensor> named;  // every input, by name, at its dtype
  std::vector<Tensor> reference;        // the reference interpreter's outputs on them
  std::string skip;                     // why nothing is judged on it (the program overflows inside)
  // Whether a miss gets compare_conditioned's whole second chance. Not on the floating-point
  // edges: there rounding f32 intermediates differently is what is judged (docs/design.md,
  // "Numerics"); only what rounding the program's 16-bit values differently moves is allowed.
  bool conditioned = true;
};

// A set, made when called (one set's tensors in memory at a time).
using MakeInputSet = std::function<InputSet(const CancelToken* cancel)>;

// The edge sets of `program` (lowered, at the dtypes the reference runs at) at `dims`, around
// `seeded` (every input by name, as the seeded check drew them); `seed` draws the large ones.
// The makers refer to `program`, `dims` and `seeded`, which must outlive them.
std::vector<MakeInputSet> edge_suite(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                                     uint64_t seed);

// The user's own data (`tune … --check-with X=x.npy`): `seeded` with `given` in place, each
// rounded to its input's dtype. Throws Error{InvalidArgument} for an unknown input or a shape
// that is not the input's at `dims`.
InputSet user_input_set(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                        const std::map<std::string, Tensor>& given, const CancelToken* cancel);

// The inputs of `set` in parameter order.
std::vector<Tensor> ordered_inputs(const Program& program, const InputSet& set);

}  // namespace prism::tune
