#include "engine/ir/program.h"

#include <algorithm>

#include "engine/error.h"

namespace prism {

double Constant::value(const DimBindings& bindings) const {
  if (!exact) return number;
  try {
    return exact->evaluate(bindings).to_double();
  } catch (const DimError& e) {
    throw Error(Error::Kind::InvalidArgument, e.what());
  }
}

bool Program::has_composites() const {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return op_class(v.op) == OpClass::Composite; });
}

}  // namespace prism
