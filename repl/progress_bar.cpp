#include "repl/progress_bar.h"

#include <algorithm>

namespace prism::repl {

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
  std::fprintf(out_, "\r\033[K%s %s%s  %.1f s", title_.c_str(), bar.c_str(), value.value("message", "").c_str(), seconds);
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
