#include "engine/interp/footprint.h"

#include <unistd.h>

#include <cstdio>
#include <limits>

#include "engine/error.h"

namespace prism {

namespace {
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
}  // namespace

int64_t interpreter_bytes(const Program& program, const DimBindings& dims) {
  int64_t total = 0;
  for (const Value& v : program.values) {
    int64_t bytes = int64_t(sizeof(float));
    try {
      for (const Dim& d : v.type.shape) {
        int64_t size = d.evaluate_size(dims);
        if (size > kUnbounded / bytes) return kUnbounded;
        bytes *= size;
      }
    } catch (const std::exception&) {
      continue;  // unbound or invalid dims: the request's own check says so, in better words
    }
    if (bytes > kUnbounded - total) return kUnbounded;
    total += bytes;
  }
  return total;
}

int64_t default_memory_budget() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t(4) << 30;
  return int64_t(pages) * int64_t(page) / 2;
}

std::string bytes_text(int64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = double(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 5) v /= 1024, ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  return buf;
}

void check_memory_budget(const std::string& what, int64_t need, int64_t budget) {
  if (need <= budget) return;
  throw Error(Error::Kind::InvalidArgument,
              what + (need == kUnbounded ? std::string(" needs more memory than any machine has") : " needs about " + bytes_text(need)) +
                  ", more than the memory budget of " + bytes_text(budget) + " (smaller dims, or a larger budget: prismd --memory-budget)");
}

}  // namespace prism
