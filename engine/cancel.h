// A flag that long-running engine work polls; set from another thread to stop it.
#pragma once
#include <atomic>
#include <chrono>

#include "engine/error.h"

namespace prism {

class CancelToken {
 public:
  using Clock = std::chrono::steady_clock;

  CancelToken() = default;
  // A token that also fires when `parent` (may be null) does, and once `deadline` has passed:
  // work below a search polls one token for its client's cancel and its time limit alike.
  CancelToken(const CancelToken* parent, Clock::time_point deadline) : parent_(parent), deadline_(deadline) {}

  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const {
    return cancelled_.load(std::memory_order_relaxed) || (parent_ && parent_->cancelled()) ||
           (deadline_ != Clock::time_point::max() && Clock::now() >= deadline_);
  }
  // Throws Error{Cancelled} when the token fired; call at convenient points of long work.
  void check() const {
    if (cancelled()) throw Error(Error::Kind::Cancelled, "cancelled");
  }

 private:
  std::atomic<bool> cancelled_{false};
  const CancelToken* parent_ = nullptr;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace prism
