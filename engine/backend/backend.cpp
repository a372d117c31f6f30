#include "engine/backend/backend.h"

namespace prism::backend {

Build Backend::fault(const std::string& kind) const {
  Build b;
  b.error = "no '" + kind + "' fault is planted on the " + target_name(target());
  return b;
}

std::string Backend::header_declarations(const std::string&) const { return ""; }

}  // namespace prism::backend
