// The e-graph core, in the style of egg: 32-bit ids indexing vectors, a union-find, hash-consing
// of canonical e-nodes, deferred rebuild with a deduplicated worklist, an e-class analysis plugged
// in through a small interface, an index from operator to e-classes, and a proof forest for
// explanations. It knows nothing about tensors: an e-node is an operator code with two small
// attributes (an axis and an interned payload whose meaning the language defines) and up to two
// children.
//
// Ids: every e-node ever added (and every distinct spelling of one, see add()) gets its own id.
// find(id) is its e-class. id_node(id) is the node as it was added, with the children it was
// given; explanations print terms from these, so a printed term is always one that was added.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism::eg {

using Id = uint32_t;
constexpr Id kNoId = 0xffffffffu;

struct ENode {
  uint8_t op = 0;
  uint8_t arity = 0;
  int16_t axis = 0;      // language-defined small attribute (an axis); 0 when unused
  uint32_t payload = 0;  // language-defined interned attribute; 0 when unused
  Id child[2] = {kNoId, kNoId};

  bool same_symbol(const ENode& o) const { return op == o.op && arity == o.arity && axis == o.axis && payload == o.payload; }
  bool operator==(const ENode& o) const = default;
};

struct ENodeHash {
  size_t operator()(const ENode& n) const {
    uint64_t h = uint64_t(n.op) | uint64_t(n.arity) << 8 | uint64_t(uint16_t(n.axis)) << 16 | uint64_t(n.payload) << 32;
    h ^= (uint64_t(n.child[0]) * 0x9e3779b97f4a7c15ull) ^ (uint64_t(n.child[1]) * 0xc2b2ae3d27d4eb4full);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return size_t(h ^ (h >> 32));
  }
};

class EGraph;

// Facts about e-classes (egg's Analysis). make() computes the data of a new class from its first
// node; merge() folds the data of `from` into `into` and says precisely which side changed:
// into_changed = the merged data differs from what `into` had, from_changed = it differs from
// what `from` had. A merge that must never happen (different shapes) throws before any state
// changes. update() recomputes a node's data after its children's data changed.
struct MergeResult {
  bool into_changed = false;
  bool from_changed = false;
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual void make(const EGraph& g, Id cls, const ENode& node) = 0;
  virtual MergeResult merge(Id into, Id from) = 0;
  // Folds what `node` implies into class `cls`; returns whether the class data changed.
  virtual bool update(const EGraph& g, Id cls, const ENode& node) = 0;
};

// Why two ids were joined: a rule (its index in the rule list the runner was given) or congruence.
struct Justification {
  enum Kind : uint8_t { None, Rule, Congruence, Given } kind = None;
  uint32_t rule = 0;
};

class EGraph {
 public:
  struct Member {
    ENode node;  // canonical (children are class roots as of the last rebuild)
    Id id;       // the id this node was added under
  };

  explicit EGraph(Analysis* analysis = nullptr) : analysis_(analysis) {}

  // Adds a node (children: any ids). Returns an id whose class holds the node. A node already
  // added with the same children returns the same id; one congruent to an existing node (same
  // symbol, children equal by class) gets a fresh id joined to it by congruence, so explanations
  // can show where it came from; neither adds an e-node.
  Id add(const ENode& node);
  // The class of a node if the e-graph already holds it (hash-cons lookup); never modifies.
  Id lookup(ENode node) const;

  // Joins two classes; returns false when they were already one. Call rebuild() before searching.
  bool merge(Id a, Id b, Justification why);
  void rebuild();
  bool clean() const { return pending_.empty(); }

  Id find(Id id) const {
    while (parent_[id] != id) id = parent_[id];
    return id;
  }
  Id find_compress(Id id);
  ENode canonical(ENode n) const;

  size_t num_ids() const { return parent_.size(); }
  size_t num_nodes() const { return num_nodes_; }  // distinct canonical e-nodes (after rebuild)
  size_t num_classes() const { return num_classes_; }
  size_t memory_bytes() const;
  uint64_t unions() const { return unions_; }

  const ENode& id_node(Id id) const { return id_node_[id]; }
  const std::vector<Member>& members(Id cls) const { return classes_[cls].nodes; }
  // Root classes holding at least one node with this op (valid after rebuild).
  const std::vector<Id>& classes_with_op(uint8_t op) const;
  std::vector<Id> roots() const;

  // The chain of joins between two ids of one class: (from, to, why) edges of the proof forest.
  struct ProofStep {
    Id from, to;
    Justification why;
  };
  std::vector<ProofStep> proof_path(Id a, Id b) const;

 private:
  struct EClass {
    std::vector<Member> nodes;
    std::vector<Member> parents;  // nodes that use this class as a child (possibly stale)
  };
  Id fresh(const ENode& as_added);
  void repair(Id cls);
  void join_proof(Id a, Id b, Justification why);

  Analysis* analysis_;
  std::vector<Id> parent_;
  std::vector<EClass> classes_;
  std::vector<ENode> id_node_;
  std::vector<Id> proof_parent_;
  std::vector<Justification> proof_why_;
  std::unordered_map<ENode, Id, ENodeHash> memo_;   // canonical node -> id it was added under
  std::unordered_map<ENode, Id, ENodeHash> exact_;  // node as added -> id
  std::vector<Id> touched_;                          // classes whose nodes need canonicalizing
  std::vector<Id> pending_;                          // classes whose parents need repair
  std::vector<std::pair<ENode, Id>> analysis_pending_;
  mutable std::vector<std::vector<Id>> by_op_;
  mutable bool by_op_dirty_ = true;
  size_t num_classes_ = 0;
  size_t num_nodes_ = 0;
  uint64_t unions_ = 0;
};

}  // namespace prism::eg
