// Equivalence of two tensor programs: a numeric refutation with the reference interpreter, then a
// proof in the resident e-graph. The public types here are what Workspace::equivalent returns.
//
// A proof is claimed only when both terms land in one e-class of an e-graph grown by the sound
// axioms (axioms.cpp); "not proved" carries why saturation stopped; "refuted" carries bindings, a
// seed and the difference that the reference interpreter found.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/egraph/axioms.h"
#include "engine/egraph/from_program.h"
#include "engine/egraph/runner.h"
#include "engine/egraph/tensor_lang.h"
#include "engine/ir/program.h"

namespace prism {

struct EquivLimits {
  size_t node_limit = 200000;  // nodes this proof may add to the resident e-graph
  size_t iter_limit = 40;
  double time_limit_s = 5.0;
};

// Saturated, NodeLimit, IterLimit, TimeLimit, Cancelled; Counterexample: refuted numerically,
// no saturation ran; GoalReached: the proof was found before
// saturation (a proved result's usual reason).
using StopReason = eg::StopReason;
using eg::stop_reason_name;
using RuleStats = eg::RuleStats;

struct Counterexample {
  std::map<std::string, int64_t> bindings;
  uint64_t seed = 0;
  double max_abs_diff = 0;
  std::string detail;
};

// Both programs at their dtypes on seeded inputs and on the floating-point edge sets
// (interp/float_edges.h, every outlier pattern): what a proof over the reals does not say.
struct FloatCheck {
  bool ran = false;
  bool refuted = false;
  int inputs = 0;             // sets compared (refuted: up to and with the one that differs)
  std::string set;            // refuted: the set's name
  std::string detail;         // refuted: where and by how much, with the bindings
};

struct EquivResult {
  enum class Verdict { Proved, NotProved, Refuted } verdict = Verdict::NotProved;
  StopReason stop_reason = StopReason::Saturated;
  std::string explanation;                       // when proved: the printable chain of rewrites
  std::optional<Counterexample> counterexample;  // when refuted
  std::string a_text, b_text;                    // the two terms as printed
  std::string message;                           // why not proved, in words (limits, the node cap)
  // Proved or not proved: the check in floating point. A proof is over the reals; this says
  // whether the two also agree in floats (docs/design.md, "Numerics").
  FloatCheck floating;
  std::vector<std::string> reals_only_rules;     // proved: rules of the proof exact only over the reals
};
const char* verdict_name(EquivResult::Verdict v);  // "proved", "not proved", "refuted"

struct EGraphStats {
  size_t nodes = 0, classes = 0, memory_bytes = 0, node_cap = 0;
  bool cap_hit = false;
  std::string cap_message;
  size_t programs = 0;
  std::vector<RuleStats> rules;
  uint64_t terms_added = 0, terms_shared = 0;
};

// Evaluates two lowered programs (single output each) in f32 on random inputs for a few small
// bindings of their dims (2..12, chosen so every shape is a positive integer); returns a
// counterexample when they differ beyond tolerance. Throws Error{Cancelled}.
std::optional<Counterexample> find_counterexample(const Program& a, const Program& b, const CancelToken* cancel = nullptr,
                                                  int bindings_wanted = 3);

// `a` and `b` (lowered, single output, declared dtypes kept) on seeded inputs and the
// floating-point edge sets at one small binding: refuted where one is NaN or infinite and the
// other is not, or they differ by more than the dtype's tolerance relative to the output's
// magnitude (1e-4 at f32, 2e-2 with a 16-bit value). Throws Error{Cancelled}.
FloatCheck check_floating_point(const Program& a, const Program& b, const CancelToken* cancel = nullptr);

// Compiles `expr` as the body of a program with the parameters of `context` (the inline side of
// an equivalence) and lowers it. Names inside [ ] that are not dims of the context (split factors,
// `reshape(X, [n, F, d/F])`) become dims through an extra parameter that the expression never
// reads. Throws Error{InvalidArgument} with the compiler's messages.
Program compile_expression(const Program& context, const std::string& expr);

// The one resident e-graph of a workspace: programs are added as terms (sharing by hash-consing),
// proofs saturate it on demand. Thread-safe (one internal mutex).
class ResidentEGraph {
 public:
  explicit ResidentEGraph(size_t node_cap = 2000000);
  ~ResidentEGraph();

  // Adds (or replaces) a named program's term; keeps every class, only the root reference moves.
  void set_program(const std::string& name, const Program& lowered);
  void drop_program(const std::string& name);
  bool has_program(const std::string& name) const;

  // Numeric refutation, then a proof. `a`, `b`: lowered single-output programs.
  EquivResult equivalent(const Program& a, const Program& b, const EquivLimits& limits, const CancelToken* cancel = nullptr);
  // The proof alone (no numeric check): what the tests use to show a false identity is never proved.
  EquivResult prove(const Program& a, const Program& b, const EquivLimits& limits, const CancelToken* cancel = nullptr);
  // The same with side `a` built directly as a term (for the parallel ops partition / replicate /
  // combine, which IR programs do not have). `build_a` runs under the lock and returns its root.
  using TermBuilder = std::function<eg::Id(eg::TensorGraph&)>;
  EquivResult prove(const TermBuilder& build_a, const Program& b, const EquivLimits& limits, const CancelToken* cancel = nullptr);
  EGraphStats stats() const;

 private:
  struct State;
  mutable std::mutex mutex_;
  std::unique_ptr<State> state_;
};

}  // namespace prism
