// The scalar backend's run, both halves: the words its daemon half hands the worker
// (ScalarBackend::run) and what its worker half reads from them (ScalarBackend::serve, worker.cpp).
#pragma once
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace prism::test::scalar {

// "WARMUP RUNS INPUT_DTYPES OUTPUT_DTYPES \t LIBRARY" (dtype lists as "f16,f32", "-" for none).
std::string worker_arguments(int warmup, int runs, const std::vector<DType>& inputs, const std::vector<DType>& outputs,
                             const std::string& library);

}  // namespace prism::test::scalar
