// Files and directories that belong to the user running prism and to nobody else (docs/design.md
// §7, docs/protocol.md "Security"): private directories refused when another user could have planted
// something in them, files written whole (temp file, fsync, rename, never through a symlink), and
// reads of regular files only, with a size limit, that never block on a FIFO or a device.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

// mkdir -p giving mode 0700 to every directory it creates; existing ones are left as they are.
void make_private_dirs(const std::string& dir);

// Creates `dir` (and missing parents) with mode 0700 and checks it: a directory (a symlink to
// one is followed) owned by this user and writable by nobody else. A directory of ours that
// others may only read is tightened to 0700. Returns an error message for the user, empty on
// success. (A check of a path, good for a directory used once; what is read or loaded from a
// directory later goes through a PrivateDir, private_dir.h.)
std::string ensure_private_dir(const std::string& dir);

// Writes `bytes` to `path` as a new file of `mode` (0600: private state; a user's export passes
// 0666 and gets what the umask allows): a temp file beside it (created with O_EXCL|O_NOFOLLOW),
// fsync, rename over `path`, fsync of the directory. A symlink at `path` is replaced, never
// followed; a FIFO, a device, a socket or a directory there is refused, never replaced. A crash
// leaves the old file or the new one, never half of one. Returns an error message, empty on
// success.
std::string write_file_atomically(const std::string& path, const std::string& bytes, unsigned mode = 0600);

struct FileContents {
  std::optional<std::string> bytes;  // nullopt: `error` says why
  std::string error;
};

// Reads a regular file of at most `max_bytes` (symlinks to one are followed). A FIFO, a device,
// a directory or a larger file is an error, found without reading it or blocking.
FileContents read_regular_file(const std::string& path, size_t max_bytes);

// The same for a file already open at `fd` (left open); `path` names it in messages.
FileContents read_open_file(int fd, const std::string& path, size_t max_bytes);

// Why a file of this st_mode is not a regular file ("PATH is not a regular file (a FIFO)"), empty
// when it is one.
std::string not_regular_reason(const std::string& path, unsigned mode);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
bool write_all(int fd, std::string_view bytes);

// Removes "<name>.tmp.<pid>.<n>" files in `dir` whose writer process is gone (a kill -9 mid-write),
// also where its pid now names a process that started after the file was written (pids wrap).
// Returns how many were removed.
size_t remove_stale_temp_files(const std::string& dir);

// The name of a temp file beside `path` that no other process or thread will pick:
// "<path>.tmp.<pid>.<n>" (remove_stale_temp_files recognises it).
std::string temp_name_for(const std::string& path);

}  // namespace prism
