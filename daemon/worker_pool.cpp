#include "daemon/worker_pool.h"

namespace prism::daemon {

WorkerPool::WorkerPool(size_t threads, std::function<void(const std::string&)> on_error)
    : on_error_(std::move(on_error)) {
  if (threads == 0) threads = 1;
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

size_t WorkerPool::pending() {
  std::lock_guard lock(mutex_);
  return tasks_.size() + running_;
}

void WorkerPool::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    try {
      task();
    } catch (const std::exception& e) {
      if (on_error_) on_error_(std::string("a worker task failed: ") + e.what());
    } catch (...) {
      if (on_error_) on_error_("a worker task failed with an unknown exception");
    }
    std::lock_guard lock(mutex_);
    --running_;
  }
}

}  // namespace prism::daemon
