// Reads the text form of an sGraph (grammar in print.h, description in docs/sgraph.md).
// Only syntax and names are checked here: operands must name earlier values of the same kernel,
// map entries must name grid dims of the kernel. Everything structural is validate.h's job.
#pragma once
#include <string_view>

#include "engine/sgraph/sgraph.h"

namespace prism::sgraph {

// Throws Error{InvalidArgument} with "line L, col C: <what was expected>".
SGraph parse(std::string_view text);

}  // namespace prism::sgraph
