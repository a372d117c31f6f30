#include "fuzz/frame_fuzzer.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>
#include <utility>

#include "fuzz/files.h"
#include "fuzz/liveness.h"
#include "fuzz/message_guard.h"

namespace prism::fuzz {

namespace {

constexpr size_t kHistory = 32;
constexpr int kMaxRestarts = 20;
const char* kInitialize = R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"fuzz"}}})";
const char* kInitialized = R"({"jsonrpc":"2.0","method":"initialized","params":{}})";
const char* kDocument = "program from_file(X: f32[n, d], W: f32[d, d]) {\n  return rms_norm(X) @ W\n}\n";

// How often a request that may run long is cancelled right after it is sent: tunes compile
// kernels for seconds, so nearly always.
double cancel_probability(const std::string& method) {
  if (method == "tune/run") return 0.97;
  if (method == "search/run") return 0.9;
  if (method == "program/run") return 0.3;
  return 0.6;
}

std::string printable(const std::string& bytes, size_t most) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < most; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') out += "\\r";
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += char(c);
  }
  if (bytes.size() > most) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

// A short pause between two writes, so that the daemon reads them apart. Spins: sleeping takes
// ten milliseconds or more on some kernels, and most pauses are a fraction of one.
void pause(int micros) {
  auto until = Clock::now() + std::chrono::microseconds(micros);
  while (Clock::now() < until) std::this_thread::yield();
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(int64_t(seconds * 1000)); }

}  // namespace

FrameFuzzer::FrameFuzzer(FrameFuzzOptions options, std::vector<std::string> corpus)
    : options_(std::move(options)), corpus_(std::move(corpus)), clients_(size_t(std::max(1, options_.clients))) {
  temp_dir_ = make_temp_dir("prism-fuzz");
  write_file(temp_dir_ + "/doc.prism", kDocument);
  socket_ = options_.socket.empty() ? temp_dir_ + "/s.sock" : options_.socket;
  paths_ = {options_.prismd, temp_dir_, socket_, temp_dir_ + "/state", temp_dir_ + "/cache", temp_dir_ + "/prismd.log"};
}

FrameFuzzer::~FrameFuzzer() {
  clients_.clear();
  daemon_.reset();
  if (!options_.keep_temp) std::filesystem::remove_all(temp_dir_);
}

bool FrameFuzzer::start_daemon() {
  if (!options_.socket.empty()) return true;
  daemon_ = std::make_unique<DaemonProcess>(paths_);
  if (daemon_->wait_ready(std::chrono::seconds(120))) {
    std::cout << "prismd pid " << daemon_->pid() << " on " << socket_ << " (log: " << paths_.log_file << ")\n";
    return true;
  }
  std::cerr << "prismd did not start; its log (" << paths_.log_file << "):\n" << read_file(paths_.log_file) << "\n";
  return false;
}

void FrameFuzzer::retire(int k) {
  if (auto& c = clients_[size_t(k)]) {
    const auto& r = c->replies();
    stats_.replies += c->frames_read();
    stats_.results += r.results;
    stats_.errors += r.errors;
    stats_.internal_errors += r.internal_errors;
    stats_.notifications += r.notifications;
    for (const auto& body : r.internal)
      if (stats_.internal.size() < 20) stats_.internal.push_back(body);
  }
  clients_[size_t(k)].reset();
}

void FrameFuzzer::send(int k, const SendPlan& plan, SentRecord& record) {
  for (const Write& w : plan.writes) {
    if (w.delay_us > 0) pause(w.delay_us);
    record.bytes += w.bytes;
    ++stats_.writes;
    stats_.bytes += w.bytes.size();
    auto result = clients_[size_t(k)]->send(w.bytes, ms(options_.stall_seconds));
    if (result == Connection::SendResult::Closed) {
      ++stats_.closed_by_daemon;
      retire(k);
      return;
    }
    if (result == Connection::SendResult::Stalled) {
      ++stats_.stalls;
      std::cout << "stall: client " << k << " at iteration " << record.iteration << " took no bytes for " << options_.stall_seconds << " s"
                << (record.what.empty() ? "" : " (" + record.what + ")") << "; checking liveness now\n";
      retire(k);
      stalled_ = true;
      return;
    }
  }
  clients_[size_t(k)]->drain(std::chrono::milliseconds(0));
}

