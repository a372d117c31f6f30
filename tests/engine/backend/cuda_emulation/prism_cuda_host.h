// Test support: runs generated CUDA C++ on the host, to check its indexing against
// sgraph::evaluate on machines without a GPU. Compiled as C++20 with -include of this file and
// -I of this directory (whose cuda_fp16.h / cuda_bf16.h stand in for the toolkit's). A launch
// runs the blocks one after another, each with one std::thread per CUDA thread: __syncthreads is
// a barrier of the block, __shfl_xor_sync an exchange through a barrier of the warp, shared
// memory one buffer. Slow, and only for tiny sizes.
#pragma once
#include <barrier>
#include <math.h>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__
#define __align__(n)  // the buffer below is aligned

struct prism_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline prism_dim3 blockIdx, gridDim;
inline thread_local prism_dim3 threadIdx;
alignas(16) inline unsigned char prism_smem_buffer[1 << 18];
#define prism_smem prism_smem_buffer

inline std::barrier<>* prism_block_barrier = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> prism_warp_barriers;
inline float prism_lanes[1024];

inline void __syncthreads() { prism_block_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int m) {
  unsigned t = threadIdx.x, w = t >> 5;
  prism_lanes[t] = v;
  prism_warp_barriers[w]->arrive_and_wait();
  float r = prism_lanes[(t & ~31u) | ((t & 31u) ^ unsigned(m))];
  prism_warp_barriers[w]->arrive_and_wait();
  return r;
}
inline float __int_as_float(unsigned bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class... A, size_t... I>
void prism_invoke(void (*fn)(A...), void* const* p, std::index_sequence<I...>) {
  fn(static_cast<A>(p[I])...);
}

template <class... A>
void prism_launch(void (*fn)(A...), void* const* params, long blocks, int threads) {
  gridDim.x = unsigned(blocks);
  for (long b = 0; b < blocks; ++b) {
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
}
