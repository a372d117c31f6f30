// One tune at a time per machine (issue 14): every daemon of the user takes the same lock file
// (<user_runtime_dir()>/tune.lock) for the whole of a tune's compiling and timing, so that one
// tune's compiles never land in another's timed rounds. A second tune waits, and hears who holds
// the lock; the lock is an flock(2), released by the kernel when its holder dies.
#pragma once
#include <functional>
#include <string>

#include "engine/cancel.h"

namespace prism::tune {

class MachineLock {
 public:
  // The default lock file; empty when the user has no runtime directory (no lock then).
  static std::string default_path();

  // Takes the lock at `path` (created where missing; empty: no lock), recording `what` ("prismd
  // 1234: my_layer d=1024 n=8") for those who wait. While another holds it, `waiting(holder)`
  // is called once with the holder's record and the wait goes on, polling `cancel` (which throws
  // Error{Cancelled}). A lock file that cannot be opened is no lock (a tune is never refused for
  // it).
  MachineLock(const std::string& path, const std::string& what, const CancelToken* cancel,
              const std::function<void(const std::string& holder)>& waiting);
  ~MachineLock();
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;

  bool held() const { return fd_ >= 0; }
  bool waited() const { return waited_; }  // another tune held it first

 private:
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace prism::tune
