// prism-runner-scalar: prism-runner with the scalar backend registered, so that its worker half
// serves the scalar backend's runs (scalar_backend.h).
#include <unistd.h>

#include "runner/worker.h"
#include "tests/backends/scalar/scalar_backend.h"

int main() {
  const prism::tune::Registration scalar = prism::test::scalar::register_scalar_backend();
  return prism::runner::serve_runner(STDIN_FILENO, STDOUT_FILENO);
}
