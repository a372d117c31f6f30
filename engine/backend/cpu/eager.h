// The eager baseline on the CPU: the eager plan (backend/eager_plan.h) printed as one pass over
// memory per step, as PyTorch's eager mode runs a program, for the "candidate vs eager" column of
// every report.
#pragma once
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace prism::backend::cpu {

// C++17 source for the eager baseline of a lowered program (primitives only) at concrete
// bindings: each op its own pass (an OpenMP parallel loop nest per op; a reshape is a view, no
// pass), matmul (batched too, numpy broadcasting of the batch dims) through cblas_sgemm with
// openblas_set_num_threads(threads), elementwise formulas and reduction orders as the reference
// interpreter's, intermediates in library-owned buffers allocated on the first call. Implements
// the ABI of abi.h; every tensor dense row-major at its declared dtype, each op reading and
// writing it (storage_types.h's conversions; f16 rows widened and rounded 8 lanes an instruction,
// as an eager framework's kernels convert them). Link with eager_libs(). Throws Error{InvalidArgument} for a dim the bindings do not
// make a positive integer, Error{Failed} for an op that is not a primitive.
std::string generate_eager_source(const Program& lowered, const DimBindings& bindings);

// What the baseline's table line says of it: how its matmuls run when one reads or writes a
// 16-bit tensor (f32 copies for sgemm); empty otherwise.
std::string eager_note(const Program& lowered);

// What an eager (or any BLAS-calling) library links with. OpenBLAS built on OpenMP when it is
// installed (Debian's libopenblas0-openmp), so that BLAS and the per-op OpenMP loops share one
// thread pool, as PyTorch arranges it: the pthread build's threads keep spinning for a while
// after each call and fight the OpenMP threads for the cores, which would make the baseline look
// slower than it is. Else the default -lopenblas. -z nodelete: the library is never unmapped by
// dlclose, so neither are libgomp and OpenBLAS, whose idle pool threads would crash in unmapped
// code if they were.
const std::vector<std::string>& eager_libs();

}  // namespace prism::backend::cpu
