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

// Bytes of one element of a PTX type suffix ("f32", "b16", "f16x2", "b128"), 0 when it is none.
int64_t type_bytes(std::string_view t) {
  if (t == "b128") return 16;
  if (t == "f64" || t == "b64" || t == "u64" || t == "s64") return 8;
  if (t == "f32" || t == "b32" || t == "u32" || t == "s32" || t == "f16x2" || t == "bf16x2") return 4;
  if (t == "f16" || t == "bf16" || t == "b16" || t == "u16" || t == "s16") return 2;
  if (t == "b8" || t == "u8" || t == "s8") return 1;
  return 0;
}

// The bytes one `ld.global…` instruction loads per thread: its vector width times its type's size.
int64_t ld_bytes(std::string_view opcode) {
  int64_t vector = 1, element = 0;
  std::string part;
  std::istringstream parts{std::string(opcode)};
  while (std::getline(parts, part, '.')) {
    if (part == "v2" || part == "v4" || part == "v8") vector = part[1] - '0';
    if (int64_t b = type_bytes(part)) element = b;
  }
  return vector * element;
}

// The body of `.entry NAME(` in `ptx`, braces matched; empty when there is none.
std::string_view entry_body(std::string_view ptx, const std::string& kernel) {
  for (size_t at = ptx.find(".entry " + kernel); at != std::string_view::npos; at = ptx.find(".entry " + kernel, at + 1)) {
    const size_t after = at + 7 + kernel.size();
    if (after < ptx.size() && ptx[after] != '(' && !std::isspace(static_cast<unsigned char>(ptx[after]))) continue;
    size_t open = ptx.find('{', after);
    if (open == std::string_view::npos) return {};
    int depth = 0;
    for (size_t i = open; i < ptx.size(); ++i) {
      if (ptx[i] == '{') ++depth;
      if (ptx[i] == '}' && --depth == 0) return ptx.substr(open, i - open + 1);
    }
    return {};
  }
  return {};
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

std::map<int64_t, int> global_load_widths(std::string_view ptx, const std::string& kernel) {
  std::map<int64_t, int> widths;
  std::istringstream lines{std::string(entry_body(ptx, kernel))};
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    if (line[at] == '@') at = line.find_first_of(" \t", at);  // a predicate: @%p1 ld.global…
    at = line.find_first_not_of(" \t", at == std::string::npos ? line.size() : at);
    if (at == std::string::npos) continue;
    const size_t end = line.find_first_of(" \t", at);
    const std::string opcode = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (opcode.rfind("ld.global", 0) == 0) {
      ++widths[ld_bytes(opcode)];
    } else if (opcode.rfind("cp.async", 0) == 0 && opcode.find(".shared") != std::string::npos && opcode.find(".global") != std::string::npos) {
      // cp.async.cg.shared.global [dst], [src], 16(, src-size); the size is the operand after the
      // second address. A bulk copy (TMA) moves at least 16 bytes.
      const size_t first = line.find(']', at), second = first == std::string::npos ? first : line.find(']', first + 1);
      const size_t comma = second == std::string::npos ? second : line.find(',', second);
      const int64_t size = comma == std::string::npos ? 0 : std::strtoll(line.c_str() + comma + 1, nullptr, 10);
      ++widths[opcode.find(".bulk") != std::string::npos ? std::max<int64_t>(size, 16) : size];
    }
  }
  return widths;
}

}  // namespace prism::backend::cuda
