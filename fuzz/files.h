// Small file helpers for the fuzzers: corpora, artifacts, temporary directories.
#pragma once
#include <string>
#include <vector>

namespace prism::fuzz {

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
// The contents of every regular file in `dir` whose name ends in `suffix`, in name order.
std::vector<std::string> read_corpus(const std::string& dir, const std::string& suffix);
// The paths of those files, in name order.
std::vector<std::string> list_files(const std::string& dir, const std::string& suffix);
// A new private directory under $TMPDIR (or /tmp) named prefix-XXXXXX.
std::string make_temp_dir(const std::string& prefix);

}  // namespace prism::fuzz
