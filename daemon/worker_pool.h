// A fixed set of threads for long requests (program/run), so that they never block the I/O thread.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace prism::daemon {

class WorkerPool {
 public:
  // `on_error` hears of an exception a task let escape (the task is lost, the thread goes on).
  explicit WorkerPool(size_t threads, std::function<void(const std::string&)> on_error = {});
  // Runs what is queued, then joins (callers cancel long work first).
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> task);
  size_t size() const { return threads_.size(); }
  // Tasks queued or running now.
  size_t pending();

 private:
  void loop();

  std::function<void(const std::string&)> on_error_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace prism::daemon
