#include "engine/egraph/pattern.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace prism::eg {

namespace {

void skip_space(const std::string& s, size_t& pos) {
  while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
}

std::string read_name(const std::string& s, size_t& pos) {
  size_t start = pos;
  while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) ++pos;
  return s.substr(start, pos - start);
}

int index_of(std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return int(i);
  if (names.size() >= size_t(kMaxVars)) throw std::invalid_argument("pattern has too many variables");
  names.push_back(name);
  return int(names.size() - 1);
}

int find_name(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return int(i);
  return -1;
}

}  // namespace

Pattern::Pattern(const std::string& text, const OpResolver& ops) : text_(text) {
  size_t pos = 0;
  parse(text, pos, ops);
  skip_space(text, pos);
  if (pos != text.size()) throw std::invalid_argument("pattern '" + text + "': trailing text at " + std::to_string(pos));
  for (auto* slots : {&var_slot_, &axis_slot_, &payload_slot_}) slots->clear();
  for (size_t i = 0; i < vars_.size(); ++i) var_slot_.push_back(int(i));
  for (size_t i = 0; i < axes_.size(); ++i) axis_slot_.push_back(int(i));
  for (size_t i = 0; i < payloads_.size(); ++i) payload_slot_.push_back(int(i));
  compile();
}

Pattern::Attr Pattern::parse_attr(const std::string& s, size_t& pos, std::vector<std::string>& names) {
  Attr a;
  bool neg = pos < s.size() && s[pos] == '-';
  if (neg) ++pos;
  if (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    a.kind = Attr::Const;
    a.value = std::stoi(read_name(s, pos)) * (neg ? -1 : 1);
    return a;
  }
  std::string name = read_name(s, pos);
  if (name.empty()) throw std::invalid_argument("pattern '" + s + "': expected an attribute name at " + std::to_string(pos));
  a.kind = Attr::Var;
  a.var = index_of(names, name);
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '+' ? 1 : -1;
    ++pos;
    a.value = sign * std::stoi(read_name(s, pos));
  }
  return a;
}

int Pattern::parse(const std::string& s, size_t& pos, const OpResolver& ops) {
  skip_space(s, pos);
  if (pos >= s.size()) throw std::invalid_argument("pattern '" + s + "': unexpected end");
  Node n;
  if (s[pos] == '?') {
    ++pos;
    n.is_var = true;
    n.var = index_of(vars_, read_name(s, pos));
    nodes_.push_back(n);
    return int(nodes_.size() - 1);
  }
  if (s[pos] != '(') throw std::invalid_argument("pattern '" + s + "': expected '(' or '?' at " + std::to_string(pos));
  ++pos;
  std::string name = read_name(s, pos);
  uint8_t arity = 0;
  if (!ops(name, n.op, arity)) throw std::invalid_argument("pattern '" + s + "': unknown operator '" + name + "'");
  while (pos < s.size() && (s[pos] == '@' || s[pos] == '$')) {
    char c = s[pos++];
    if (c == '@') n.axis = parse_attr(s, pos, axes_);
    else n.payload = parse_attr(s, pos, payloads_);
  }
  std::vector<int> kids;
  for (;;) {
    skip_space(s, pos);
    if (pos < s.size() && s[pos] == ')') break;
    kids.push_back(parse(s, pos, ops));
  }
  ++pos;
  if (kids.size() != arity)
    throw std::invalid_argument("pattern '" + s + "': '" + name + "' takes " + std::to_string(arity) + " children");
  n.arity = arity;
  for (size_t i = 0; i < kids.size(); ++i) n.child[i] = kids[i];
  nodes_.push_back(n);
  return int(nodes_.size() - 1);
}

void Pattern::compile() {
  // Preorder over the tree; each Bind loads its node's children into fresh registers.
  program_.clear();
  std::vector<int> var_reg(vars_.size(), -1);
  std::vector<std::pair<int, int>> stack = {{int(nodes_.size() - 1), 0}};  // (node, register)
  registers_ = 1;
  while (!stack.empty()) {
    auto [ni, reg] = stack.back();
    stack.pop_back();
    const Node& n = nodes_[size_t(ni)];
    if (n.is_var) {
      if (var_reg[size_t(n.var)] < 0) var_reg[size_t(n.var)] = reg;
      else program_.push_back({true, reg, var_reg[size_t(n.var)], 0, 0});
      continue;
    }
    Instr in;
    in.reg = reg;
    in.node = ni;
    in.out = registers_;
    registers_ += n.arity;
    program_.push_back(in);
    for (int i = n.arity; i-- > 0;) stack.push_back({n.child[i], in.out + i});
  }
  // Compares read registers filled by earlier Binds only if they come after them: move every
  // Compare to the end, where all registers are loaded.
  std::stable_partition(program_.begin(), program_.end(), [](const Instr& i) { return !i.compare; });
  var_reg_ = var_reg;
}

int Pattern::var_index(const std::string& name) const { return find_name(vars_, name); }
int Pattern::axis_index(const std::string& name) const { return find_name(axes_, name); }
int Pattern::payload_index(const std::string& name) const { return find_name(payloads_, name); }

