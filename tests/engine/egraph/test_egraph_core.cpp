// The e-graph core on a toy language: random terms and unions, rebuild, then the congruence
// invariant against a naive closure, hash-cons canonicality, and proof paths.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "engine/egraph/egraph.h"
#include "engine/egraph/pattern.h"
#include "engine/egraph/runner.h"

using namespace prism::eg;

namespace {

// Leaf (op 0, payload = which), f (op 1, unary), g (op 2, binary).
ENode leaf(uint32_t k) { return ENode{0, 0, 0, k, {kNoId, kNoId}}; }
ENode f(Id a) { return ENode{1, 1, 0, 0, {a, kNoId}}; }
ENode g2(Id a, Id b) { return ENode{2, 2, 0, 0, {a, b}}; }

bool toy_ops(const std::string& name, uint8_t& op, uint8_t& arity) {
  if (name == "leaf") return op = 0, arity = 0, true;
  if (name == "f") return op = 1, arity = 1, true;
  if (name == "g") return op = 2, arity = 2, true;
  return false;
}

struct NaiveUF {
  std::vector<Id> p;
  Id find(Id x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
  }
  bool join(Id a, Id b) {
    a = find(a), b = find(b);
    if (a == b) return false;
    p[a] = b;
    return true;
  }
};

}  // namespace

TEST_CASE("e-graph: random terms and unions keep congruence closure and canonical hash-cons", "[egraph][core][fuzz]") {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    EGraph g;
    std::vector<Id> ids;
    std::vector<std::pair<Id, Id>> unions;
    auto pick = [&] { return ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)]; };
    for (uint32_t k = 0; k < 4; ++k) ids.push_back(g.add(leaf(k)));
    for (int round = 0; round < 6; ++round) {
      for (int i = 0; i < 40; ++i) ids.push_back(rng() % 2 ? g.add(f(pick())) : g.add(g2(pick(), pick())));
      for (int i = 0; i < 4; ++i) {
        Id a = pick(), b = pick();
        unions.push_back({a, b});
        g.merge(a, b, {Justification::Given, 0});
      }
      if (rng() % 2) g.rebuild();
    }
    g.rebuild();

    // Naive closure over every id: the given unions, then congruence until nothing changes.
    NaiveUF uf;
    for (Id i = 0; i < g.num_ids(); ++i) uf.p.push_back(i);
    for (auto [a, b] : unions) uf.join(a, b);
    bool changed = true;
    while (changed) {
      changed = false;
      std::map<std::tuple<int, uint32_t, Id, Id>, Id> seen;
      for (Id i = 0; i < g.num_ids(); ++i) {
        const ENode& n = g.id_node(i);
        auto key = std::make_tuple(int(n.op), n.payload, n.arity > 0 ? uf.find(n.child[0]) : kNoId, n.arity > 1 ? uf.find(n.child[1]) : kNoId);
        auto [it, fresh] = seen.emplace(key, i);
        if (!fresh && uf.join(it->second, i)) changed = true;
      }
    }
    for (Id a = 0; a < g.num_ids(); ++a)
      for (Id b = a + 1; b < g.num_ids(); b += 7) REQUIRE((uf.find(a) == uf.find(b)) == (g.find(a) == g.find(b)));

    // Hash-cons: every node of every class is canonical, found by lookup in its class, and unique.
    std::set<std::tuple<int, uint32_t, Id, Id>> distinct;
    size_t classes = 0;
    for (Id c : g.roots()) {
      ++classes;
      for (const auto& m : g.members(c)) {
        for (int i = 0; i < m.node.arity; ++i) REQUIRE(g.find(m.node.child[i]) == m.node.child[i]);
        REQUIRE(g.lookup(m.node) == c);
        REQUIRE(distinct.insert({m.node.op, m.node.payload, m.node.child[0], m.node.child[1]}).second);
      }
    }
    REQUIRE(distinct.size() == g.num_nodes());
    REQUIRE(classes == g.num_classes());
    for (Id i = 0; i < g.num_ids(); ++i) REQUIRE(g.lookup(g.id_node(i)) == g.find(i));

    // A proof path joins any two ids of one class, edge by edge within that class.
    for (int t = 0; t < 50; ++t) {
      Id a = pick(), b = pick();
      if (g.find(a) != g.find(b)) continue;
      auto path = g.proof_path(a, b);
      Id at = a;
      for (const auto& s : path) {
        REQUIRE(s.from == at);
        REQUIRE(g.find(s.to) == g.find(a));
        at = s.to;
      }
      REQUIRE(at == b);
    }
  }
}

