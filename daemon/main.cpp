// prismd: the prism daemon. See docs/protocol.md and `prismd --help`.
#include "daemon/prismd_main.h"

int main(int argc, char** argv) { return prism::daemon::prismd_main(argc, argv); }