void Pattern::search(const EGraph& g, std::vector<Subst>& out, size_t limit) const {
  if (root_is_var()) {
    for (Id c : g.roots()) search_class(g, c, out, limit);
    return;
  }
  for (Id c : g.classes_with_op(root_op())) {
    if (out.size() >= limit) return;
    search_class(g, c, out, limit);
  }
}

void Pattern::search_class(const EGraph& g, Id cls, std::vector<Subst>& out, size_t limit) const {
  std::vector<Id> regs(size_t(registers_), kNoId);
  regs[0] = g.find(cls);
  Subst s;
  s.root = regs[0];
  std::vector<bool> ab(axes_.size(), false), pb(payloads_.size(), false);
  run(g, 0, regs, s, ab, pb, out, limit);
}

void Pattern::run(const EGraph& g, size_t pc, std::vector<Id>& regs, Subst& s, std::vector<bool>& axis_bound,
                  std::vector<bool>& pay_bound, std::vector<Subst>& out, size_t limit) const {
  if (out.size() >= limit) return;
  if (pc == program_.size()) {
    for (size_t v = 0; v < vars_.size(); ++v) s.var[v] = regs[size_t(var_reg_[v])];
    out.push_back(s);
    return;
  }
  const Instr& in = program_[pc];
  if (in.compare) {
    if (g.find(regs[size_t(in.reg)]) == g.find(regs[size_t(in.other)])) run(g, pc + 1, regs, s, axis_bound, pay_bound, out, limit);
    return;
  }
  const Node& pn = nodes_[size_t(in.node)];
  for (const EGraph::Member& m : g.members(g.find(regs[size_t(in.reg)]))) {
    const ENode& n = m.node;
    if (n.op != pn.op || n.arity != pn.arity) continue;
    bool bound_axis = false, bound_pay = false;
    if (pn.axis.kind == Attr::Const && n.axis != pn.axis.value) continue;
    if (pn.axis.kind == Attr::Var) {
      size_t v = size_t(pn.axis.var);
      if (axis_bound[v]) {
        if (n.axis != s.axis[v] + pn.axis.value) continue;
      } else {
        s.axis[v] = n.axis - pn.axis.value;
        axis_bound[v] = bound_axis = true;
      }
    }
    if (pn.payload.kind == Attr::Const && n.payload != uint32_t(pn.payload.value)) {
      if (bound_axis) axis_bound[size_t(pn.axis.var)] = false;
      continue;
    }
    if (pn.payload.kind == Attr::Var) {
      size_t v = size_t(pn.payload.var);
      if (pay_bound[v]) {
        if (n.payload != s.payload[v]) {
          if (bound_axis) axis_bound[size_t(pn.axis.var)] = false;
          continue;
        }
      } else {
        s.payload[v] = n.payload;
        pay_bound[v] = bound_pay = true;
      }
    }
    // Children as the node was added (same classes as the canonical ones), so explanations
    // print the spelling that matched.
    const ENode& raw = g.id_node(m.id);
    for (int i = 0; i < n.arity; ++i) regs[size_t(in.out + i)] = raw.child[i];
    if (pc == 0) s.root_node = m.id;
    run(g, pc + 1, regs, s, axis_bound, pay_bound, out, limit);
    if (bound_axis) axis_bound[size_t(pn.axis.var)] = false;
    if (bound_pay) pay_bound[size_t(pn.payload.var)] = false;
    if (out.size() >= limit) return;
  }
}

void Pattern::bind_names(const Pattern& lhs) {
  auto map = [](const std::vector<std::string>& names, auto lookup, std::vector<int>& slots, const std::string& what, const std::string& text) {
    slots.clear();
    for (const auto& n : names) {
      int i = lookup(n);
      if (i < 0) throw std::invalid_argument("right-hand side '" + text + "' uses " + what + n + " that the left-hand side does not bind");
      slots.push_back(i);
    }
  };
  map(vars_, [&](const std::string& n) { return lhs.var_index(n); }, var_slot_, "?", text_);
  map(axes_, [&](const std::string& n) { return lhs.axis_index(n); }, axis_slot_, "@", text_);
  map(payloads_, [&](const std::string& n) { return lhs.payload_index(n); }, payload_slot_, "$", text_);
}

Id Pattern::build(EGraph& g, int ni, const Subst& s) const {
  const Node& n = nodes_[size_t(ni)];
  if (n.is_var) return s.var[var_slot_[size_t(n.var)]];
  ENode e;
  e.op = n.op;
  e.arity = n.arity;
  if (n.axis.kind == Attr::Const) e.axis = int16_t(n.axis.value);
  if (n.axis.kind == Attr::Var) e.axis = int16_t(s.axis[axis_slot_[size_t(n.axis.var)]] + n.axis.value);
  if (n.payload.kind == Attr::Const) e.payload = uint32_t(n.payload.value);
  if (n.payload.kind == Attr::Var) e.payload = s.payload[payload_slot_[size_t(n.payload.var)]];
  for (int i = 0; i < n.arity; ++i) e.child[i] = build(g, n.child[i], s);
  return g.add(e);
}

Id Pattern::instantiate(EGraph& g, const Subst& s) const { return build(g, int(nodes_.size() - 1), s); }

}  // namespace prism::eg
