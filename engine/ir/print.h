// Prints IR back in the program language, one statement per value with its inferred type as a
// trailing comment (`t0 = rms(X, axis=-1)  # f16[n, 1]`). Constants are printed inline where they
// are used. The text re-parses to the same program.
#pragma once
#include <string>

#include "engine/ir/program.h"

namespace prism {

std::string type_str(const Type& type);          // "f16[n, d]"
std::string constant_str(const Constant& c);     // "2", "d", "(d/2)", "1e-06", "(-1)"
std::string op_spelling(const Value& v);         // the op as the language calls it: "rms_norm"; a cast "f16"
// "program scale(X: f16[n, d], W: f16[d, d]) -> f16[n, d]"; several outputs: "-> (…, …)".
std::string signature(const Program& program);
std::string print_program(const Program& program);

}  // namespace prism
