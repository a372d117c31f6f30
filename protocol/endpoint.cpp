#include "protocol/endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/util/private_files.h"
#include "engine/util/user_dirs.h"

namespace prism::protocol {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}
}  // namespace

std::string default_socket_path() {
  if (auto p = env("PRISM_SOCKET"); !p.empty()) return p;
  if (auto run = user_runtime_dir(); !run.empty()) return run + "/prismd.sock";
  // No runtime directory and no home: the last resort, refused by prepare_socket_dir when
  // another user made it first.
  return "/tmp/prism-" + std::to_string(::getuid()) + "/prismd.sock";
}

std::string prepare_socket_dir(const std::string& socket_path) {
  std::filesystem::path dir = std::filesystem::path(socket_path).parent_path();
  if (dir.empty()) return {};
  make_private_dirs(dir.string());
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return "cannot create socket directory " + dir.string() + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
  if (st.st_uid != ::getuid()) return "socket directory " + dir.string() + " belongs to another user";
  if ((st.st_mode & 0077) != 0 && dir.filename().string().rfind("prism", 0) == 0) {
    // Our own directory must not be reachable by others; tighten it rather than fail.
    if (::chmod(dir.c_str(), 0700) != 0)
      return "socket directory " + dir.string() + " is open to other users";
  }
  return {};
}

std::string state_dir() {
  std::filesystem::path dir;
  if (auto s = env("XDG_STATE_HOME"); !s.empty())
    dir = std::filesystem::path(s) / "prism";
  else if (auto h = home_dir(); !h.empty())
    dir = std::filesystem::path(h) / ".local/state/prism";
  else
    return {};  // the daemon refuses to start without one (ensure_private_dir says why)
  make_private_dirs(dir.string());
  return dir.string();
}

}  // namespace prism::protocol
