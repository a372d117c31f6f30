#include "engine/backend/cuda/cublas.h"

#include <dlfcn.h>

#include "engine/error.h"

namespace prism::backend::cuda {

namespace {

// cublas_api.h's values, declared here so that prism needs no toolkit headers to build.
constexpr int kOpN = 0;            // CUBLAS_OP_N
constexpr int kOpT = 1;            // CUBLAS_OP_T
constexpr int kCompute32F = 68;    // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;   // CUBLAS_GEMM_DEFAULT

struct Library {
  std::string why;  // empty when loaded
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*set_stream)(void*, void*) = nullptr;
  int (*gemm)(void*, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int, int, long long,
              const void*, void*, int, int, long long, int, int, int) = nullptr;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    void* h = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      l.why = "cuBLAS not found (libcublas.so.13, .12, .so)";
      return l;
    }
    l.create = reinterpret_cast<decltype(l.create)>(::dlsym(h, "cublasCreate_v2"));
    l.destroy = reinterpret_cast<decltype(l.destroy)>(::dlsym(h, "cublasDestroy_v2"));
    l.gemm = reinterpret_cast<decltype(l.gemm)>(::dlsym(h, "cublasGemmStridedBatchedEx"));
    l.set_stream = reinterpret_cast<decltype(l.set_stream)>(::dlsym(h, "cublasSetStream_v2"));
    if (!l.create || !l.destroy || !l.gemm || !l.set_stream)
      l.why = "cuBLAS unusable: a symbol is missing (cublasCreate_v2, cublasSetStream_v2, cublasGemmStridedBatchedEx)";
    return l;
  }();
  return lib;
}

const Library& usable() {
  const Library& l = library();
  if (!l.why.empty()) throw Error(Error::Kind::Failed, l.why);
  return l;
}

}  // namespace

int cuda_data_type(DType t) { return t == DType::F16 ? 2 : t == DType::BF16 ? 14 : 0; }  // CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F

Cublas::Cublas() {
  if (int rc = usable().create(&handle_); rc != 0) throw Error(Error::Kind::Failed, "cublasCreate failed (status " + std::to_string(rc) + ")");
}

Cublas::~Cublas() {
  if (handle_) library().destroy(handle_);
}

void Cublas::gemm(const CudaGemm& g, CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c, DType ab, DType c_dtype, void* stream) {
  const ColumnMajorGemm cm = column_major(g);
  if (int rc = usable().set_stream(handle_, stream); rc != 0) throw Error(Error::Kind::Failed, "cublasSetStream failed (status " + std::to_string(rc) + ")");
  const float alpha = 1.0f, beta = 0.0f;
  const int64_t eab = dtype_bytes(ab), ec = dtype_bytes(c_dtype);
  const void* pa = reinterpret_cast<const void*>(a + CudaDevice::Ptr(g.offset_a * eab));
  const void* pb = reinterpret_cast<const void*>(b + CudaDevice::Ptr(g.offset_b * eab));
  void* pc = reinterpret_cast<void*>(c + CudaDevice::Ptr(g.offset_c * ec));
  int rc = usable().gemm(handle_, cm.transpose_first ? kOpT : kOpN, cm.transpose_second ? kOpT : kOpN, int(cm.m), int(cm.n), int(cm.k), &alpha,
                         pb, cuda_data_type(ab), int(cm.ld_first), g.stride_b, pa, cuda_data_type(ab), int(cm.ld_second), g.stride_a, &beta, pc,
                         cuda_data_type(c_dtype), int(cm.ld_c), g.stride_c, int(g.batch), kCompute32F, kGemmDefault);
  if (rc != 0)
    throw Error(Error::Kind::Failed, "cublasGemmStridedBatchedEx (" + std::to_string(g.m) + "x" + std::to_string(g.k) + " @ " +
                                         std::to_string(g.k) + "x" + std::to_string(g.n) + ", batch " + std::to_string(g.batch) +
                                         ") failed with status " + std::to_string(rc));
}

}  // namespace prism::backend::cuda
