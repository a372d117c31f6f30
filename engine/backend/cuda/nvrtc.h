// Compiling CUDA C++ to PTX in-process with NVRTC (docs/design.md §6). libnvrtc is opened at run time
// (dlopen), so prism builds and runs where the CUDA toolkit is absent: nvrtc_status() then says
// why in words. PTX is cached on disk by content, with the rules of engine/backend/cpu/compiler.h:
// the key is a hash of the NVRTC version, the options and the source; files are written to a
// temporary name and renamed into place.
#pragma once
#include <string>
#include <vector>

namespace prism::backend::cuda {

struct NvrtcStatus {
  bool available = false;
  std::string detail;  // "NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so)", or "NVRTC not found: …"
};
NvrtcStatus nvrtc_status();

struct PtxResult {
  std::string ptx;
  std::string log;      // NVRTC's log (warnings); empty when cached
  bool cached = false;  // read from the cache, nothing compiled
};

// $PRISM_CACHE_DIR/ptx, else $XDG_CACHE_HOME/prism/ptx, else ~/.cache/prism/ptx.
std::string default_ptx_cache_dir();

// The options compile_to_ptx passes for `arch`: --gpu-architecture, -std=c++17, the toolkit's include
// directory when one is found (for cuda_fp16.h / cuda_bf16.h). No fast math: expf, erff, IEEE
// division and square root, as the reference interpreter computes.
std::vector<std::string> nvrtc_options(const std::string& arch);

// `arch`: a virtual architecture (compute_90). cache_dir empty: default_ptx_cache_dir().
// Throws Error{Failed} when NVRTC is not available ("NVRTC not found: …") or the source does not
// compile (the first lines of NVRTC's log).
PtxResult compile_to_ptx(const std::string& source, const std::string& arch = "compute_90", const std::string& cache_dir = "");

// `source` compiled for a real architecture (`sm_90`) with ptxas's resource report: the PTX, and
// NVRTC's log holding ptxas's -v lines (resources.h reads them). Not cached: it is read, not run.
// Throws as compile_to_ptx does.
PtxResult compile_for_review(const std::string& source, const std::string& arch = "sm_90");

}  // namespace prism::backend::cuda
