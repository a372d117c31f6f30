// A family's CUDA source at concrete dims (for `code NAME --target cuda` and kernel/source), with
// the sizes the cost model picks for a GPU target. Needs no GPU: generating CUDA C++ (and
// compiling it with NVRTC) works anywhere.
#pragma once
#include <map>
#include <string>

#include "engine/ir/program.h"
#include "engine/search/search.h"
#include "engine/backend/target.h"
#include "engine/tune/tuner.h"

namespace prism::tune {

// The family at its declared storage dtypes (f16 stays f16 on a GPU), instantiated for `target`
// (its shared memory per block as the tile budget): the cheapest instantiation by the cost
// model, or `sizes` when given. The source's header comment lists every kernel's launch
// (name, blocks, threads, dynamic shared bytes, pointer parameters).
KernelChoice cuda_kernel_for(const Program& lowered, const Candidate& family, const std::map<std::string, int64_t>& bindings,
                             const backend::TargetDescription& target, const std::map<std::string, int64_t>* sizes = nullptr);

}  // namespace prism::tune
