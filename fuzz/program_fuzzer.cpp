#include "fuzz/program_fuzzer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "engine/workspace/workspace.h"
#include "fuzz/files.h"

namespace prism::fuzz {

namespace {

const std::vector<std::string> kTokens = {"program",
                                          "return",
                                          "(",
                                          ")",
                                          "[",
                                          "]",
                                          "{",
                                          "}",
                                          ",",
                                          "\n",
                                          "=",
                                          "+",
                                          "-",
                                          "*",
                                          "/",
                                          "@",
                                          "#",
                                          " ",
                                          "axis=-1",
                                          "axis=0",
                                          "axis=2",
                                          "axis=99",
                                          "keepdims=false",
                                          "keepdims=true",
                                          "eps=1e-6",
                                          "eps=0",
                                          "eps=-1",
                                          "eps=1e400",
                                          "perm=[0, 2, 1]",
                                          "perm=[0, 0]",
                                          "perm=[]",
                                          "matmul(",
                                          "sum(",
                                          "max(",
                                          "rms(",
                                          "mean(",
                                          "softmax(",
                                          "rms_norm(",
                                          "split(",
                                          "reshape(",
                                          "concat(",
                                          "transpose(",
                                          "exp(",
                                          "log(",
                                          "sqrt(",
                                          "rsqrt(",
                                          "square(",
                                          "silu(",
                                          "gelu(",
                                          "relu(",
                                          "tanh(",
                                          "sigmoid(",
                                          "abs(",
                                          "neg(",
                                          "add(",
                                          "sub(",
                                          "mul(",
                                          "div(",
                                          "X",
                                          "W",
                                          "Y",
                                          "n",
                                          "d",
                                          "b",
                                          "1",
                                          "2",
                                          "0",
                                          "-1",
                                          "2*d",
                                          "n/2",
                                          "d-d",
                                          "n*n",
                                          "f16",
                                          "bf16",
                                          "f32",
                                          "f64",
                                          "i32",
                                          "f16[",
                                          "f32[n, d]",
                                          "1e309",
                                          "1e-400",
                                          "99999999999999999999",
                                          "4611686018427387904",
                                          "0.5",
                                          "A, B",
                                          "A, B = split(X, 2)",
                                          "\xff",
                                          "\xe2\x80\x94",
                                          "\t",
                                          "\r",
                                          ";",
                                          ":",
                                          "program p(X: f32[n]) {\n  return X\n}\n"};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '\n') lines.push_back(text.substr(start, i - start)), start = i + 1;
  return lines;
}

// Does the text hold anything but blanks and comments?
bool has_content(const std::string& text) {
  for (const auto& line : split_lines(text)) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') return true;
  }
  return false;
}

// Empty when the diagnostic names a real position of `lines` and says something, else what is wrong.
std::string position_problem(const Diagnostic& d, const std::vector<std::string>& lines) {
  if (d.message.empty()) return "empty message";
  const SourcePos& p = d.range.begin;
  std::string at = std::to_string(p.line) + ":" + std::to_string(p.col);
  if (p.line < 1 || p.col < 1) return "position " + at + " is not 1-based";
  if (size_t(p.line) > lines.size()) return "line " + at + " is past the last line (" + std::to_string(lines.size()) + ")";
  if (size_t(p.col) > lines[size_t(p.line) - 1].size() + 1) return "column " + at + " is past the end of its line";
  if (d.format().find(":" + at + ":") == std::string::npos) return "format() does not show " + at + ": " + d.format();
  return "";
}

}  // namespace

ProgramFuzzer::ProgramFuzzer(ProgramFuzzOptions options, std::vector<std::string> corpus)
    : options_(std::move(options)), corpus_(std::move(corpus)), tokens_(kTokens) {
  std::filesystem::create_directories(options_.artifacts);
  current_path_ = options_.artifacts + "/current-program-" + std::to_string(::getpid()) + ".prism";
}

void ProgramFuzzer::note(const std::string& kind, uint64_t i, const std::string& text, const std::string& what) {
  std::string file = options_.artifacts + "/" + kind + "-seed" + std::to_string(options_.seed) + "-iter" + std::to_string(i) + ".prism";
  write_file(file, text);
  if (++notes_printed_ <= 20) std::cout << "  " << kind << " at iteration " << i << ": " << what << " (" << file << ")\n";
}

