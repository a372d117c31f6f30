// Test support (prism_cuda_host.h): nvcuda::wmma on the host. Every lane of a warp holds the
// whole tile of a fragment (kept as f32) and computes the whole product itself; a store is written
// by lane 0, then the warp meets, so the warp's stores are collective as on the GPU. Loads and
// stores check what the GPU needs and abort with a message otherwise: a 32-byte (256-bit) aligned
// pointer, and a leading dimension that is a multiple of 16 bytes.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

template <class Use, int M, int N, int K>
struct Extent;
template <int M, int N, int K>
struct Extent<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct Extent<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct Extent<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

inline float to_f32(float x) { return x; }
inline float to_f32(__half x) { return __half2float(x); }
inline float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
void check(const void* p, unsigned ldm, const char* what) {
  prism_require_aligned(p, 32, what);
  if ((ldm * sizeof(T)) % 16 != 0) {
    std::fprintf(stderr, "prism cuda emulation: %s: ldm %u is not a multiple of %zu elements\n", what, ldm, 16 / sizeof(T));
    std::abort();
  }
}

// Where element (r, c) of a tile lies from its first, with leading dimension ldm.
inline unsigned at(int r, int c, unsigned ldm, bool row_major) { return row_major ? unsigned(r) * ldm + unsigned(c) : unsigned(c) * ldm + unsigned(r); }

}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = detail::Extent<Use, M, N, K>::rows, cols = detail::Extent<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  float x[num_elements];  // the whole tile, row-major, in every lane
};

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float v) {
  for (float& e : f.x) e = v;
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  detail::check<T>(p, ldm, "wmma::load_matrix_sync");
  constexpr bool row = !std::is_same_v<Layout, col_major>;
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = detail::to_f32(p[detail::at(r, c, ldm, row)]);
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout) {
  detail::check<float>(p, ldm, "wmma::load_matrix_sync (accumulator)");
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) f.x[r * N + c] = p[detail::at(r, c, ldm, layout == mem_row_major)];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
  detail::check<float>(p, ldm, "wmma::store_matrix_sync");
  if ((threadIdx.x & 31u) == 0)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) p[detail::at(r, c, ldm, layout == mem_row_major)] = f.x[r * N + c];
  prism_warp_sync();
}

// d = a @ b + c, f32 accumulation (d may be c).
template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a, const fragment<matrix_b, M, N, K, T, LB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = c.x[i * N + j];
      for (int k = 0; k < K; ++k) acc += a.x[i * K + k] * b.x[k * N + j];
      out[i * N + j] = acc;
    }
  for (int e = 0; e < M * N; ++e) d.x[e] = out[e];
}

}  // namespace nvcuda::wmma
