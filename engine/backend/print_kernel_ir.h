// The kernel IR (kernel_ir.h) as text, for people: what `--dump-after lower` shows. Every device
// tensor, then every kernel: a custom one's grid, loop, tiles, accumulators and statements by
// phase, each with the places it reads and writes; a library one's statement.
#pragma once
#include <string>

#include "engine/backend/kernel_ir.h"

namespace prism::backend {

std::string print_kernel_ir(const kir::Program& program);

}  // namespace prism::backend
