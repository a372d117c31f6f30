#include "engine/backend/runner/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "engine/util/process.h"

namespace prism::backend {

namespace fs = std::filesystem;

namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Signals a kernel does not raise itself: someone ended the worker (the OOM killer, kill, a
// shutdown), so its candidate may well run another time.
bool killed_from_outside(int status) {
  if (!WIFSIGNALED(status)) return false;
  int sig = WTERMSIG(status);
  return sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    const std::string name = std::string("SIG") + (abbrev ? abbrev : std::to_string(sig).c_str()) + ", " + strsignal(sig);
    if (killed_from_outside(status))
      return "the kernel's worker was killed from outside (" + name + ": the OOM killer, a kill or a shutdown), not by its kernel";
    return "the kernel crashed (" + name + ")";
  }
  if (WIFEXITED(status)) return "the kernel ended its process (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  return "the kernel's process ended";
}

// What the worker could not do that says nothing about the kernel: a library that would not load
// (a damaged cache entry, an unsafe cache), outputs or a plan it could not write or read (a full
// /dev/shm), memory it could not get.
bool error_is_transient(const std::string& error) {
  for (const char* prefix : {"cannot load", "cannot write", "cannot read", "std::bad_alloc"})
    if (error.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

std::string default_runner_path() {
  if (const char* env = std::getenv("PRISM_RUNNER"); env && *env) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ((ec ? fs::path(".") : self.parent_path()) / "prism-runner").string();
}

struct KernelRunner::Worker {
  pid_t pid = -1;
  int to = -1, from = -1;
  std::string buffered;
  bool killed_from_outside = false;  // how the last reaped worker ended

  ~Worker() { kill(); }
  void kill() {
    if (to >= 0) ::close(to);
    if (from >= 0) ::close(from);
    to = from = -1;
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      pid = -1;
    }
  }
  // The worker's exit, once it closed its end: waits for it.
  std::string reap() {
    int status = 0;
    if (to >= 0) ::close(to);
    if (from >= 0) ::close(from);
    to = from = -1;
    if (pid > 0 && ::waitpid(pid, &status, 0) == pid) {
      pid = -1;
      killed_from_outside = ::prism::backend::killed_from_outside(status);
      return describe_exit(status);
    }
    return "the kernel's process ended";
  }

  enum class Read { Line, Eof, Timeout };
  // One line of the answer, waiting at most until `deadline`; polls `cancel` every 50 ms.
  Read read_line(std::string& line, std::chrono::steady_clock::time_point deadline, const CancelToken* cancel) {
    for (;;) {
      if (auto nl = buffered.find('\n'); nl != std::string::npos) {
        line = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return Read::Line;
      }
      if (cancel && cancel->cancelled()) {
        kill();
        throw Error(Error::Kind::Cancelled, "cancelled");
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return Read::Timeout;
      pollfd p{from, POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 50)));
      if (n < 0 && errno != EINTR) return Read::Eof;
      if (n <= 0) continue;
      char buf[4096];
      ssize_t got = ::read(from, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return Read::Eof;
      buffered.append(buf, static_cast<size_t>(got));
    }
  }
};

namespace {
std::string runner_dir_base() {
  return fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : fs::temp_directory_path().string();
}
}  // namespace

size_t remove_stale_runner_dirs() {
  // "prism-runner-<pid>-XXXXXX" of this user whose process is gone (a kill -9 mid-tune): their
  // inputs would otherwise hold memory in /dev/shm until reboot.
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runner_dir_base(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("prism-runner-", 0) != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + 13, nullptr, 10));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno == EPERM) continue;
    removed += fs::remove_all(entry.path(), ec) > 0;
  }
  return removed;
}

KernelRunner::KernelRunner(std::string runner_path) : runner_path_(std::move(runner_path)) {
  std::string base = runner_dir_base();
  std::string tmpl = base + "/prism-runner-" + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw Error(Error::Kind::Failed, "cannot create a directory under " + base + ": " + std::strerror(errno));
  dir_ = tmpl;
}

KernelRunner::~KernelRunner() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void KernelRunner::stop() { worker_.reset(); }

void KernelRunner::start() {
  if (::access(runner_path_.c_str(), X_OK) != 0)
    throw Error(Error::Kind::Failed, "cannot start the kernel runner " + runner_path_ + ": " + std::strerror(errno));
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) || ::pipe2(from_child, O_CLOEXEC)) throw Error(Error::Kind::Failed, "pipe failed");
  std::string log = dir_ + "/worker-stderr";
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw Error(Error::Kind::Failed, "fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    die_with_parent(parent);
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) ::dup2(err, 2);
    const char* argv[] = {runner_path_.c_str(), nullptr};
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::signal(SIGPIPE, SIG_IGN);
  worker_ = std::make_unique<Worker>();
  worker_->pid = pid;
  worker_->to = to_child[1];
  worker_->from = from_child[0];
  if (input_sizes_.empty()) return;
  std::ostringstream cmd;
  cmd << "inputs " << input_sizes_.size();
  for (int64_t s : input_sizes_) cmd << " " << s;
  cmd << " " << dir_ << "/inputs.bin\n";
  std::string line;
  if (!write_all(worker_->to, cmd.str().data(), cmd.str().size()) ||
      worker_->read_line(line, std::chrono::steady_clock::now() + std::chrono::seconds(60), nullptr) != Worker::Read::Line ||
      line != "ok") {
    std::string why = line.rfind("error ", 0) == 0 ? line.substr(6) : worker_->reap();
    worker_.reset();
    throw Error(Error::Kind::Failed, "the kernel runner could not take the inputs: " + why);
  }
}

