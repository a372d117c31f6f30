#include "repl/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "repl/format.h"

namespace prism::repl {

int ProgressBar::width() const {
  if (columns_ > 0) return columns_;
  winsize ws{};
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0) return std::atoi(c);
  return 80;
}

void ProgressBar::update(const nlohmann::json& value) {
  std::string kind = value.value("kind", "");
  if (kind == "begin") {
    title_ = visible_text(value.value("title", ""));
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
  const std::string message = visible_text(value.value("message", ""));  // the daemon may quote a file
  // The last column stays free, so the cursor never wraps (a wrapped line cannot be redrawn).
  const int room = std::max(width() - 1 - int(std::string(elapsed).size()), 8);
  std::string line = fit_columns(title_ + " " + bar + message, size_t(room)) + elapsed;
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
