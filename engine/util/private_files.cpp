#include "engine/util/private_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace prism {

namespace {

std::string errno_text() { return std::strerror(errno); }

void sync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

bool write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void make_private_dirs(const std::string& dir) {
  std::filesystem::path partial;
  for (const auto& part : std::filesystem::path(dir)) {
    partial /= part;
    if (partial.empty() || partial == "/") continue;
    ::mkdir(partial.c_str(), 0700);
  }
}

std::string temp_name_for(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

std::string write_file_atomically(const std::string& path, const std::string& bytes, unsigned mode) {
  // A device, a FIFO or a socket is never replaced by a regular file (issue 46, 5): as root,
  // `--out /dev/null` would have replaced it for the whole machine.
  if (struct stat st {}; ::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && !S_ISREG(st.st_mode))
    return "refusing to replace " + not_regular_reason(path, st.st_mode) + " with a file";
  const std::string temp = temp_name_for(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return "cannot create " + temp + ": " + errno_text();
  bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
  std::string error = ok ? "" : "cannot write " + temp + ": " + errno_text();
  if (::close(fd) != 0 && error.empty()) error = "cannot write " + temp + ": " + errno_text();
  if (error.empty() && ::rename(temp.c_str(), path.c_str()) != 0) error = "cannot replace " + path + ": " + errno_text();
  if (!error.empty()) {
    ::unlink(temp.c_str());
    return error;
  }
  sync_directory_of(path);
  return {};
}

FileContents read_regular_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, "cannot read " + path + ": " + errno_text()};
  FileContents out = read_open_file(fd, path, max_bytes);
  ::close(fd);
  return out;
}

std::string not_regular_reason(const std::string& path, unsigned mode) {
  if (S_ISREG(mode)) return {};
  return path + " is not a regular file" +
         (S_ISFIFO(mode)                ? " (a FIFO)"
          : S_ISDIR(mode)               ? " (a directory)"
          : S_ISCHR(mode) || S_ISBLK(mode) ? " (a device)"
          : S_ISSOCK(mode)              ? " (a socket)"
                                        : "");
}

FileContents read_open_file(int fd, const std::string& path, size_t max_bytes) {
  FileContents out;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.error = "cannot read " + path + ": " + errno_text();
    return out;
  }
  if (out.error = not_regular_reason(path, st.st_mode); !out.error.empty()) return out;
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    out.error = path + " is " + std::to_string(st.st_size) + " bytes, more than the limit of " + std::to_string(max_bytes);
    return out;
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  // The file may shrink or grow meanwhile: read what is there, up to the limit.
  for (;;) {
    if (done == bytes.size()) {
      if (bytes.size() >= max_bytes + 1) break;
      bytes.resize(std::min(max_bytes + 1, bytes.size() + 65536));
    }
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.error = "cannot read " + path + ": " + errno_text();
      return out;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done > max_bytes) {
    out.error = path + " grew past the limit of " + std::to_string(max_bytes) + " bytes while it was read";
    return out;
  }
  bytes.resize(done);
  out.bytes = std::move(bytes);
  return out;
}

namespace {

// When process `pid` started, in seconds since the epoch; 0 when unknown, -1 for a zombie (it
// has exited: only its parent has not collected it yet, which for a child of a killed daemon
// can take a while where init reaps slowly).
double process_start_s(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 3 && (field == "Z" || field == "X")) return -1;
    else if (i == 22) {
      std::ifstream global("/proc/stat");
      for (std::string key; global >> key;)
        if (key == "btime") {
          double boot = 0;
          global >> boot;
          return boot + std::stod(field) / double(::sysconf(_SC_CLK_TCK));
        }
    }
  return 0;
}

// Whether the process that wrote `name` (pid from its name, at `written`) still runs. Pids wrap
// (at 32768 on many systems): a live pid that started after the file was written is another
// process, and the writer is gone.
bool writer_runs(pid_t pid, double written_s) {
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  const double start = process_start_s(pid);
  if (start < 0) return false;  // a zombie writes nothing more
  return start == 0 || start <= written_s + 1;
}

}  // namespace

size_t remove_stale_temp_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  size_t removed = 0;
  while (dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos) continue;
    // "<stem>.tmp.<pid>.<n>"
    std::string rest = name.substr(at + 5);
    size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(rest.substr(0, dot)));
    } catch (const std::exception&) {
      continue;
    }
    struct stat st {};
    if (pid <= 0 || ::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (writer_runs(pid, double(st.st_mtim.tv_sec) + double(st.st_mtim.tv_nsec) * 1e-9)) continue;
    if (::unlinkat(::dirfd(d), name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace prism
