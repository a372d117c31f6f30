// A private directory held open by its descriptor (docs/protocol.md "Security", issue 46): every
// directory from a trusted root down to it belongs to this user and is writable by nobody else,
// checked on the open descriptors themselves, and what is then read, written, compiled or loaded
// goes through that descriptor. Whoever renames directories around it meanwhile (another user who
// owns a parent of the root) reaches nothing: a path would be looked up again, the descriptor is
// not.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/util/private_files.h"

namespace prism {

// Why a directory of this owner and mode is not private: another user's ("belongs to another
// user"), or writable by others ("writable by other users"); empty when it is private.
std::string unsafe_dir_reason(const std::string& dir, unsigned uid, unsigned mode);

class PrivateDir {
 public:
  // Opens `root`, then each component of `sub` (relative, "" for the root itself) below it, and
  // checks each as it is opened. `create`: missing directories are made 0700, and ours that others
  // may read are tightened to 0700; without it nothing is changed. A symlink is followed, and the
  // directory it leads to is what is checked. Check ok() or error().
  static PrivateDir open(const std::string& root, const std::string& sub = "", bool create = false);

  PrivateDir() = default;
  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }  // root/sub, for messages
  int fd() const { return fd_; }

  // "/proc/self/fd/N/name": `name` in this very directory, for an API that takes only a path
  // (dlopen). Valid while this object lives.
  std::string fd_path(const std::string& name) const;
  // A regular file of this user's that others cannot write, of at most `max_bytes` (private_files.h).
  FileContents read(const std::string& name, size_t max_bytes) const;
  // Written whole: a temp file (O_EXCL, never through a symlink), fsync, rename over `name`.
  std::string write(const std::string& name, std::string_view bytes, unsigned mode = 0600) const;
  // Renames `from` over `to`, both in this directory; an error message, empty on success.
  std::string rename(const std::string& from, const std::string& to) const;
  void remove(const std::string& name) const;

 private:
  int fd_ = -1;
  std::string path_, error_;
};

}  // namespace prism
