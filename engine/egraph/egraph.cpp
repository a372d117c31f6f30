#include "engine/egraph/egraph.h"

#include <algorithm>
#include <stdexcept>

namespace prism::eg {

Id EGraph::find_compress(Id id) {
  while (parent_[id] != id) {
    parent_[id] = parent_[parent_[id]];  // path halving
    id = parent_[id];
  }
  return id;
}

ENode EGraph::canonical(ENode n) const {
  for (int i = 0; i < n.arity; ++i) n.child[i] = find(n.child[i]);
  return n;
}

Id EGraph::fresh(const ENode& as_added) {
  Id id = Id(parent_.size());
  if (id == kNoId) throw std::length_error("e-graph id space exhausted");
  parent_.push_back(id);
  classes_.emplace_back();
  id_node_.push_back(as_added);
  proof_parent_.push_back(id);
  proof_why_.push_back({});
  return id;
}

Id EGraph::add(const ENode& node) {
  if (auto it = exact_.find(node); it != exact_.end()) return it->second;
  ENode c = canonical(node);
  if (auto it = memo_.find(c); it != memo_.end()) {
    // The same e-node spelled with other (equivalent) children: a new id, one class.
    Id x = fresh(node);
    parent_[x] = find(it->second);
    join_proof(x, it->second, {Justification::Congruence, 0});
    exact_.emplace(node, x);
    return x;
  }
  Id x = fresh(node);
  // The analysis first: a node it rejects (an ill-shaped term) leaves only an unused id behind.
  if (analysis_) analysis_->make(*this, x, c);
  classes_[x].nodes.push_back({c, x});
  for (int i = 0; i < c.arity; ++i)
    if (i == 0 || c.child[i] != c.child[0]) classes_[c.child[i]].parents.push_back({c, x});
  memo_.emplace(c, x);
  exact_.emplace(node, x);
  ++num_classes_;
  ++num_nodes_;
  by_op_dirty_ = true;
  return x;
}

Id EGraph::lookup(ENode node) const {
  for (int i = 0; i < node.arity; ++i) {
    if (node.child[i] >= parent_.size()) return kNoId;
    node.child[i] = find(node.child[i]);
  }
  auto it = memo_.find(node);
  return it == memo_.end() ? kNoId : find(it->second);
}

void EGraph::join_proof(Id a, Id b, Justification why) {
  // Make `a` the root of its proof tree (reverse the path to the old root), then hang it under b.
  Id x = a, p = proof_parent_[a];
  Justification w = proof_why_[a];
  proof_parent_[a] = a;
  while (p != x) {
    Id next = proof_parent_[p];
    Justification nw = proof_why_[p];
    proof_parent_[p] = x;
    proof_why_[p] = w;
    x = p;
    p = next;
    w = nw;
  }
  proof_parent_[a] = b;
  proof_why_[a] = why;
}

bool EGraph::merge(Id a, Id b, Justification why) {
  Id ra = find_compress(a), rb = find_compress(b);
  if (ra == rb) return false;
  EClass &ca = classes_[ra], &cb = classes_[rb];
  Id into = ra, from = rb;
  if (ca.nodes.size() + ca.parents.size() < cb.nodes.size() + cb.parents.size()) std::swap(into, from);
  MergeResult changed;
  if (analysis_) changed = analysis_->merge(into, from);  // throws (before any change) when forbidden
  join_proof(a, b, why);
  parent_[from] = into;
  ++unions_;
  --num_classes_;
  EClass &ci = classes_[into], &cf = classes_[from];
  ci.nodes.insert(ci.nodes.end(), cf.nodes.begin(), cf.nodes.end());
  ci.parents.insert(ci.parents.end(), cf.parents.begin(), cf.parents.end());
  std::vector<Member>().swap(cf.nodes);
  std::vector<Member>().swap(cf.parents);
  pending_.push_back(into);
  if (changed.into_changed || changed.from_changed)
    for (const Member& p : ci.parents) analysis_pending_.push_back({p.node, p.id});
  by_op_dirty_ = true;
  return true;
}

void EGraph::repair(Id cls) {
  std::vector<Member> parents = std::move(classes_[cls].parents);
  classes_[cls].parents.clear();
  for (const Member& p : parents)
    if (auto it = memo_.find(p.node); it != memo_.end()) memo_.erase(it);
  std::vector<Member> kept;
  kept.reserve(parents.size());
  for (const Member& p : parents) {
    ENode c = canonical(p.node);
    auto [it, inserted] = memo_.try_emplace(c, p.id);
    if (!inserted && find(it->second) != find(p.id)) merge(it->second, p.id, {Justification::Congruence, 0});
    kept.push_back({c, p.id});
    touched_.push_back(p.id);  // the class holding this parent now has a stale node
  }
  std::sort(kept.begin(), kept.end(), [](const Member& x, const Member& y) {
    return ENodeHash{}(x.node) < ENodeHash{}(y.node) || (ENodeHash{}(x.node) == ENodeHash{}(y.node) && x.id < y.id);
  });
  kept.erase(std::unique(kept.begin(), kept.end(), [](const Member& x, const Member& y) { return x.node == y.node; }), kept.end());
  auto& dst = classes_[find(cls)].parents;
  dst.insert(dst.end(), kept.begin(), kept.end());
}

void EGraph::rebuild() {
  std::vector<Id>& touched = touched_;
  while (!pending_.empty() || !analysis_pending_.empty()) {
    std::vector<Id> dirty;
    dirty.swap(pending_);
    for (Id& c : dirty) c = find_compress(c);
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    for (Id c : dirty) repair(find(c));
    touched.insert(touched.end(), dirty.begin(), dirty.end());

    std::vector<std::pair<ENode, Id>> work;
    work.swap(analysis_pending_);
    if (!analysis_) continue;
    for (const auto& [node, id] : work) {
      Id c = find_compress(id);
      if (analysis_->update(*this, c, canonical(node)))
        for (const Member& p : classes_[c].parents) analysis_pending_.push_back({p.node, p.id});
    }
  }
  // Canonicalize and deduplicate the nodes of every class that took part in a merge.
  for (Id& c : touched) c = find(c);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (Id c : touched) {
    auto& nodes = classes_[c].nodes;
    for (Member& m : nodes) m.node = canonical(m.node);
    std::sort(nodes.begin(), nodes.end(), [](const Member& x, const Member& y) {
      if (x.node.op != y.node.op) return x.node.op < y.node.op;
      size_t hx = ENodeHash{}(x.node), hy = ENodeHash{}(y.node);
      return hx != hy ? hx < hy : x.id < y.id;
    });
    size_t before = nodes.size();
    nodes.erase(std::unique(nodes.begin(), nodes.end(), [](const Member& x, const Member& y) { return x.node == y.node; }), nodes.end());
    num_nodes_ -= before - nodes.size();
  }
  touched.clear();
  // A parent shared by two merged classes can leave its older spelling in the memo; such keys
  // are never found (lookups canonicalize first) but cost memory, so sweep when they pile up.
  if (memo_.size() > 2 * num_nodes_ + 1024) {
    memo_.clear();
    for (Id c : roots())
      for (const Member& m : classes_[c].nodes) memo_.emplace(m.node, m.id);
  }
}

const std::vector<Id>& EGraph::classes_with_op(uint8_t op) const {
  if (by_op_dirty_) {
    for (auto& v : by_op_) v.clear();
    for (Id id = 0; id < parent_.size(); ++id) {
      if (parent_[id] != id) continue;
      for (const Member& m : classes_[id].nodes) {
        if (m.node.op >= by_op_.size()) by_op_.resize(m.node.op + 1);
        auto& v = by_op_[m.node.op];
        if (v.empty() || v.back() != id) v.push_back(id);
      }
    }
    by_op_dirty_ = false;
  }
  static const std::vector<Id> kEmpty;
  return op < by_op_.size() ? by_op_[op] : kEmpty;
}

std::vector<Id> EGraph::roots() const {
  std::vector<Id> out;
  for (Id id = 0; id < parent_.size(); ++id)
    if (parent_[id] == id && !classes_[id].nodes.empty()) out.push_back(id);
  return out;
}

size_t EGraph::memory_bytes() const {
  size_t bytes = parent_.capacity() * sizeof(Id) + id_node_.capacity() * sizeof(ENode) + proof_parent_.capacity() * sizeof(Id) +
                 proof_why_.capacity() * sizeof(Justification) + classes_.capacity() * sizeof(EClass);
  for (const EClass& c : classes_) bytes += (c.nodes.capacity() + c.parents.capacity()) * sizeof(Member);
  // unordered_map: one heap node per entry (key, value, next pointer, cached hash) plus buckets.
  bytes += (memo_.size() + exact_.size()) * (sizeof(ENode) + sizeof(Id) + 2 * sizeof(void*)) + (memo_.bucket_count() + exact_.bucket_count()) * sizeof(void*);
  return bytes;
}

std::vector<EGraph::ProofStep> EGraph::proof_path(Id a, Id b) const {
  std::vector<Id> up_a;
  for (Id x = a;; x = proof_parent_[x]) {
    up_a.push_back(x);
    if (proof_parent_[x] == x) break;
  }
  std::unordered_map<Id, size_t> pos;
  for (size_t i = 0; i < up_a.size(); ++i) pos[up_a[i]] = i;
  std::vector<Id> up_b;
  Id meet = kNoId;
  for (Id x = b;; x = proof_parent_[x]) {
    if (pos.count(x)) {
      meet = x;
      break;
    }
    up_b.push_back(x);
    if (proof_parent_[x] == x) break;
  }
  if (meet == kNoId) throw std::logic_error("proof_path: ids are not in one class");
  std::vector<ProofStep> steps;
  for (size_t i = 0; up_a[i] != meet; ++i) steps.push_back({up_a[i], proof_parent_[up_a[i]], proof_why_[up_a[i]]});
  for (size_t i = up_b.size(); i-- > 0;) steps.push_back({proof_parent_[up_b[i]], up_b[i], proof_why_[up_b[i]]});
  return steps;
}

}  // namespace prism::eg