void FrameFuzzer::iteration(uint64_t i) {
  Mutator m = Mutator::for_iteration(options_.seed, i);
  int k = int(m.below(clients_.size()));
  SentRecord record{i, k, false, "", ""};
  std::string greeting;
  auto& slot = clients_[size_t(k)];
  if (!slot || slot->closed() || m.chance(0.01)) {
    retire(k);
    slot = Connection::open(socket_);
    if (!slot) return;  // the liveness check says why
    record.fresh = true;
    ++stats_.connections;
    if (m.chance(0.9)) greeting = Mutator::frame(kInitialize) + (m.chance(0.5) ? Mutator::frame(kInitialized) : "");
  }
  bool mutate_header = m.chance(options_.p_framing);
  std::vector<std::string> bodies;
  for (size_t n = m.chance(0.1) ? 2 + m.below(3) : 1; n > 0; --n) {
    const std::string& seed = m.pick(corpus_);
    bool mutate = !m.chance(0.15);
    GuardedMessage g = guard_message(mutate ? m.mutate_json(seed, corpus_) : seed, mutate_header, temp_dir_);
    bodies.push_back(std::move(g.body));
    ++stats_.frames;
    stats_.mutated += mutate || mutate_header;
    if (g.long_request_id && m.chance(cancel_probability(g.long_request_method)))
      bodies.push_back(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":)" + *g.long_request_id + "}}");
  }
  SendPlan plan = m.frame_plan(bodies, mutate_header);
  record.what = plan.what;
  if (!greeting.empty()) plan.writes.insert(plan.writes.begin(), Write{greeting, 0});
  send(k, plan, record);
  if (slot && (plan.disconnect || (plan.poisoned && m.chance(0.9)) || m.chance(0.02))) {
    ++stats_.disconnects;
    retire(k);
  }
  history_.push_back(std::move(record));
  if (history_.size() > kHistory) history_.pop_front();
}

bool FrameFuzzer::check(uint64_t i, bool liveness) {
  for (auto& c : clients_)
    if (c) c->drain(std::chrono::milliseconds(0));
  if (daemon_) {
    if (auto status = daemon_->exited()) {
      report(i, "crash", "prismd exited: " + describe_wait_status(*status));
      return false;
    }
  }
  if (!liveness) return true;
  ++stats_.liveness_checks;
  std::optional<long> pid;
  if (daemon_) pid = long(daemon_->pid());
  Liveness l = check_liveness(socket_, ms(options_.liveness_seconds), pid);
  stats_.slowest_liveness = std::max(stats_.slowest_liveness, l.seconds);
  if (l.ok) return true;
  if (daemon_ && daemon_->exited()) {
    report(i, "crash", "prismd exited: " + describe_wait_status(*daemon_->exited()) + " (liveness: " + l.why + ")");
  } else {
    report(i, "hang", "liveness check failed after " + std::to_string(l.seconds) + " s: " + l.why);
  }
  return false;
}

void FrameFuzzer::report(uint64_t i, const std::string& kind, const std::string& why) {
  ++(kind == "crash" ? stats_.crashes : stats_.hangs);
  std::string dir = options_.artifacts + "/" + kind + "-seed" + std::to_string(options_.seed) + "-iter" + std::to_string(i);
  std::filesystem::create_directories(dir);
  std::string summary = "FINDING: " + kind + " at seed " + std::to_string(options_.seed) + ", iteration " + std::to_string(i) + "\n" + why +
                        "\nreplay: prism_fuzz_frames --replay " + dir + "\nlast frames sent (oldest first):\n";
  for (const auto& r : history_) {
    char name[64];
    std::snprintf(name, sizeof name, "/%06" PRIu64 "-c%d%s.bin", r.iteration, r.client, r.fresh ? "-new" : "");
    write_file(dir + name, r.bytes);
    summary += "  iteration " + std::to_string(r.iteration) + ", client " + std::to_string(r.client) + (r.fresh ? " (new)" : "") +
               (r.what.empty() ? "" : ", " + r.what) + ": " + printable(r.bytes, 400) + "\n";
  }
  if (daemon_) {
    std::string log = read_file(paths_.log_file);
    size_t from = log.size() > 6000 ? log.size() - 6000 : 0;
    summary += "prismd log (tail):\n" + log.substr(from) + "\n";
  }
  write_file(dir + "/summary.txt", summary);
  std::cout << summary << std::flush;
}

std::string FrameFuzzer::scan_log_for_sanitizers() {
  if (!daemon_) return "";
  std::string log = read_file(paths_.log_file);
  for (const char* marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "Sanitizer:DEADLYSIGNAL"}) {
    size_t at = log.find(marker);
    if (at != std::string::npos) return log.substr(at > 2000 ? at - 2000 : 0, 8000);
  }
  return "";
}

