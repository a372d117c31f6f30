#include "engine/backend/cuda/eager.h"

#include <algorithm>

#include "engine/backend/c_expr.h"
#include "engine/backend/cuda/kernel_sources.h"
#include "engine/backend/eager_plan.h"
#include "engine/backend/view.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

using Shape = std::vector<int64_t>;
constexpr int kThreads = 256;

std::string lit(int64_t v) { return std::to_string(v) + "LL"; }

std::string offset(const Shape& strides) { return index_offset(strides, "LL"); }

// Declarations of i0…i(r-1), the coordinates of flat index `idx` in `shape`.
std::string coordinates(const Shape& shape) {
  std::string s = "i64 r = idx; (void)r;";
  for (size_t d = shape.size(); d-- > 0;)
    s += " const i64 i" + std::to_string(d) + " = r % " + lit(shape[d]) + "; r /= " + lit(shape[d]) + ";";
  return s;
}

const char* ctype(DType t) { return t == DType::F16 ? "__half" : t == DType::BF16 ? "__nv_bfloat16" : "float"; }

constexpr const char* kPrologue = embedded::eager_prologue_cuh;

const eager::FoldDialect kFold{"isnan", "sqrtf", "__int_as_float(0xff800000)"};

std::string literal(float x) { return eager::float_literal(x, "__int_as_float(0x7fc00000)", "__int_as_float(0x7f800000)"); }

// Prints the plan's steps as kernels and cuBLAS calls, and its buffers as the CUDA plan's tensors.
class Printer {
 public:
  explicit Printer(const eager::Plan& plan) : plan_(plan) {}

  CudaEager run() {
    out_.source = kPrologue + elementwise_functions(kCudaC);
    for (const eager::Buffer& b : plan_.buffers) {
      // Appended, not added: GCC 12 warns falsely (-Wrestrict) about "in" + a temporary here.
      const std::string slot = std::to_string(b.slot);
      switch (b.role) {
        case eager::Buffer::Role::Input: out_.plan.inputs.push_back({std::string("in").append(slot), b.elements, b.dtype}); break;
        case eager::Buffer::Role::Output: out_.plan.outputs.push_back({std::string("out").append(slot), b.elements, b.dtype}); break;
        case eager::Buffer::Role::Scratch:
          out_.plan.scratch.push_back({std::string("t").append(std::to_string(b.value)), b.elements, b.dtype});
          break;
      }
    }
    for (const eager::Step& s : plan_.steps) {
      if (s.kind == eager::Step::Kind::Gather) gather(s);
      else if (s.kind == eager::Step::Kind::Matmul) matmul(s);
      else reduce(s);
    }
    return std::move(out_);
  }

 private:
  const CudaTensor& tensor(int buffer) const {
    const eager::Buffer& b = plan_.buffers.at(size_t(buffer));
    switch (b.role) {
      case eager::Buffer::Role::Input: return out_.plan.inputs.at(b.slot);
      case eager::Buffer::Role::Output: return out_.plan.outputs.at(b.slot);
      case eager::Buffer::Role::Scratch: break;
    }
    return out_.plan.scratch.at(b.slot);
  }

  // A kernel over `params` (the last one written), with `body` its statements.
  void kernel(const std::string& what, const std::vector<CudaTensor>& params, int64_t blocks, const std::string& body,
              int64_t shared_bytes = 0) {
    CudaKernelInfo info;
    info.name = "prism_eager_" + std::to_string(out_.plan.steps.size()) + "_" + what;
    info.grid_blocks = blocks;
    info.threads = kThreads;
    info.shared_bytes = shared_bytes;
    std::string sig;
    for (size_t i = 0; i < params.size(); ++i) {
      info.params.push_back(params[i].name);
      sig += std::string(i ? ", " : "") + (i + 1 < params.size() ? "const " : "") + ctype(params[i].dtype) + "* __restrict__ p" +
             std::to_string(i);
    }
    out_.source += "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + info.name + "(" + sig + ") {\n" +
                   body + "}\n";
    CudaStep step;
    step.kernel = std::move(info);
    out_.plan.steps.push_back(std::move(step));
  }

  // A grid-stride loop over n indices `idx`, `stmt` the body.
  void grid_stride(const std::string& what, const std::vector<CudaTensor>& params, int64_t n, const std::string& stmt) {
    int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 20);
    kernel(what, params, blocks,
           "  for (i64 idx = blockIdx.x * " + lit(kThreads) + " + threadIdx.x; idx < " + lit(n) + "; idx += (i64)gridDim.x * " +
               lit(kThreads) + ") {\n    " + stmt + "\n  }\n");
  }

  // The index an access reads at: `idx` itself in a flat step, else from the coordinates.
  static std::string index(const eager::Access& a, bool flat) {
    if (flat) return "idx";
    const std::string i = offset(a.strides);
    return a.offset ? lit(a.offset) + " + " + i : i;
  }

  // Every index of the step's shape read and written in place (a flat, dense step) needs no coordinates.
  static bool flat(const eager::Step& s) {
    auto dense = [](const eager::Access& a) { return a.buffer < 0 || (a.offset == 0 && a.strides == Shape{1}); };
    return s.shape.size() == 1 && dense(s.out) && std::all_of(s.in.begin(), s.in.end(), dense);
  }

