#include "daemon/token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "engine/util/private_dir.h"

namespace prism::daemon {

std::string make_token() {
  unsigned char bytes[32];
  size_t done = 0;
  while (done < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + done, sizeof bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("cannot make a TCP token: getrandom: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

std::string write_token_file(const std::string& path, const std::string& token, bool own_dir) {
  const std::filesystem::path file(path);
  const std::string dir = file.parent_path().empty() ? "." : file.parent_path().string();
  const PrivateDir where = PrivateDir::open(dir, "", own_dir);
  if (!where.ok()) return "cannot keep the TCP token private: " + where.error();
  return where.write(file.filename().string(), token + "\n");
}

}  // namespace prism::daemon