void KernelRunner::set_inputs(const std::vector<Tensor>& inputs) {
  stop();
  input_sizes_.clear();
  std::ofstream out(dir_ + "/inputs.bin", std::ios::binary | std::ios::trunc);
  for (const Tensor& t : inputs) {
    input_sizes_.push_back(t.size());
    out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size() * sizeof(float)));
  }
  if (!out) throw Error(Error::Kind::Failed, "cannot write the kernel inputs to " + dir_);
}

int KernelRunner::worker_pid() const { return worker_ && worker_->pid > 0 ? int(worker_->pid) : 0; }

RunOutcome KernelRunner::run(const WorkerRun& run, const CancelToken* cancel) {
  const std::string id = std::to_string(runs_++);
  const std::string out_path = run.outputs ? dir_ + "/outputs-" + id + ".bin" : "-";
  const std::string attachment = run.attachment.empty() ? "" : dir_ + "/attachment-" + id;
  if (!attachment.empty()) {
    std::ofstream file(attachment, std::ios::binary | std::ios::trunc);
    file << run.attachment;
    if (!file) throw Error(Error::Kind::Failed, "cannot write the run's attachment to " + attachment);
  }
  std::ostringstream cmd;  // runner/worker.cpp: run BACKEND K SIZE_1 … SIZE_K \t OUT_PATH \t ATTACHMENT \t ARGUMENTS
  cmd << "run " << run.backend << " " << run.output_shapes.size();
  for (const auto& shape : run.output_shapes) cmd << " " << checked_element_count(shape);
  cmd << "\t" << out_path << "\t" << attachment << "\t" << run.arguments << "\n";
  RunOutcome outcome = exchange(cmd.str(), out_path, run.output_shapes, run.timeout_s, cancel);
  std::error_code ec;
  if (!attachment.empty()) fs::remove(attachment, ec);
  if (!outcome.ok && run.fresh_worker_after_failure) stop();
  return outcome;
}

RunOutcome KernelRunner::exchange(const std::string& command, const std::string& out_path,
                                  const std::vector<std::vector<int64_t>>& output_shapes, double timeout_s, const CancelToken* cancel) {
  RunOutcome outcome;
  if (worker_ && worker_->pid <= 0) worker_.reset();  // killed by a cancelled run
  if (!worker_) start();
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (!write_all(worker_->to, command.data(), command.size())) {
    outcome.error = worker_->reap();
    outcome.transient = true;  // it was gone before this kernel ran
    worker_.reset();
    return outcome;
  }
  switch (worker_->read_line(line, deadline, cancel)) {
    case Worker::Read::Timeout:
      worker_.reset();
      outcome.error = "the kernel did not finish within " + std::to_string(int(timeout_s)) + " s (killed)";
      outcome.transient = true;
      return outcome;
    case Worker::Read::Eof: {
      outcome.error = worker_->reap();
      outcome.transient = worker_->killed_from_outside;
      worker_.reset();
      if (auto detail = last_line(dir_ + "/worker-stderr"); !detail.empty()) outcome.error += ": " + detail;
      return outcome;
    }
    case Worker::Read::Line:
      break;
  }
  if (line.rfind("error ", 0) == 0) {
    outcome.error = line.substr(6);
    outcome.transient = error_is_transient(outcome.error);
    return outcome;
  }
  std::istringstream reply(line);
  std::string ok;
  reply >> ok >> outcome.median_ms >> outcome.min_ms >> outcome.runs;
  if (ok != "ok" || !reply) {
    outcome.error = "the kernel runner answered '" + line + "'";
    outcome.transient = true;
    stop();
    return outcome;
  }
  if (out_path == "-") {  // a timing round
    outcome.ok = true;
    return outcome;
  }
  std::ifstream in(out_path, std::ios::binary);
  for (size_t i = 0; i < output_shapes.size(); ++i) {
    Tensor t = Tensor::zeros(DType::F32, output_shapes[i]);
    in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(t.data.size() * sizeof(float)));
    outcome.outputs.push_back(std::move(t));
  }
  std::error_code ec;
  fs::remove(out_path, ec);
  if (!in) {
    outcome.outputs.clear();
    outcome.error = "cannot read the kernel's outputs from " + out_path;
    outcome.transient = true;
    return outcome;
  }
  outcome.ok = true;
  return outcome;
}

}  // namespace prism::backend
