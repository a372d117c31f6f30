#include "engine/util/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace prism {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string open_error(const std::string& dir) {
  return errno == ENOTDIR ? dir + " is not a directory" : "cannot open the directory " + dir + ": " + errno_text();
}

std::string octal(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

// The directory open at `fd` (named `dir`) is private; `tighten`: ours that others may read
// becomes 0700.
std::string check_dir(int fd, const std::string& dir, bool tighten) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "cannot check the directory " + dir + ": " + errno_text();
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (std::string problem = unsafe_dir_reason(dir, st.st_uid, st.st_mode); !problem.empty()) return problem;
  if (tighten && (st.st_mode & 077) != 0 && ::fchmod(fd, 0700) != 0)
    return "cannot make the directory " + dir + " private: " + errno_text();
  return {};
}

}  // namespace

std::string unsafe_dir_reason(const std::string& dir, unsigned uid, unsigned mode) {
  if (uid != ::geteuid())
    return "the directory " + dir + " belongs to another user (uid " + std::to_string(uid) +
           "); prism keeps its files only in directories of its own user";
  if (mode & (S_IWGRP | S_IWOTH))
    return "the directory " + dir + " is writable by other users (mode " + octal(mode) +
           "), so what is in it cannot be trusted; remove it or `chmod 700` it after checking its contents";
  return {};
}

std::string ensure_private_dir(const std::string& dir) { return PrivateDir::open(dir, "", true).error(); }

PrivateDir PrivateDir::open(const std::string& root, const std::string& sub, bool create) {
  PrivateDir out;
  out.path_ = sub.empty() ? root : root + "/" + sub;
  if (root.empty()) {
    out.error_ = "no directory given";
    return out;
  }
  // Above the root nothing is trusted, and nothing needs to be: whatever a path there leads to,
  // the directory opened is checked.
  if (create) make_private_dirs(root);
  std::string at = root;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  out.error_ = fd < 0 ? open_error(root) : check_dir(fd, at, create);
  for (const auto& part : std::filesystem::path(sub)) {
    if (!out.error_.empty()) break;
    if (part.empty() || part == ".") continue;
    at += "/" + part.string();
    if (create) ::mkdirat(fd, part.c_str(), 0700);
    const int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(fd);
    fd = next;
    out.error_ = fd < 0 ? open_error(at) : check_dir(fd, at, create);
  }
  if (!out.error_.empty()) {
    if (fd >= 0) ::close(fd);
    return out;
  }
  out.fd_ = fd;
  return out;
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept { *this = std::move(other); }

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  fd_ = other.fd_;
  other.fd_ = -1;
  path_ = std::move(other.path_);
  error_ = std::move(other.error_);
  return *this;
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string PrivateDir::fd_path(const std::string& name) const { return "/proc/self/fd/" + std::to_string(fd_) + "/" + name; }

FileContents PrivateDir::read(const std::string& name, size_t max_bytes) const {
  const std::string path = path_ + "/" + name;
  // O_NOFOLLOW: a file in a private directory is ours or nothing; O_NONBLOCK: a FIFO never blocks.
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, "cannot read " + path + ": " + errno_text()};
  struct stat st {};
  FileContents out;
  if (::fstat(fd, &st) != 0) out.error = "cannot read " + path + ": " + errno_text();
  else if (st.st_uid != ::geteuid()) out.error = path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  else if (st.st_mode & (S_IWGRP | S_IWOTH)) out.error = path + " is writable by other users (mode " + octal(st.st_mode) + ")";
  else out = read_open_file(fd, path, max_bytes);
  ::close(fd);
  return out;
}

std::string PrivateDir::write(const std::string& name, std::string_view bytes, unsigned mode) const {
  const std::string temp = temp_name_for(name), path = path_ + "/" + name;
  const int fd = ::openat(fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return "cannot create " + path_ + "/" + temp + ": " + errno_text();
  bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
  std::string error = ok ? "" : "cannot write " + path + ": " + errno_text();
  if (::close(fd) != 0 && error.empty()) error = "cannot write " + path + ": " + errno_text();
  if (error.empty()) error = rename(temp, name);
  if (!error.empty()) {
    ::unlinkat(fd_, temp.c_str(), 0);
    return error;
  }
  ::fsync(fd_);
  return {};
}

std::string PrivateDir::rename(const std::string& from, const std::string& to) const {
  if (::renameat(fd_, from.c_str(), fd_, to.c_str()) != 0) return "cannot replace " + path_ + "/" + to + ": " + errno_text();
  return {};
}

void PrivateDir::remove(const std::string& name) const { ::unlinkat(fd_, name.c_str(), 0); }

}  // namespace prism
