// The open documents on disk, so that they come back when the daemon restarts (docs/design.md §7):
// one JSON file per socket, rewritten atomically after every open, change and close.
#pragma once
#include <mutex>
#include <string>

#include "daemon/log.h"
#include "engine/workspace/workspace.h"

namespace prism::daemon {

class DocumentStore {
 public:
  // The file for the daemon on `socket_path`, inside `state_dir`/documents/.
  DocumentStore(const std::string& state_dir, const std::string& socket_path);

  // Reopens what was saved. A file:// document is read again from its file when that still
  // exists (the file is the truth for what the REPL opened); others get their saved text.
  // Returns how many came back; problems are logged, never fatal. A store that cannot be read
  // (too large, damaged) is moved aside to "<file>.corrupt[.N]", never overwritten; if it cannot
  // be moved, nothing is saved over it.
  size_t restore(Workspace& workspace, Logger& log);
  // Writes every open document; thread-safe. Problems are logged.
  void save(const Workspace& workspace, Logger& log);

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::mutex mutex_;
  bool frozen_ = false;  // the store could be neither read nor moved aside: never overwritten
};

}  // namespace prism::daemon
