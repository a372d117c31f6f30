// The sound axioms of the tensor term language (tensor_lang.h), as tables grouped by family
// (axioms_arithmetic.cpp, axioms_layout.cpp, axioms_reductions.cpp, axioms_grid.cpp; their order
// and the rules exact only over the reals in axioms.cpp). Guards read the e-class analysis of
// `tg`, so the rules belong to one TensorGraph.
#pragma once
#include <vector>

#include "engine/egraph/rewrite.h"
#include "engine/egraph/tensor_lang.h"

namespace prism::eg {

std::vector<Rewrite> tensor_axioms(TensorGraph& tg);

// A rule for proofs only: the search's expression e-graph (search/expression.cpp) leaves it out,
// so its enumeration never builds the forms it reaches; a seed carries those whole instead.
// sum-centred-square is one: enumerating every small DAG equal to a one-pass variance made a
// row variance's search run out of budget at five times the families (one_pass_variance.h
// seeds the form once).
bool proof_only(const Rewrite& rule);

// The IR ops some axiom writes on its right-hand side where its left-hand side has none: the only
// ops a rewrite can bring into a term. Any other op (tanh, erf, a comparison: an uninterpreted
// function to the axioms) is in an e-graph only where the term put it there.
const std::vector<Op>& ops_axioms_introduce();

}  // namespace prism::eg
