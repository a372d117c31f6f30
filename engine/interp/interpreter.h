// The reference interpreter: the ground truth every later backend is checked against.
//
// It evaluates a lowered program (primitives only) for concrete dim bindings. Arithmetic is f32;
// every op's result is rounded to its dtype's storage (f16/bf16 round-to-nearest-even). Matmul
// accumulates in f32, reductions (sum, rms) in double, each rounded once: a mean of a row with a
// large mean is then the mean, not the rounding of its f32 running sum (docs/design.md,
// "Numerics"). Scalar constants are f32.
// Elementwise ops compute the op table's formulas (ir/ops.h: gelu is the exact erf form, relu keeps
// NaN); max propagates NaN. The CancelToken is polled between ops and inside long loops.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"
#include "engine/ir/shape.h"

namespace prism {

// Every input of the program that `named` does not hold yet (a user's file), seeded random at its
// declared dtype inside its domain (tensor.h's random_tensor, ir/input_domains.h): what `run`,
// the search's numeric check and the tuner draw. Throws as concrete_shape for an unbound dim.
void draw_inputs(const Program& program, const DimBindings& dims, uint64_t seed, std::map<std::string, Tensor>& named);
// Every input drawn so: in parameter order, and by name in `by_name` (may be null).
std::vector<Tensor> random_inputs(const Program& program, const DimBindings& dims, uint64_t seed, std::map<std::string, Tensor>* by_name);

// `inputs` maps each program input name to its tensor; a tensor whose dtype differs from the
// declared one is converted (rounded). Throws Error: InvalidArgument (missing input, shape
// mismatch, a dim that is not a positive integer), Failed (a composite was not lowered),
// Cancelled.
std::vector<Tensor> interpret(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                              const CancelToken* cancel = nullptr);

// The same, with each value (each input and each op's result) moved by `steps[id]` of itself as
// it is computed: times 1 + step or 1 - step, by a pseudo-random sign per position that `pattern`
// fixes (each pattern another draw of signs). How far an output then moves is how far rounding
// its values differently can move it, as a kernel that sums in another order or keeps a 16-bit
// value in f32 does: the edge suite's allowance for an ill-conditioned output (tune/compare.h,
// compare_conditioned; docs/tuning.md, "The edge suite"). Throws Error{InvalidArgument} unless
// there is one step per value.
std::vector<Tensor> interpret_moved(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                    const std::vector<float>& steps, uint64_t pattern = 0, const CancelToken* cancel = nullptr);
// interpret_moved's steps for `declared` (its values' dtypes as the program declares them): a
// value computed at a 16-bit dtype its unit roundoff (2^-8 bf16, 2^-11 f16), which a kernel keeping
// it in f32 does not round, where that is more than `others`; every other value `others`.
std::vector<float> rounding_steps(const Program& declared, float others);

// The same with matmul accumulated in double too: the reference the floating-point checks measure
// a computation's error against (docs/design.md, "Numerics").
std::vector<Tensor> interpret_exact_sums(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                         const CancelToken* cancel = nullptr);
// The same with every sum accumulated in f32 in order, as a kernel's loop does: how a form fares
// in a kernel, where a sum carries the error of its order.
std::vector<Tensor> interpret_as_kernels(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                         const CancelToken* cancel = nullptr);

}  // namespace prism
