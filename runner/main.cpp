// prism-runner: the worker process that loads and times generated kernels for the daemon
// (runner/worker.h). It is started by engine/backend/runner's KernelRunner, never by hand.
#include <unistd.h>

#include "runner/worker.h"

int main() { return prism::runner::serve_runner(STDIN_FILENO, STDOUT_FILENO); }
