// FNV-1a, 64 bits: a stable hash of text (seeds of random inputs, canonical sGraph keys). Stable
// across runs and platforms, unlike std::hash, which is what both uses need.
#pragma once
#include <cstdint>
#include <string_view>

namespace prism {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace prism
