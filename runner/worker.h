// prism-runner's side of the kernel runner (engine/backend/runner/runner.h): the process that loads
// and times generated kernels, each run by the worker half of its backend (Backend::serve), so that
// a kernel that crashes or hangs takes only this process.
#pragma once

namespace prism::runner {

// Serves commands on `in_fd`, answers on `out_fd`, until end of input. Returns the process exit code.
int serve_runner(int in_fd, int out_fd);

}  // namespace prism::runner
