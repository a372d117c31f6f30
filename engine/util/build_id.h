// What names this build of the engine in a cache key: the SHA-256 of the running executable, so
// that anything a rebuilt prism could find differently (a search's families) is never answered
// by what an older build stored.
#pragma once
#include <string>

namespace prism {

// 64 hex digits, computed once per process; PRISM_VERSION where the executable cannot be read.
const std::string& engine_build_id();

}  // namespace prism
