// The C ABI of every generated CPU kernel library: custom-kernel graphs (codegen.h) and eager
// baselines (eager.h) alike, so the runner loads and times both the same way.
//
//   extern "C" int prism_entry(const void* const* inputs, void* const* outputs, int threads);
//     inputs:  the graph's (program's) inputs in parameter order, dense row-major at their
//              declared dtypes: f32 as float, f16 and bf16 as their 16 bits (uint16_t: IEEE
//              binary16, and the top half of an f32);
//     outputs: caller-allocated, dense row-major at their declared dtypes, in return order;
//     threads: how many threads the kernel may use (the grid is a parallel loop over blocks).
//     Returns 0, or nonzero when it failed (then prism_error() says why).
//   extern "C" const char* prism_error(void);
//
// Custom-kernel graphs (codegen.h) also export their kernels one range at a time, for a
// per-kernel breakdown (bench/bench_kernels.cpp):
//   extern "C" int prism_kernel_count(void);
//   extern "C" int prism_entry_kernels(const void* const* inputs, void* const* outputs, int threads,
//                                      int first, int last);
//     runs kernels [first, last) on the intermediates an earlier call left; prism_entry is
//     prism_entry_kernels(…, 0, prism_kernel_count()).
//
// Intermediate device tensors (a cross-block reduction's partials, an eager baseline's
// temporaries) are owned by the library: allocated on the first call and reused.
#pragma once

namespace prism::backend::cpu {

inline constexpr const char* kEntrySymbol = "prism_entry";
inline constexpr const char* kErrorSymbol = "prism_error";
inline constexpr const char* kKernelCountSymbol = "prism_kernel_count";
inline constexpr const char* kEntryKernelsSymbol = "prism_entry_kernels";
using EntryFn = int (*)(const void* const* inputs, void* const* outputs, int threads);
using ErrorFn = const char* (*)();
using KernelCountFn = int (*)();
using EntryKernelsFn = int (*)(const void* const* inputs, void* const* outputs, int threads, int first, int last);

}  // namespace prism::backend::cpu
