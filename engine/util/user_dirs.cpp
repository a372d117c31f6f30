#include "engine/util/user_dirs.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace prism {

std::string home_dir() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_dir && *found->pw_dir)
    return found->pw_dir;
  return {};
}

std::string user_runtime_dir() {
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run) return std::string(run) + "/prism";
  // systemd's per-user runtime directory, when logind made one for us.
  std::string run = "/run/user/" + std::to_string(::geteuid());
  struct stat st {};
  if (::stat(run.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) return run + "/prism";
  std::string home = home_dir();
  return home.empty() ? std::string() : home + "/.local/state/prism/run";
}

}  // namespace prism
