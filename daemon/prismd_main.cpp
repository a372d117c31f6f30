#include "daemon/prismd_main.h"

#include <sys/stat.h>

#include <csignal>
#include <iostream>

#include "daemon/attach.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "protocol/endpoint.h"

namespace prism::daemon {

int prismd_main(int argc, char** argv) {
  auto parsed = parse_options(argc, argv);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    std::cerr << "prismd: " << *error << "\n" << usage();
    return 2;
  }
  const Options& options = std::get<Options>(parsed);
  if (options.help) {
    std::cerr << usage();
    return 0;
  }
  if (options.version) {
    // Over --stdio nothing but protocol may reach stdout; --version is a plain CLI query.
    std::cout << "prismd " PRISM_VERSION "\n";
    return 0;
  }
  // A client that vanishes mid-write must surface as EPIPE, not kill the daemon.
  std::signal(SIGPIPE, SIG_IGN);
  // Everything prismd creates (state, caches, kernels, outputs) is for its user alone.
  ::umask(077);

  if (options.attach) return attach_stdio(options);

  Logger log;
  if (!options.log_file.empty()) {
    if (std::string error = log.open_file(options.log_file); !error.empty()) {
      std::cerr << "prismd: " << error << "\n";
      return 1;
    }
  } else if (options.stdio) {
    // An editor shows what a server writes to stderr as errors: over stdio the log goes to a file
    // in the state directory, and stderr carries only what stops prismd.
    const std::string dir = options.state_dir.empty() ? prism::protocol::state_dir() : options.state_dir;
    if (!dir.empty()) (void)log.open_file(dir + "/prismd-stdio.log");
  }
  try {
    Daemon daemon(options, log);
    return daemon.run();
  } catch (const std::exception& e) {
    std::cerr << "prismd: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace prism::daemon
