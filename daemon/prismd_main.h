// prismd's whole program, for its main (daemon/main.cpp) and for a daemon built with a backend of
// its own (the tests' scalar backend: tests/backends/scalar), which registers it and then runs this.
#pragma once

namespace prism::daemon {

// Parses the arguments (`prismd --help`), then serves until stopped; the process's exit code.
int prismd_main(int argc, char** argv);

}  // namespace prism::daemon
