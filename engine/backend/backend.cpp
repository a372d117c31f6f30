#include "engine/backend/backend.h"

namespace prism::backend {

Build make_build(const std::string& what, const std::function<void(Build&)>& make) {
  Build b;
  try {
    make(b);
  } catch (const std::exception& e) {
    b = Build{};
    b.error = what + ": " + e.what();
  }
  return b;
}

Build Backend::fault(const std::string& kind) const {
  Build b;
  b.error = "no '" + kind + "' fault is planted on the " + name();
  return b;
}

std::string Backend::header_declarations(const std::string&) const { return ""; }

}  // namespace prism::backend