void ProgramFuzzer::fuzz_case(Workspace& ws, uint64_t i, const std::string& text) {
  Mutator m = Mutator::for_iteration(options_.seed ^ 0x5eed, i);
  CancelToken cancel;
  cancel_ = &cancel;
  case_index_ = i;
  case_started_ms_ = now_ms();
  ++stats_.cases;
  try {
    DocumentState st = ws.open("fuzz.prism", text, int64_t(i) + 1, true);
    auto lines = split_lines(text);
    bool error = false;
    for (const auto& d : st.diagnostics) {
      error = error || d.severity == Severity::Error;
      if (auto problem = position_problem(d, lines); !problem.empty()) {
        ++stats_.position_violations;
        note("position", i, text, problem + " in '" + d.format() + "'");
      }
    }
    if (!st.programs.empty()) ++stats_.parsed;
    else if (error) ++stats_.rejected;
    else ++stats_.empty;
    if (st.programs.empty() && !error && has_content(text)) {
      ++stats_.position_violations;
      note("position", i, text, "text with content defines no program and has no error diagnostic");
    }
    for (const auto& name : st.programs) {
      ++stats_.programs;
      ProgramDetail detail = ws.show(name);
      RunRequest run{name, {}, i, {}, "", 4};
      for (const auto& dim : detail.summary.dims) run.bindings[dim] = int64_t(m.pick(std::vector<int>{1, 2, 3, 4, 6, 8}));
      try {
        ws.run(run, &cancel);
        ++stats_.runs_ok;
      } catch (const Error&) {
        ++stats_.run_errors;  // contradictory bindings and the like: the engine said why
      }
      if (options_.search) {
        SearchLimits limits;
        limits.max_block_ops = 4;
        limits.max_kernels = 1;
        limits.threads = 1;
        limits.budget_s = 0.2;
        try {
          ws.search(name, limits, &cancel);
        } catch (const Error&) {}
        ++stats_.searches;
      }
    }
  } catch (const std::exception& e) {  // not prism::Error: the daemon would answer InternalError
    ++stats_.unexpected_exceptions;
    note("exception", i, text, e.what());
  }
  case_started_ms_ = -1;
  cancel_ = nullptr;
}

void ProgramFuzzer::watchdog() {
  while (!done_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    int64_t started = case_started_ms_;
    if (started < 0) continue;
    double seconds = double(now_ms() - started) / 1000;
    if (seconds > options_.case_seconds)
      if (auto* token = static_cast<CancelToken*>(cancel_.load())) token->cancel();
    if (seconds > 2 * options_.case_seconds) {
      std::string file =
          options_.artifacts + "/hang-seed" + std::to_string(options_.seed) + "-iter" + std::to_string(case_index_) + ".prism";
      std::filesystem::copy_file(current_path_, file, std::filesystem::copy_options::overwrite_existing);
      std::cout << "FINDING: hang: iteration " << case_index_ << " of seed " << options_.seed << " still runs after " << seconds
                << " s (cancelled at " << options_.case_seconds << " s); input: " << file << std::endl;
      std::_Exit(3);
    }
  }
}

int ProgramFuzzer::run() {
  Workspace ws;
  std::thread dog([this] { watchdog(); });
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::cout << "crash reproduction: the case being run is always in " << current_path_ << std::endl;
  if (!options_.replay.empty()) {
    std::string text = read_file(options_.replay);
    write_file(current_path_, text);
    fuzz_case(ws, 0, text);
  }
  for (uint64_t i = 0; options_.replay.empty() && i < options_.programs; ++i) {
    if (options_.only != UINT64_MAX && i != options_.only) continue;
    Mutator m = Mutator::for_iteration(options_.seed, i);
    std::string text;
    if (m.chance(0.04)) {  // random bytes
      text.resize(m.below(512));
      for (char& c : text) c = char(m.next() & 0xFF);
    } else {
      text = m.mutate_text(m.pick(corpus_), corpus_, tokens_);
      if (m.chance(0.05)) text.append("\n").append(m.mutate_text(m.pick(corpus_), corpus_, tokens_));
    }
    write_file(current_path_, text);
    fuzz_case(ws, i, text);
    if (options_.progress_every && (i + 1) % options_.progress_every == 0)
      std::cout << "  " << i + 1 << " programs, " << elapsed() << " s" << std::endl;
  }
  done_ = true;
  dog.join();
  std::filesystem::remove(current_path_);
  const auto& s = stats_;
  std::printf(
      "programs fuzz: %llu cases: %llu parsed OK, %llu rejected with an error, %llu empty; %llu programs, %llu runs OK, %llu "
      "run errors, %llu searches\nfindings: %llu position violations, %llu unexpected exceptions; crashes: 0, hangs: 0; wall "
      "time: %.1f s\n",
      (unsigned long long)s.cases, (unsigned long long)s.parsed, (unsigned long long)s.rejected, (unsigned long long)s.empty,
      (unsigned long long)s.programs, (unsigned long long)s.runs_ok, (unsigned long long)s.run_errors, (unsigned long long)s.searches,
      (unsigned long long)s.position_violations, (unsigned long long)s.unexpected_exceptions, elapsed());
  return 0;
}

}  // namespace prism::fuzz
