// Cache entries that carry their own checksum: "<name>" and "<name>.sha256" (the SHA-256 of the
// bytes prism wrote). A truncated, damaged or swapped entry is found before it is used, and is
// then rebuilt instead of being served again (issue 17, D4 and D8). The checksum says nothing
// against someone who can write the directory: that is the PrivateDir's check (issue 46).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/util/private_dir.h"
#include "engine/util/private_files.h"

namespace prism {

// Records `bytes` as the content `path` must have: write the seal, then move the file into place
// (a reader in between sees a mismatch and rebuilds, never a wrong file that passes). Returns an
// error message, empty on success.
std::string write_seal(const std::string& path, std::string_view bytes);
std::string write_seal(const PrivateDir& dir, const std::string& name, std::string_view bytes);

// The file's bytes when its checksum matches; otherwise `error` says what is wrong (missing,
// no checksum, does not match).
FileContents read_sealed_file(const std::string& path, size_t max_bytes);
FileContents read_sealed_file(const PrivateDir& dir, const std::string& name, size_t max_bytes);

// Removes the entry and its checksum.
void remove_sealed_file(const std::string& path);
void remove_sealed_file(const PrivateDir& dir, const std::string& name);

}  // namespace prism
