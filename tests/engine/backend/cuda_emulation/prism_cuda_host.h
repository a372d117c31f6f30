// Test support: runs generated CUDA C++ on the host, to check its indexing against
// sgraph::evaluate on machines without a GPU. Compiled as C++20 with -include of this file and
// -I of this directory (whose cuda_fp16.h / cuda_bf16.h stand in for the toolkit's). A launch
// runs the blocks one after another (not in index order; a block that waits for others, again after them), each with one std::thread per CUDA thread: __syncthreads is
// a barrier of the block, __shfl_xor_sync and __shfl_sync an exchange through a barrier of the
// warp, shared memory one buffer. Slow, and only for tiny sizes. Accesses that need alignment on a GPU (uint4
// vectors, wmma pointers in mma.h) check it here and abort with a message when it is missing.
#pragma once
#define PRISM_CUDA_HOST_EMULATION 1  // prelude.cuh's functions take their host forms
#include <atomic>
#include <barrier>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __constant__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__
#define __align__(n)  // the buffer below is aligned

struct prism_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline prism_dim3 blockIdx, gridDim;
inline thread_local prism_dim3 threadIdx;
alignas(128) inline unsigned char prism_smem_buffer[1 << 18];
#define prism_smem prism_smem_buffer

inline std::barrier<>* prism_block_barrier = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> prism_warp_barriers;
inline float prism_lanes[1024];

// A GPU faults (or reads garbage) on a misaligned access; the emulation says so and stops.
inline void prism_require_aligned(const void* p, unsigned long bytes, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % bytes == 0) return;
  std::fprintf(stderr, "prism cuda emulation: %s: pointer %p is not %lu-byte aligned\n", what, p, bytes);
  std::abort();
}

// CUDA's 16-byte vector; a copy checks that both ends are 16-byte aligned, as the GPU needs.
struct alignas(16) uint4 {
  unsigned x, y, z, w;
  uint4() = default;
  uint4(const uint4& o) { copy(o); }
  uint4& operator=(const uint4& o) {
    prism_require_aligned(this, 16, "uint4 store");
    copy(o);
    return *this;
  }

 private:
  void copy(const uint4& o) {
    prism_require_aligned(&o, 16, "uint4 load");
    x = o.x, y = o.y, z = o.z, w = o.w;
  }
};

inline void __syncthreads() { prism_block_barrier->arrive_and_wait(); }
// All lanes of the calling thread's warp meet here.
inline void prism_warp_sync() { prism_warp_barriers[threadIdx.x >> 5]->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int m) {
  unsigned t = threadIdx.x, w = t >> 5;
  prism_lanes[t] = v;
  prism_warp_barriers[w]->arrive_and_wait();
  float r = prism_lanes[(t & ~31u) | ((t & 31u) ^ unsigned(m))];
  prism_warp_barriers[w]->arrive_and_wait();
  return r;
}
inline unsigned prism_lane_words[1024];
// The value `v` of lane `from` of the caller's warp.
inline unsigned __shfl_sync(unsigned, unsigned v, int from) {
  unsigned t = threadIdx.x, w = t >> 5;
  prism_lane_words[t] = v;
  prism_warp_barriers[w]->arrive_and_wait();
  unsigned r = prism_lane_words[(t & ~31u) | (unsigned(from) & 31u)];
  prism_warp_barriers[w]->arrive_and_wait();
  return r;
}
// Threads of a block adding into one shared float (a matmul's k split over warps).
inline float atomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
// A block's ticket (engine/backend/cuda/ticket.h): the counter's old value.
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline float __int_as_float(unsigned bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline float __uint_as_float(unsigned bits) { return __int_as_float(bits); }
inline unsigned __float_as_uint(float f) {
  unsigned bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// A tail that waits (prelude.cuh, prism_blocks_arrived): the blocks run one at a time, so a block
// whose wait is not over is told so at once and marked to run again after the others.
inline std::atomic<bool> prism_block_deferred{false};
inline bool prism_host_blocks_arrived(unsigned* counter, unsigned arrivals) {
  if (std::atomic_ref<unsigned>(*counter).load() >= arrivals) return true;
  prism_block_deferred = true;
  return false;
}

template <class... A, size_t... I>
void prism_invoke(void (*fn)(A...), void* const* p, std::index_sequence<I...>) {
  fn(static_cast<A>(p[I])...);
}

// The order a launch runs its blocks in: a GPU promises none, so neither does the emulation. A
// stride coprime to the count, near its golden section, visits every block once, far from
// index order (a kernel that relies on block order, a ticket that takes the highest block for the
// last, fails here).
inline long prism_block_stride(long blocks) {
  auto gcd = [](long a, long b) {
    while (b) a %= b, std::swap(a, b);
    return a;
  };
  long stride = blocks * 618 / 1000 + 1;
  while (blocks > 1 && gcd(stride, blocks) != 1) ++stride;
  return stride;
}

template <class... A>
void prism_run_block(void (*fn)(A...), void* const* params, long b, int threads) {
  blockIdx.x = unsigned(b);
  std::barrier<> block(threads);
  prism_block_barrier = &block;
  prism_warp_barriers.clear();
  for (int w = 0; w < threads / 32; ++w) prism_warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([=] {
      threadIdx.x = unsigned(t);
      prism_invoke(fn, params, std::index_sequence_for<A...>{});
    });
  for (auto& t : ts) t.join();
}

// Each block in prism_block_stride's order; a block that waited for blocks not yet run
// (prism_host_blocks_arrived) runs again after them, until none is left or none gets further.
template <class... A>
void prism_launch(void (*fn)(A...), void* const* params, long blocks, int threads) {
  gridDim.x = unsigned(blocks);
  const long stride = prism_block_stride(blocks);
  std::vector<long> order, deferred;
  for (long i = 0; i < blocks; ++i) order.push_back(i * stride % blocks);
  while (!order.empty()) {
    for (long b : order) {
      prism_block_deferred = false;
      prism_run_block(fn, params, b, threads);
      if (prism_block_deferred) deferred.push_back(b);
    }
    if (deferred.size() == order.size()) {
      std::fprintf(stderr, "prism_cuda_host: %zu block(s) wait for blocks that never count themselves in\n", deferred.size());
      std::abort();
    }
    order.swap(deferred);
    deferred.clear();
  }
}

// An export's runtime calls (engine/backend/cuda/kernels/export_runtime.cuh) on the host: a launch
// runs its blocks as prism_launch does, scratch comes from the heap filled with NaN bytes (a GPU's
// is never zeroed either), and cuBLAS is not emulated.
#define PRISM_EXPORT_RUNTIME_PROVIDED 1
template <class... A>
static const char* prism_export_launch(void (*kernel)(A...), long blocks, int threads, size_t, void*, void* const* params) {
  prism_launch(kernel, params, blocks, threads);
  return nullptr;
}
static void* prism_export_alloc(size_t bytes, void*) {
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p) std::memset(p, 0xff, bytes);
  return p;
}
static void prism_export_free(void* p, void*) { std::free(p); }
static const char* prism_export_zero(void* p, size_t bytes, void*) {
  std::memset(p, 0, bytes);
  return nullptr;
}
static const char* prism_export_gemm(void*, bool, bool, long, long, long, const void*, int, long, long long, const void*, int, long,
                                     long long, void*, int, long, long long, long) {
  return "the host emulation runs no cuBLAS";
}