TEST_CASE("e-graph: patterns match through classes and the runner reports why it stopped", "[egraph][core][pattern]") {
  EGraph g;
  Id a = g.add(leaf(0)), b = g.add(leaf(1));
  Id gab = g.add(g2(a, b));
  Id fa = g.add(f(a));
  g.merge(fa, b, {Justification::Given, 0});
  g.rebuild();
  Pattern p("(g ?x (f ?x))", toy_ops);
  std::vector<Subst> out;
  p.search(g, out);
  REQUIRE(out.size() == 1);
  REQUIRE(g.find(out[0].var[0]) == g.find(a));
  REQUIRE(g.find(out[0].root) == g.find(gab));
  REQUIRE_THROWS(Pattern("(h ?x)", toy_ops));
  REQUIRE_THROWS(Pattern("(g ?x)", toy_ops));

  // Commutativity saturates; f(x) => f(f(x)) never does and must stop on a limit, never "saturated".
  std::vector<Rewrite> comm = {Rewrite::make("g-comm", "(g ?x ?y)", "(g ?y ?x)", toy_ops)};
  Runner r1(&comm);
  RunReport rep = r1.run(g, RunLimits{1000, 50, 5.0});
  REQUIRE(rep.stop == StopReason::Saturated);
  REQUIRE(g.lookup(g2(b, a)) == g.find(gab));
  REQUIRE(r1.stats()[0].applications >= 1);

  std::vector<Rewrite> grow = {Rewrite::make("f-grow", "(f ?x)", "(f (g ?x ?x))", toy_ops)};
  EGraph h;
  h.add(f(h.add(leaf(0))));
  Runner r2(&grow);
  REQUIRE(r2.run(h, RunLimits{1000000, 8, 5.0}).stop == StopReason::IterLimit);
  REQUIRE(Runner(&grow).run(h, RunLimits{20, 1000, 5.0}).stop == StopReason::NodeLimit);
  prism::CancelToken cancel;
  cancel.cancel();
  REQUIRE(Runner(&grow).run(h, RunLimits{1000000, 1000, 5.0}, &cancel).stop == StopReason::Cancelled);
  REQUIRE(Runner(&grow).run(h, RunLimits{100000000, 100000, 0.05}).stop == StopReason::TimeLimit);
  REQUIRE(std::string(stop_reason_name(StopReason::IterLimit)) == "iteration limit");

  // With a subset of the rules active, the others never apply: g-comm alone saturates beside an
  // f-grow that would never stop; one flag per rule, or a logic_error.
  std::vector<Rewrite> both = {comm[0], grow[0]};
  EGraph k;
  const Id ka = k.add(leaf(0)), kb = k.add(leaf(1));
  k.add(g2(ka, kb));
  k.add(f(ka));
  Runner r3(&both);
  REQUIRE(r3.run(k, RunLimits{1000000, 50, 5.0}, nullptr, {}, {true, false}).stop == StopReason::Saturated);
  CHECK(r3.stats()[0].applications >= 1);
  CHECK(r3.stats()[1].matches == 0);
  REQUIRE_THROWS_AS(r3.run(k, RunLimits{}, nullptr, {}, {true}), std::logic_error);
}
