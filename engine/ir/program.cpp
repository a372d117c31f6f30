#include "engine/ir/program.h"

#include <algorithm>

namespace prism {

bool Program::has_composites() const {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return op_class(v.op) == OpClass::Composite; });
}

}  // namespace prism
