#include "repl/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace prism::repl {

int ProgressBar::width() const {
  if (columns_ > 0) return columns_;
  winsize ws{};
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0) return std::atoi(c);
  return 80;
}

namespace {

// At most `columns` - 1 terminal columns of `line` (UTF-8: continuation bytes take none), cut
// with "..." where it was longer; the last column stays free so the cursor never wraps.
std::string fit(const std::string& line, int columns) {
  const size_t limit = size_t(std::max(columns - 1, 8));
  size_t used = 0, cut = line.size();
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
    if (used == limit - 3 && cut == line.size()) cut = i;
    if (++used > limit) return line.substr(0, cut) + "...";
  }
  return line;
}

}  // namespace

void ProgressBar::update(const nlohmann::json& value) {
  std::string kind = value.value("kind", "");
  if (kind == "begin") {
    title_ = value.value("title", "");
    started_ = std::chrono::steady_clock::now();
  }
  if (kind == "end") {
    clear();
    return;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string bar;
  if (value.contains("percentage") && value["percentage"].is_number_integer()) {
    int filled = std::clamp(value["percentage"].get<int>() / 5, 0, 20);  // 20 cells for 100 %
    // Built by appending: GCC 12 misreports "[" + std::string&& under -Wrestrict (GCC PR 105329).
    bar = "[";
    bar.append(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(20 - filled), '.');
    bar += "] ";
  }
  // \r and "erase to end of line": the display stays on one line however often it changes.
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "  %.1f s", seconds);
  const std::string message = value.value("message", "");
  std::string line = fit(title_ + " " + bar + message, width() - int(std::string(elapsed).size())) + elapsed;
  std::fprintf(out_, "\r\033[K%s", line.c_str());
  std::fflush(out_);
  shown_ = true;
}

void ProgressBar::clear() {
  if (!shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  shown_ = false;
}

}  // namespace prism::repl
