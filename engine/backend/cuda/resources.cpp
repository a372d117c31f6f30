#include "engine/backend/cuda/resources.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace prism::backend::cuda {

namespace {

// The integer just before `word` in `line` ("Used 18 registers": 18 before " registers"), or -1.
int64_t number_before(std::string_view line, std::string_view word) {
  size_t at = line.find(word);
  if (at == std::string_view::npos) return -1;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == at) return -1;
  return std::strtoll(std::string(line.substr(begin, at - begin)).c_str(), nullptr, 10);
}

// The text between the first pair of single quotes after `prefix`, or "".
std::string quoted_after(std::string_view line, std::string_view prefix) {
  size_t at = line.find(prefix);
  if (at == std::string_view::npos) return "";
  size_t open = line.find('\'', at + prefix.size());
  size_t close = open == std::string_view::npos ? open : line.find('\'', open + 1);
  return close == std::string_view::npos ? "" : std::string(line.substr(open + 1, close - open - 1));
}

int64_t round_up(int64_t x, int64_t unit) {
  return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

}  // namespace

std::vector<KernelResources> parse_ptxas_log(std::string_view log) {
  std::vector<KernelResources> kernels;
  std::string properties_of;  // the function the next stack/spill line describes
  std::istringstream lines{std::string(log)};
  for (std::string line; std::getline(lines, line);) {
    if (std::string name = quoted_after(line, "Compiling entry function"); !name.empty()) {
      kernels.push_back({name});
      properties_of.clear();
      continue;
    }
    if (size_t at = line.find("Function properties for "); at != std::string::npos) {
      properties_of = line.substr(at + 24);
      continue;
    }
    if (kernels.empty()) continue;
    KernelResources& k = kernels.back();
    if (line.find("bytes stack frame") != std::string::npos) {
      if (properties_of == k.name) {  // not a device function the entry calls
        k.stack_bytes = std::max<int64_t>(0, number_before(line, " bytes stack frame"));
        k.spill_store_bytes = std::max<int64_t>(0, number_before(line, " bytes spill stores"));
        k.spill_load_bytes = std::max<int64_t>(0, number_before(line, " bytes spill loads"));
      }
      continue;
    }
    const bool usage = line.find("ptxas info") != std::string::npos && line.find("Used ") != std::string::npos;
    if (int64_t r = number_before(line, " registers"); usage && r >= 0) {
      k.registers = int(r);
      k.barriers = int(std::max<int64_t>(0, number_before(line, " barriers")));
      k.static_shared_bytes = std::max<int64_t>(0, number_before(line, " bytes smem"));
    }
  }
  return kernels;
}

SmLimits sm90_limits() {
  return SmLimits{};
}

Occupancy occupancy(const KernelResources& kernel, int64_t grid_blocks, int threads, int64_t dynamic_shared_bytes, const SmLimits& sm) {
  const int warps_per_block = (std::max(threads, 1) + 31) / 32;
  std::vector<std::pair<int64_t, const char*>> limits;
  limits.push_back({sm.max_threads / (warps_per_block * 32), "threads"});
  limits.push_back({sm.max_blocks, "blocks"});
  const int64_t per_warp = round_up(int64_t(std::max(kernel.registers, 1)) * 32, sm.register_unit);
  limits.push_back({sm.registers / per_warp / warps_per_block, "registers"});
  const int64_t shared = round_up(kernel.static_shared_bytes + dynamic_shared_bytes, sm.shared_unit) + sm.shared_reserved;
  limits.push_back({sm.shared_bytes / shared, "shared memory"});
  limits.push_back({(std::max<int64_t>(grid_blocks, 1) + sm.sms - 1) / sm.sms, "grid"});
  const auto least = std::min_element(limits.begin(), limits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Occupancy o;
  o.blocks = int(least->first);
  o.warps = o.blocks * warps_per_block;
  o.limit = least->second;
  return o;
}

}  // namespace prism::backend::cuda
