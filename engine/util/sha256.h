// SHA-256 (FIPS 180-4), for checking that a cached kernel is byte for byte the one prism built.
#pragma once
#include <string>
#include <string_view>

namespace prism {

// 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace prism
