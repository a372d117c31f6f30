// The program without its casts, for the search and its proofs. A cast (f32(x), f16(x), bf16(x))
// is the identity on the reals, where the e-graph reasons; what it changes is rounding, which the
// tuner's numeric check judges against the program with its casts (docs/search.md, "Casts").
//
//   - every reader of a cast reads its operand instead;
//   - an operand that only casts read (and is no input) takes the last cast's dtype, so a value
//     a kernel stores keeps the dtype the program rounds it to (rms_norm's f16 result), and a
//     16-bit composite's statistics, computed in f32, stay f32 wherever a family stores them;
//   - a cast the program returns stays where its operand cannot take its dtype (an input, or a
//     value read elsewhere at another dtype): an output is stored at the program's dtype.
#pragma once
#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites). The program itself when it has
// no cast.
Program drop_casts(const Program& lowered);

}  // namespace prism
