#include "engine/backend/cuda/ptx_loads.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

namespace prism::backend::cuda {

namespace {

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

// One instruction of an entry's body: its opcode (predicate dropped) and its operands, split at
// the commas outside braces and brackets.
struct Instruction {
  std::string opcode;
  std::vector<std::string> operands;
};

std::vector<Instruction> instructions(std::string_view body) {
  std::vector<Instruction> out;
  std::istringstream lines{std::string(body)};
  for (std::string line; std::getline(lines, line);) {
    if (size_t comment = line.find("//"); comment != std::string::npos) line.resize(comment);
    const size_t semicolon = line.find(';');
    if (semicolon == std::string::npos) continue;  // a label, a brace, a directive's line
    line.resize(semicolon);
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    if (line[at] == '@') at = line.find_first_not_of(" \t", line.find_first_of(" \t", at));  // @%p1 ld.global…
    if (at == std::string::npos) continue;
    const size_t end = std::min(line.find_first_of(" \t", at), line.size());
    Instruction ins{line.substr(at, end - at), {}};
    int depth = 0;
    std::string operand;
    for (size_t i = end; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      if (c == ',' && depth == 0) {
        ins.operands.push_back(operand);
        operand.clear();
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        operand += c;
      }
    }
    if (!operand.empty()) ins.operands.push_back(operand);
    out.push_back(std::move(ins));
  }
  return out;
}

// The registers an operand names (%rd12, %r3, %f1; not %tid.x and the like).
std::vector<std::string> registers(const std::string& operand) {
  std::vector<std::string> out;
  for (size_t at = operand.find('%'); at != std::string::npos; at = operand.find('%', at + 1)) {
    size_t end = at + 1;
    while (end < operand.size() && std::isalpha(static_cast<unsigned char>(operand[end]))) ++end;
    const size_t digits = end;
    while (end < operand.size() && std::isdigit(static_cast<unsigned char>(operand[end]))) ++end;
    if (end > digits) out.push_back(operand.substr(at, end - at));
  }
  return out;
}

// The parameter `kernel`_param_N an operand names, or -1.
int parameter(const std::string& operand, const std::string& kernel) {
  const std::string prefix = kernel + "_param_";
  const size_t at = operand.find(prefix);
  return at == std::string::npos ? -1 : std::atoi(operand.c_str() + at + prefix.size());
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// Whether an instruction's first operand is a value it computes from the others (moves,
// conversions, arithmetic), not one it reads from memory or a unit that holds no address.
bool computes_from_operands(const std::string& opcode) {
  for (std::string_view data : {"ld.", "ldu.", "ldmatrix", "atom", "red.", "mma", "wmma", "tex", "suld", "shfl", "st.", "cp.", "bar", "bra", "ret", "call"})
    if (starts_with(opcode, data)) return false;
  return true;
}

using Origins = std::unordered_map<std::string, uint64_t>;  // register -> the parameters it derives from, one bit each

uint64_t origin_of(const std::string& operand, const Origins& origins) {
  uint64_t bits = 0;
  for (const std::string& r : registers(operand))
    if (auto it = origins.find(r); it != origins.end()) bits |= it->second;
  return bits;
}

// Each register's parameters, to a fixed point (a loop's address advances from itself).
Origins register_origins(const std::vector<Instruction>& body, const std::string& kernel) {
  Origins origins;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Instruction& ins : body) {
      if (ins.operands.empty()) continue;
      uint64_t bits = 0;
      if (starts_with(ins.opcode, "ld.param")) {
        const int p = ins.operands.size() > 1 ? parameter(ins.operands[1], kernel) : -1;
        if (p >= 0 && p < 64) bits = uint64_t(1) << p;
      } else if (computes_from_operands(ins.opcode)) {
        for (size_t i = 1; i < ins.operands.size(); ++i) bits |= origin_of(ins.operands[i], origins);
      }
      if (bits == 0) continue;
      for (const std::string& r : registers(ins.operands[0])) {
        uint64_t& held = origins[r];
        if ((held | bits) != held) held |= bits, changed = true;
      }
    }
  }
  return origins;
}

int single_parameter(uint64_t bits) {
  if (bits == 0 || (bits & (bits - 1)) != 0) return -1;
  int p = 0;
  while (!(bits & 1)) bits >>= 1, ++p;
  return p;
}

// The bytes a `cp.async…shared.global [dst], [src], SIZE(, src-size)` copies; a bulk copy (TMA)
// moves at least 16.
int64_t copy_bytes(const Instruction& ins) {
  const int64_t size = ins.operands.size() > 2 ? std::strtoll(ins.operands[2].c_str(), nullptr, 10) : 0;
  return ins.opcode.find(".bulk") != std::string::npos ? std::max<int64_t>(size, 16) : size;
}

}  // namespace

std::vector<GlobalLoad> global_loads(std::string_view ptx, const std::string& kernel) {
  const std::vector<Instruction> body = instructions(entry_body(ptx, kernel));
  const Origins origins = register_origins(body, kernel);
  std::vector<GlobalLoad> loads;
  for (const Instruction& ins : body) {
    if (starts_with(ins.opcode, "ld.global") && ins.operands.size() >= 2)
      loads.push_back({ld_bytes(ins.opcode), single_parameter(origin_of(ins.operands[1], origins))});
    else if (starts_with(ins.opcode, "cp.async") && ins.opcode.find(".shared") != std::string::npos &&
             ins.opcode.find(".global") != std::string::npos && ins.operands.size() >= 2)
      loads.push_back({copy_bytes(ins), single_parameter(origin_of(ins.operands[1], origins))});
  }
  return loads;
}

std::map<int64_t, int> global_load_widths(std::string_view ptx, const std::string& kernel) {
  std::map<int64_t, int> widths;
  for (const GlobalLoad& load : global_loads(ptx, kernel)) ++widths[load.bytes];
  return widths;
}

}  // namespace prism::backend::cuda