  void gather(const eager::Step& s) {
    const bool is_flat = flat(s);
    std::vector<CudaTensor> params;
    std::vector<std::string> loads;
    for (const eager::Access& a : s.in) {
      if (a.buffer < 0) {
        loads.push_back(literal(a.constant));
        continue;
      }
      params.push_back(tensor(a.buffer));
      loads.push_back("ld(p" + std::to_string(params.size() - 1) + ", " + index(a, is_flat) + ")");
    }
    params.push_back(tensor(s.out.buffer));
    const std::string store = "st(p" + std::to_string(params.size() - 1) + ", " + index(s.out, is_flat) + ", ";
    std::string stmt = is_flat ? "" : coordinates(s.shape) + "\n    ";
    if (!s.elementwise) {
      stmt += store + loads.at(0) + ");";
    } else {
      const bool binary = loads.size() == 2;
      const std::string expr =
          elementwise_expr(s.op, binary ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, kCudaC, "eager");
      stmt += "const float a = " + loads[0] + (binary ? ", b = " + loads[1] : "") + "; " + store + expr + ");";
    }
    grid_stride(s.what, params, element_count(s.shape), stmt);
  }

  // The matmul as cuBLAS calls (plan.h's batched_gemms: one strided-batched call when it can).
  void matmul(const eager::Step& s) {
    const CudaTensor &ta = tensor(s.in[0].buffer), &tb = tensor(s.in[1].buffer), &tc = tensor(s.out.buffer);
    if (ta.dtype != tb.dtype)
      throw Error(Error::Kind::Failed, std::string("eager: a matmul of ") + dtype_name(ta.dtype) + " and " + dtype_name(tb.dtype));
    if (tc.dtype != ta.dtype && tc.dtype != DType::F32)
      throw Error(Error::Kind::Failed, std::string("eager: a matmul of ") + dtype_name(ta.dtype) + " into " + dtype_name(tc.dtype));
    CudaGemm g;
    g.a = ta.name, g.b = tb.name, g.c = tc.name;
    g.m = s.m, g.k = s.k, g.n = s.n;
    g.trans_a = s.trans_a, g.trans_b = s.trans_b;
    auto operand = [](const eager::Access& a) { return GemmOperand{a.offset, a.strides}; };
    CudaStep step;
    step.is_gemm = true;
    for (const CudaGemm& call : batched_gemms(g, s.shape, operand(s.in[0]), operand(s.in[1]), operand(s.out))) {
      step.gemm = call;
      out_.plan.steps.push_back(step);
    }
  }

  // sum / max / rms over one axis in f32: a thread per output element when the axis is not the
  // innermost, else a block per output element with a tree in dynamic shared memory.
  void reduce(const eager::Step& s) {
    const eager::FoldText f = eager::fold_text(s.op, s.k, kFold);
    std::vector<CudaTensor> params{tensor(s.in.at(0).buffer), tensor(s.out.buffer)};
    if (s.inner > 1) {
      grid_stride(s.what, params, s.outer * s.inner,
                  "const i64 i0 = idx / " + lit(s.inner) + ", i1 = idx % " + lit(s.inner) + "; float acc = " + f.init +
                      "; for (i64 j = 0; j < " + lit(s.k) + "; ++j) { const float x = ld(p0, (i0 * " + lit(s.k) + " + j) * " +
                      lit(s.inner) + " + i1); " + f.update + " } st(p1, idx, " + f.result + ");");
      return;
    }
    std::string combine =
        s.op == Op::Max ? "{ const float x = sh[threadIdx.x + s]; float acc = sh[threadIdx.x]; " + f.update + " sh[threadIdx.x] = acc; }"
                        : "sh[threadIdx.x] += sh[threadIdx.x + s];";
    kernel(s.what, params, std::min<int64_t>(s.outer, int64_t(1) << 20),
           "  extern __shared__ __align__(16) unsigned char prism_smem[];\n  float* sh = reinterpret_cast<float*>(prism_smem);\n"
           "  for (i64 o = blockIdx.x; o < " +
               lit(s.outer) + "; o += gridDim.x) {\n    float acc = " + f.init + ";\n    for (i64 j = threadIdx.x; j < " + lit(s.k) +
               "; j += " + lit(kThreads) + ") { const float x = ld(p0, o * " + lit(s.k) + " + j); " + f.update +
               " }\n    sh[threadIdx.x] = acc;\n    __syncthreads();\n    for (int s = " + std::to_string(kThreads / 2) +
               "; s > 0; s >>= 1) {\n      if (threadIdx.x < s) " + combine +
               "\n      __syncthreads();\n    }\n    if (threadIdx.x == 0) { const float acc = sh[0]; st(p1, o, " + f.result +
               "); }\n    __syncthreads();\n  }\n",
           kThreads * 4);
  }

  const eager::Plan& plan_;
  CudaEager out_;
};

}  // namespace

CudaEager generate_cuda_eager(const Program& lowered, const DimBindings& bindings) { return Printer(eager::plan(lowered, bindings)).run(); }

}  // namespace prism::backend::cuda
