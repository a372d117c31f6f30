// Verification of a finished family (docs/design.md §3). Nothing is reported unless all of these hold:
//
//  0. fingerprint pre-filter (fingerprint.h): the family and the program over a finite field on
//     the same random inputs, at its own smaller instance (fingerprint.h); exact, so a mismatch rejects. A
//     family or program it cannot fingerprint (a zero denominator, a log) goes on to 1.
//  1. numeric pre-filter: the family, instantiated at a tiny size with distinct grid sizes and
//     loop range (symmetry breaking: g1=2, g2=3, F1=4, so a map that confuses two of them
//     changes the result), is simulated by sgraph::evaluate and compared with the reference
//     interpreter on the same random inputs. This exercises the real maps, accumulators, partial
//     axes and the combining kernel. Then on activations of std 100 and the floating-point edge
//     sets it must not overflow where the program does not (NumericCheck::overflows); its DAG
//     was already held to the program's stability there (NumericCheck::unstable).
//  2. proof: the family is translated to a term with symbolic sizes: every reduction that the
//     loop and/or a cross-block grid dim cut into pieces becomes the explicit split sum over a
//     reshape (sum over [f, K/f] with f = F1, g, or g*F1 — the partial sums the blocks and the
//     iterations compute); an rms the loop cuts becomes sqrt(split sum of squares / K). The
//     e-graph must put this term and the program's term in one class (ResidentEGraph::prove,
//     a fresh e-graph per proof). Every data-parallel grid dim g (one that cuts an index
//     class that is not reduced) is in the term too: the body runs on tiles with a leading grid
//     axis, each input cut by partition@a$g along its axis in that class or replicate$g'd when it
//     has none, and the output tiles are put back by combine@a; the axioms lift partition and
//     replicate out of the body until combine(partition(x)) cancels. With a combining kernel, the
//     block partials it reads are combined from kernel 0's tiles and cut again by its own grid
//     (the sum over the partial axis is written with kernel 0's tiles, as the split sum above).
// A family that passes 0 and 1 but not 2 is "unproved"; one that fails 0 or 1 is "rejected".
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/cancel.h"
#include "engine/egraph/equivalence.h"
#include "engine/interp/tensor.h"
#include "engine/search/check_dims.h"
#include "engine/search/dag.h"
#include "engine/search/plan.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

// The term of a family in `tg`: its DAG with each reduction v cut into split[v] pieces, computed
// on tiles with one leading grid axis per data-parallel grid dim (inputs partitioned or
// replicated), and the output tiles combined. With a combining kernel, the block partials it
// reads are combined and cut again by its own grid. Returns the root of output `output`.
eg::Id family_term(eg::TensorGraph& tg, const Dag& dag, const Family& family, size_t output = 0);
// Identifies a family's term (the proof cache's key).
std::string family_key(const Dag& dag, const Family& family);

class NumericCheck {
 public:
  // Runs the program on its check inputs; throws Error{Cancelled} when `cancel` fires.
  explicit NumericCheck(const Program& program, const CancelToken* cancel = nullptr);
  // Empty when the family matches the reference at the tiny instance; else why not.
  std::optional<std::string> mismatch(const sgraph::SGraph& family, const CancelToken* cancel) const;
  // The DAG alone (whole tensors, no parallelization) against the reference.
  bool dag_matches(const Dag& dag, const CancelToken* cancel) const;
  // The DAG at f32 on every floating-point edge set (interp/float_edges.h) against the program's
  // value there with exact sums: where the program is finite the DAG must be, and no further
  // from that value than four times the program's own error plus the output dtype's tolerance. A
  // form exact only over the reals (exp(S) * exp(-max S), a one-pass variance) that loses what
  // the program keeps is no equal kernel (docs/design.md, "Numerics"). Empty when it holds; else
  // why not, naming the set.
  std::optional<std::string> unstable(const Dag& dag, const CancelToken* cancel) const;
  const DimBindings& dims() const { return dims_; }
  // On activations of std 100 (and mask candidates beside them, ir/input_roles.h) and on every
  // floating-point edge set, at the program's dtypes: a family with NaN or an infinity where the
  // program is finite overflows where the program does not (exp(S) * exp(-max S) for a softmax's
  // exp(S - max S); a 16-bit partial past the range) and is no equal kernel. Empty when it does
  // not; else why, naming the set.
  std::optional<std::string> overflows(const sgraph::Instance& family, const CancelToken* cancel) const;

 private:
  const Program& program_;
  DimBindings dims_;
  std::map<std::string, Tensor> inputs_;
  std::vector<Tensor> reference_;  // every output
  // An input set where floats and the reals part, with the program's values on it.
  struct EdgeSet {
    std::string name;
    std::map<std::string, Tensor> inputs;
    std::vector<Tensor> declared;            // the program at its dtypes
    std::vector<Tensor> exact, wide;         // at f32, with exact sums and as kernels sum
    std::vector<double> wide_error;          // wide's error against exact, per output
  };
  // Made on first use: std 100 and the float edges, less those the program overflows inside.
  const std::vector<EdgeSet>& edge_sets(const CancelToken* cancel) const;
  mutable std::once_flag edges_once_;
  mutable Program wide_program_;
  mutable std::vector<EdgeSet> edge_sets_;
};

// Sizes for the numeric check: g1=2, g2=3, g3=2, g4=3, F1=4 (others 2).
DimBindings check_sizes(const sgraph::SGraph& family);

struct Proof {
  bool proved = false;
  std::string text;  // the terms and the e-graph's explanation, or why not proved
};

// Proofs against one program, cached by family term (family_key). Thread-safe; every proof runs
// in a fresh e-graph, so its verdict and text do not depend on the thread or the order.
class Prover {
 public:
  explicit Prover(const Program& program);
  Proof prove(const Dag& dag, const Family& family, const CancelToken* cancel);

 private:
  const Program& program_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Proof>> cache_;
};

}  // namespace prism::search
