// A flag that long-running engine work polls; set from another thread to stop it.
#pragma once
#include <atomic>

#include "engine/error.h"

namespace prism {

class CancelToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Throws Error{Cancelled} when the token fired; call at convenient points of long work.
  void check() const {
    if (cancelled()) throw Error(Error::Kind::Cancelled, "cancelled");
  }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace prism
