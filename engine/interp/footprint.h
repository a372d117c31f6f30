// How much memory running a program takes, estimated before anything is allocated, so that a
// request too large for the machine is answered with an error instead of ending the daemon
// (issue 17, D7: the per-tensor limit alone let `X + Y` on two 2^30-element tensors take 23 GB).
#pragma once
#include <cstdint>
#include <string>

#include "engine/ir/program.h"
#include "engine/ir/shape.h"

namespace prism {

// The bytes of every value of `program` at `dims` as the interpreter holds them (f32), summed;
// INT64_MAX when the sum overflows. A shape that cannot be evaluated (an unbound dim) counts 0:
// the caller's own binding check reports it.
int64_t interpreter_bytes(const Program& program, const DimBindings& dims);

// Half of the machine's physical memory: the default budget of one request.
int64_t default_memory_budget();

// "1.5 GiB", "384 MiB", "12 KiB", "100 bytes".
std::string bytes_text(int64_t bytes);

// Throws Error{InvalidArgument} when `need` is over `budget`: "<what> needs about N (...), more
// than the memory budget of M".
void check_memory_budget(const std::string& what, int64_t need, int64_t budget);

}  // namespace prism
