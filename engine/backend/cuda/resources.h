// What a kernel holds of an SM, read without a GPU: ptxas's resource counts for a module compiled
// for a real architecture (registers, spills, stack, static shared memory), the blocks of a launch
// that fit on one SM at once. The static review of docs/tuning.md, "Static checks", reads these
// for the cost model's first choice of each decode shape (review.h); ptx_loads.h reads its global
// loads.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace prism::backend::cuda {

// One `Compiling entry function 'NAME'` section of ptxas's -v output.
struct KernelResources {
  std::string name;
  int registers = 0;
  int barriers = 0;
  int64_t static_shared_bytes = 0;
  int64_t stack_bytes = 0;  // the stack frame: local arrays, spills included
  int64_t spill_store_bytes = 0, spill_load_bytes = 0;
};

// Every entry function ptxas reports in `log`, in its order (NVRTC's form of the report, its
// lines prefixed "ptxas", or nvcc's; other lines, such as the warnings NVRTC puts in the same log,
// are ignored).
std::vector<KernelResources> parse_ptxas_log(std::string_view log);

// An SM's limits (the CUDA occupancy calculator's table) and how many the GPU has; sm90_limits():
// an H100's (an H200's are the same).
struct SmLimits {
  int sms = 132;
  int max_threads = 2048;
  int max_blocks = 32;
  int registers = 65536;
  int register_unit = 256;  // registers are given to a warp in units of this many
  int64_t shared_bytes = 233472;       // the most the shared-memory carveout gives one SM
  int64_t shared_unit = 128;           // shared memory is given in units of this many bytes
  int64_t shared_reserved = 1024;      // the system's per block (sm_80 on)
};
SmLimits sm90_limits();

struct Occupancy {
  int blocks = 0;  // blocks of this launch on one SM at once (0: not even one fits)
  int warps = 0;   // their warps
  // What stops the next block: "threads", "blocks", "registers", "shared memory", or "grid" where
  // the launch has too few blocks to give every SM more.
  std::string limit;
};
// A launch of `grid_blocks` blocks of `threads` threads, each with `dynamic_shared_bytes` of
// dynamic shared memory, spread evenly over the SMs.
Occupancy occupancy(const KernelResources& kernel, int64_t grid_blocks, int threads, int64_t dynamic_shared_bytes, const SmLimits& sm);

}  // namespace prism::backend::cuda
