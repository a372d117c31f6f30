#include "fuzz/files.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "engine/util/private_files.h"

namespace prism::fuzz {

// Corpus entries and saved findings are small; a larger file is not one of them.
constexpr size_t kMaxFileBytes = size_t(256) << 20;

std::string read_file(const std::string& path) {
  FileContents file = read_regular_file(path, kMaxFileBytes);
  if (!file.bytes) throw std::runtime_error(file.error);
  return std::move(*file.bytes);
}

void write_file(const std::string& path, const std::string& bytes) {
  if (std::string problem = write_file_atomically(path, bytes); !problem.empty()) throw std::runtime_error(problem);
}

std::vector<std::string> list_files(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<std::string> read_corpus(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& path : list_files(dir, suffix)) out.push_back(read_file(path));
  return out;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory like " + pattern);
  return pattern;
}

}  // namespace prism::fuzz
