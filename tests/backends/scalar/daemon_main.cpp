// prismd-scalar: prismd with the scalar backend registered (scalar_backend.h), its kernels run by
// prism-runner-scalar beside it unless $PRISM_RUNNER names another.
#include <stdlib.h>

#include <filesystem>

#include "daemon/prismd_main.h"
#include "tests/backends/scalar/scalar_backend.h"

int main(int argc, char** argv) {
  const prism::tune::Registration scalar = prism::test::scalar::register_scalar_backend();
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) ::setenv("PRISM_RUNNER", (self.parent_path() / "prism-runner-scalar").c_str(), 0);
  return prism::daemon::prismd_main(argc, argv);
}