int FrameFuzzer::run() {
  if (!start_daemon()) return 2;
  auto start = Clock::now();
  for (uint64_t i = 0; i < options_.frames; ++i) {
    auto started = Clock::now();
    iteration(i);
    ++stats_.iterations;
    if (double t = seconds_since(started); t > 0.2) {
      ++stats_.slow_iterations;
      if (std::getenv("PRISM_FUZZ_VERBOSE"))
        std::cout << "  slow iteration " << i << ": " << t << " s: " << printable(history_.back().bytes, 300) << "\n";
    }
    bool liveness = (i + 1) % options_.check_every == 0 || i + 1 == options_.frames || std::exchange(stalled_, false);
    if ((i + 1) % 64 == 0 || liveness) {
      if (!check(i, liveness)) {
        if (!options_.keep_going || !daemon_ || ++restarts_ > kMaxRestarts) break;
        for (int k = 0; k < int(clients_.size()); ++k) retire(k);
        daemon_.reset();
        if (!start_daemon()) break;
      }
    }
    if (options_.progress_every && (i + 1) % options_.progress_every == 0)
      std::cout << "  " << i + 1 << " iterations, " << stats_.frames << " frames, " << seconds_since(start) << " s\n" << std::flush;
  }
  for (int k = 0; k < int(clients_.size()); ++k) {
    if (clients_[size_t(k)]) clients_[size_t(k)]->drain(std::chrono::milliseconds(10));
    retire(k);
  }
  if (daemon_ && !daemon_->exited()) {
    auto status = daemon_->stop(std::chrono::seconds(20));
    if (!status) std::cout << "note: prismd did not stop within 20 s of SIGTERM (killed)\n";
    else if (*status != 0) std::cout << "note: prismd stopped with " << describe_wait_status(*status) << " after SIGTERM\n";
  }
  if (std::string report_text = scan_log_for_sanitizers(); !report_text.empty()) {
    ++stats_.crashes;
    std::cout << "FINDING: a sanitizer report in prismd's log:\n" << report_text << "\n";
    write_file(options_.artifacts + "/sanitizer-seed" + std::to_string(options_.seed) + ".txt", report_text);
  }
  for (const auto& body : stats_.internal) std::cout << "InternalError answer: " << printable(body, 400) << "\n";
  print_stats(stats_, seconds_since(start));
  return stats_.crashes + stats_.hangs == 0 ? 0 : 1;
}

int FrameFuzzer::replay(const std::string& dir) {
  if (!start_daemon()) return 2;
  for (const auto& path : list_files(dir, ".bin")) {
    std::string name = std::filesystem::path(path).filename().string();
    int k = std::atoi(name.c_str() + name.find("-c") + 2) % int(clients_.size());
    if (name.find("-new") != std::string::npos || !clients_[size_t(k)]) clients_[size_t(k)] = Connection::open(socket_);
    if (!clients_[size_t(k)]) continue;
    clients_[size_t(k)]->send(read_file(path), ms(options_.stall_seconds));
    clients_[size_t(k)]->drain(std::chrono::milliseconds(20));
    std::cout << "sent " << name << "\n";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  bool ok = check(0, true);
  std::cout << (ok ? "prismd survived the replay\n" : "the replay reproduced the finding\n");
  return ok ? 0 : 1;
}

void print_stats(const FrameFuzzStats& s, double seconds) {
  std::printf("frames fuzz: %" PRIu64 " iterations, %" PRIu64 " frames (%" PRIu64 " mutated), %" PRIu64 " writes, %.1f MB, %" PRIu64
              " replies (%" PRIu64 " results, %" PRIu64 " errors of which %" PRIu64 " InternalError, %" PRIu64 " notifications), %" PRIu64
              " connections (%" PRIu64 " closed by prismd, %" PRIu64 " dropped by the fuzzer), %" PRIu64 " stalls, %" PRIu64
              " iterations over 0.2 s, %" PRIu64
              " liveness checks (slowest %.2f s)\n"
              "crashes: %" PRIu64 ", hangs: %" PRIu64 ", wall time: %.1f s\n",
              s.iterations, s.frames, s.mutated, s.writes, double(s.bytes) / 1e6, s.replies, s.results, s.errors, s.internal_errors,
              s.notifications, s.connections, s.closed_by_daemon, s.disconnects, s.stalls, s.slow_iterations, s.liveness_checks,
              s.slowest_liveness, s.crashes, s.hangs, seconds);
  std::fflush(stdout);
}

}  // namespace prism::fuzz
