#include "engine/util/build_id.h"

#include "engine/util/private_files.h"
#include "engine/util/sha256.h"

namespace prism {

const std::string& engine_build_id() {
  static const std::string id = [] {
    FileContents self = read_regular_file("/proc/self/exe", size_t(1) << 32);
    return self.bytes ? sha256_hex(*self.bytes) : std::string("version ") + PRISM_VERSION;
  }();
  return id;
}

}  // namespace prism
