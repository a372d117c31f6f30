#include "engine/backend/cpu/emit_library.h"

#include "engine/error.h"

namespace prism::backend::cpu::detail {

std::string emit_library_kernel(const sgraph::LibraryKernel& kernel, const std::vector<View>& inputs, const View& out, int simd_bytes) {
  EmitContext ctx;
  ctx.parallel = true;
  ctx.simd_bytes = simd_bytes;
  auto need = [&](size_t n) {
    if (inputs.size() != n)
      throw Error(Error::Kind::InvalidArgument, "codegen: library kernel '" + kernel.output + "' (" + op_name(kernel.op) + ") takes " +
                                                    std::to_string(n) + " inputs, not " + std::to_string(inputs.size()));
  };
  switch (op_class(kernel.op)) {
    case OpClass::Unary: need(1); return emit_unary(kernel.op, inputs[0], out, ctx);
    case OpClass::Binary: need(2); return emit_binary(kernel.op, inputs[0], inputs[1], out, ctx);
    case OpClass::Matmul: need(2); return emit_matmul(inputs[0], inputs[1], out, false, ctx);
    case OpClass::Reduce: {
      need(1);
      int rank = int(inputs[0].shape.size());
      int axis = kernel.attrs.axis < 0 ? kernel.attrs.axis + rank : kernel.attrs.axis;
      if (axis < 0 || axis >= rank) throw Error(Error::Kind::InvalidArgument, "codegen: library kernel '" + kernel.output + "': axis out of range");
      return emit_reduce(kernel.op, axis, inputs[0], out, ctx);
    }
    default:
      throw Error(Error::Kind::InvalidArgument, "codegen: library kernel '" + kernel.output + "': cannot lower op '" + op_name(kernel.op) + "'");
  }
}

}  // namespace prism::backend::cpu::detail
