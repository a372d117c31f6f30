#include "engine/backend/cuda/emit_library.h"

#include <algorithm>

#include "engine/backend/cuda/emit_ops.h"
#include "engine/error.h"

namespace prism::backend::cuda::detail {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error(Error::Kind::InvalidArgument, "cuda codegen: " + what); }

}  // namespace

const DeviceTensors::Entry& DeviceTensors::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail("no type for device tensor '" + name + "'");
  return it->second;
}

std::string emit_library_kernel(const sgraph::LibraryKernel& kernel, const DeviceTensors& tensors, const std::string& fn, int threads,
                                CudaKernelInfo& info) {
  auto need = [&](size_t n) {
    if (kernel.inputs.size() != n)
      fail("library kernel '" + kernel.output + "' (" + op_name(kernel.op) + ") takes " + std::to_string(n) + " inputs, not " +
           std::to_string(kernel.inputs.size()));
  };
  info.name = fn;
  info.threads = threads;
  info.shared_bytes = 0;
  std::string params;
  std::vector<View> ins;
  for (const std::string& in : kernel.inputs) {
    std::string p = std::string("p").append(std::to_string(info.params.size()));
    info.params.push_back(in);
    params += std::string("const ") + storage_type(tensors.dtype(in)) + "* __restrict__ " + p + ", ";
    ins.push_back(dense_view(p, tensors.shape(in)));
  }
  std::string p = std::string("p").append(std::to_string(info.params.size()));
  info.params.push_back(kernel.output);
  params += std::string(storage_type(kernel.dtype)) + "* __restrict__ " + p;
  View out = dense_view(p, tensors.shape(kernel.output));

  EmitContext ctx;
  ctx.spread = Spread::Grid;
  ctx.threads = threads;
  std::string body;
  int64_t items = element_count(out.shape);  // what the grid-stride loop walks
  switch (op_class(kernel.op)) {
    case OpClass::Unary:
      need(1);
      unary_expr(kernel.op, "");
      body = emit_map(ins[0], out, [&](const std::string& x) { return unary_expr(kernel.op, x); }, ctx);
      break;
    case OpClass::Binary:
      need(2);
      binary_expr(kernel.op, "", "");
      body = emit_zip(ins[0], ins[1], out, [&](const std::string& a, const std::string& b) { return binary_expr(kernel.op, a, b); }, ctx);
      break;
    case OpClass::Matmul:
      need(2);
      body = emit_matmul(ins[0], ins[1], out, ctx);
      break;
    case OpClass::Reduce: {
      need(1);
      int rank = int(ins[0].shape.size());
      int axis = kernel.attrs.axis < 0 ? kernel.attrs.axis + rank : kernel.attrs.axis;
      if (axis < 0 || axis >= rank) fail("library kernel '" + kernel.output + "': axis out of range");
      body = emit_reduce(kernel.op, axis, ins[0], out, ctx);
      break;
    }
    default: fail("library kernel '" + kernel.output + "': cannot lower op '" + op_name(kernel.op) + "'");
  }
  info.grid_blocks = std::clamp<int64_t>((items + threads - 1) / threads, 1, int64_t(1) << 20);
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ") " + fn + "(" + params + ") {\n" + body + "}\n";
}

}  // namespace prism::backend::cuda::detail
