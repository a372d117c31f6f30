// Cache entries that carry their own checksum: "<path>" and "<path>.sha256" (the SHA-256 of the
// bytes prism wrote). A truncated, damaged or swapped entry is found before it is used, and is
// then rebuilt instead of being served again (issue 17, D4 and D8).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/util/private_files.h"

namespace prism {

// Records `bytes` as the content `path` must have: write the seal, then move the file into place
// (a reader in between sees a mismatch and rebuilds, never a wrong file that passes). Returns an
// error message, empty on success.
std::string write_seal(const std::string& path, std::string_view bytes);

// The file's bytes when its checksum matches; otherwise `error` says what is wrong (missing,
// no checksum, does not match).
FileContents read_sealed_file(const std::string& path, size_t max_bytes);

// Removes the entry and its checksum.
void remove_sealed_file(const std::string& path);

}  // namespace prism
