#include "engine/ir/checked_dtypes.h"

namespace prism {

std::vector<DType> checked_dtypes(const Program& p) {
  std::vector<DType> coarsest(p.values.size(), DType::F32);  // over each value's computation
  for (const Value& v : p.values) {
    if (v.op == Op::Input || v.op == Op::Const) continue;
    DType d = v.type.dtype;
    for (int operand : v.operands) d = coarser(d, coarsest[size_t(operand)]);
    coarsest[size_t(v.id)] = d;
  }
  std::vector<DType> out;
  for (int id : p.outputs) out.push_back(coarser(p.value(id).type.dtype, coarsest[size_t(id)]));
  return out;
}

}  // namespace prism
