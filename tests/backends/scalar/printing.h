// The scalar backend's printers (scalar_backend.h): C++ for one thread, plain loops, no vector
// units, with the C ABI of engine/backend/cpu/abi.h (prism_entry, prism_error).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/kernel_ir.h"
#include "engine/ir/program.h"

namespace prism::test::scalar {

// An instance's kernels (print_kernels.cpp) and a program's eager baseline, one op at a time over
// whole tensors (print_eager.cpp).
std::string kernels_source(const backend::kir::Program& program);
std::string eager_source(const Program& lowered, const DimBindings& dims);

// What both print with.
const char* runtime();  // kernels/runtime.h, embedded
const char* type_name(DType dtype);
// A loop nest over `shape` (indices i0, i1 …) around `body`.
std::string loop_nest(const std::vector<int64_t>& shape, const std::string& indent, const std::string& body);
// A buffer prism_entry hands its kernels: the caller's input or output, or its own (malloc'ed once).
struct Slot {
  std::string name;
  int64_t bytes = 0;
  int input = -1, output = -1;  // the parameter or return slot it is; -1: neither
};
// prism_entry over `slots` (T[i] in order) running `calls`, then copying tensor i to output o for
// each (o, i) of `copies`.
std::string entry_source(const std::vector<Slot>& slots, const std::string& calls, const std::vector<std::pair<size_t, size_t>>& copies);

}  // namespace prism::test::scalar
