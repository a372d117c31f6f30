// Patterns over e-nodes, written as s-expressions and compiled for e-matching.
//
//   ?x                      a pattern variable (an e-class)
//   (mul ?a ?b)             an operator with children
//   (sum@i ?x)              @ names the node's axis: a variable (i), a variable with an offset
//                           (i+1, i-1) or an integer (0)
//   (splitax@i$F ?x)        $ names the node's payload (a variable)
//
// A left-hand side compiles into a small program of Bind/Compare instructions (egg's machine):
// Bind walks the nodes of one class that have the right symbol and loads their children into
// registers; Compare checks that a repeated variable landed in one class. A right-hand side is
// instantiated bottom-up from a substitution.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/egraph/egraph.h"

namespace prism::eg {

// Resolves an operator name to its code and arity; false for an unknown name.
using OpResolver = std::function<bool(const std::string& name, uint8_t& op, uint8_t& arity)>;

constexpr int kMaxVars = 8;

struct Subst {
  Id root = kNoId;       // the matched class
  Id root_node = kNoId;  // the id of the matched e-node (for explanations)
  Id var[kMaxVars] = {};
  int axis[kMaxVars] = {};
  uint32_t payload[kMaxVars] = {};
};

class Pattern {
 public:
  Pattern() = default;
  Pattern(const std::string& text, const OpResolver& ops);  // throws std::invalid_argument

  const std::string& text() const { return text_; }
  uint8_t root_op() const { return nodes_.back().op; }
  bool root_is_var() const { return nodes_.back().is_var; }
  int var_index(const std::string& name) const;      // ?name; -1 if absent
  int axis_index(const std::string& name) const;     // @name
  int payload_index(const std::string& name) const;  // $name

  // Every match in the e-graph (which must be clean), appended to `out`.
  void search(const EGraph& g, std::vector<Subst>& out, size_t limit = SIZE_MAX) const;
  void search_class(const EGraph& g, Id cls, std::vector<Subst>& out, size_t limit = SIZE_MAX) const;
  // Adds the pattern's term under `s` (this pattern's variable names index `s`); returns its id.
  Id instantiate(EGraph& g, const Subst& s) const;
  // Maps this pattern's variable names onto the slots of `lhs` (used for right-hand sides).
  void bind_names(const Pattern& lhs);

 private:
  struct Attr {
    enum Kind : uint8_t { Any, Const, Var } kind = Any;
    int value = 0;  // the constant, or the offset added to the variable
    int var = -1;
  };
  struct Node {
    bool is_var = false;
    int var = -1;
    uint8_t op = 0, arity = 0;
    Attr axis, payload;
    int child[2] = {-1, -1};  // indices into nodes_
  };
  struct Instr {
    bool compare = false;
    int reg = 0;       // class register to read
    int other = 0;     // Compare: second register
    int node = 0;      // Bind: the pattern node
    int out = 0;       // Bind: first register for the children
  };
  int parse(const std::string& s, size_t& pos, const OpResolver& ops);
  Attr parse_attr(const std::string& s, size_t& pos, std::vector<std::string>& names);
  void compile();
  void run(const EGraph& g, size_t pc, std::vector<Id>& regs, Subst& s, std::vector<bool>& axis_bound,
           std::vector<bool>& pay_bound, std::vector<Subst>& out, size_t limit) const;
  Id build(EGraph& g, int node, const Subst& s) const;

  std::string text_;
  std::vector<Node> nodes_;  // children before parents; the root is last
  std::vector<std::string> vars_, axes_, payloads_;
  std::vector<int> var_slot_, axis_slot_, payload_slot_;  // name index -> Subst slot
  std::vector<Instr> program_;
  std::vector<int> var_reg_;  // the register each variable is first loaded into
  int registers_ = 1;
};

}  // namespace prism::eg
