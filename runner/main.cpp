// prism-runner: the worker process that loads and times generated kernels for the daemon
// (runner/worker.h). It is started by engine/backend/runner's KernelRunner, never by hand.
#include <stdlib.h>
#include <unistd.h>

#include "engine/backend/cpu/describe.h"
#include "runner/worker.h"

int main() {
  // Before any kernel library loads OpenBLAS (engine/backend/cpu/describe.h says why).
  if (!::getenv("OPENBLAS_CORETYPE"))
    if (const char* core = prism::backend::cpu::openblas_core_type()) ::setenv("OPENBLAS_CORETYPE", core, 1);
  return prism::runner::serve_runner(STDIN_FILENO, STDOUT_FILENO);
}
