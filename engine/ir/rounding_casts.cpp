#include "engine/ir/rounding_casts.h"

namespace prism {

std::vector<bool> rounding_casts(const Program& p) {
  std::vector<bool> out(p.values.size(), false);
  for (const Value& v : p.values)
    for (int operand : v.operands) {
      const Value& cast = p.value(operand);
      if (cast.op == Op::Cast && v.type.dtype != cast.type.dtype && narrows(cast.type.dtype, p.value(cast.operands[0]).type.dtype))
        out[size_t(operand)] = true;
    }
  return out;
}

}  // namespace prism
