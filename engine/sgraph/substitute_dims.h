// An sGraph's dims replaced by expressions, on the IR's values: its inputs' shapes, its grid sizes
// and loop ranges, and its ops' attributes (a reshape's shape, an exact constant). The search names
// a program's fixed sizes as dims and writes them back into every family it finds this way
// (docs/search.md, "Fixed sizes").
#pragma once
#include <map>
#include <string>

#include "engine/sgraph/sgraph.h"

namespace prism::sgraph {

SGraph substitute_dims(SGraph graph, const std::map<std::string, Dim>& values);

}  // namespace prism::sgraph
