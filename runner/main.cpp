// prism-runner: the worker process that loads and times generated kernels for the daemon
// (engine/backend/cpu/runner.h). It is started by KernelRunner, never by hand.
#include <unistd.h>

#include "engine/backend/cpu/runner.h"

int main() { return prism::backend::cpu::serve_runner(STDIN_FILENO, STDOUT_FILENO); }
