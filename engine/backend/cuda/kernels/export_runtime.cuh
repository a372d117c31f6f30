// The CUDA runtime calls of an exported kernel's host launcher (export.cpp writes the launcher
// after this). Each is a small function returning nullptr or the error's text, so that a test's
// host emulation (which defines PRISM_EXPORT_RUNTIME_PROVIDED) can stand in for them.
#ifndef PRISM_EXPORT_RUNTIME_PROVIDED
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <utility>

template <class... A, size_t... I>
static const char* prism_export_invoke(void (*kernel)(A...), long blocks, int threads, size_t shared, cudaStream_t stream,
                                       void* const* params, std::index_sequence<I...>) {
  kernel<<<dim3(unsigned(blocks)), dim3(unsigned(threads)), shared, stream>>>(static_cast<A>(params[I])...);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

// One launch of `kernel` with its pointer parameters; dynamic shared memory past 48 KiB must be
// allowed first.
template <class... A>
static const char* prism_export_launch(void (*kernel)(A...), long blocks, int threads, size_t shared, void* stream,
                                       void* const* params) {
  if (shared > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (e != cudaSuccess) return cudaGetErrorString(e);
  }
  return prism_export_invoke(kernel, blocks, threads, shared, static_cast<cudaStream_t>(stream), params,
                             std::index_sequence_for<A...>{});
}

// Scratch tensors, allocated and freed in stream order.
static void* prism_export_alloc(size_t bytes, void* stream) {
  void* p = nullptr;
  return cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)) == cudaSuccess ? p : nullptr;
}

static void prism_export_free(void* p, void* stream) { cudaFreeAsync(p, static_cast<cudaStream_t>(stream)); }

// Ticket counters (engine/backend/cuda/ticket.h) start at zero.
static const char* prism_export_zero(void* p, size_t bytes, void* stream) {
  const cudaError_t e = cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

// Column-major C = op(first) op(second), f32 accumulation, on `stream`: plan.h's ColumnMajorGemm,
// written out by the launcher. One cuBLAS handle per host thread, created on first use.
static const char* prism_export_gemm(void* stream, bool transpose_first, bool transpose_second, long m, long n, long k,
                                     const void* first, int first_type, long ld_first, long long stride_first, const void* second,
                                     int second_type, long ld_second, long long stride_second, void* c, int c_type, long ld_c,
                                     long long stride_c, long batch) {
  static thread_local cublasHandle_t handle = nullptr;
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
  if (cublasSetStream(handle, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS) return "cublasSetStream failed";
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasGemmStridedBatchedEx(
      handle, transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N, int(m), int(n), int(k), &alpha,
      first, cudaDataType(first_type), int(ld_first), stride_first, second, cudaDataType(second_type), int(ld_second), stride_second,
      &beta, c, cudaDataType(c_type), int(ld_c), stride_c, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? nullptr : "cublasGemmStridedBatchedEx failed";
}
#endif
