// A program cut at one matmul, so that a vendor matmul (a library kernel: OpenBLAS, cuBLAS) runs
// it and fused kernels run the rest (docs/search.md, "Library kernels"):
//
//   prologue  computes the matmul's left operand from the program's inputs (none when that
//             operand is an input, read through its view);
//   library   multiplies it by the right operand, an input read through its view (nn.Linear's
//             W[out, in] as W^T, in place);
//   epilogue  the program with the product as one more input (none when the product is the
//             program's output), and the prologue's output as another where it uses it too.
//
// Substituting the library matmul for the epilogue's extra input, and the prologue for the left
// operand, gives back the program as written: each part is searched (and proved) on its own.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace prism::search {

struct LibraryCut {
  int matmul = -1;                  // the value cut, in the program
  std::optional<Program> prologue;  // returns the left operand
  std::optional<Program> epilogue;  // reads the product as the input named `product` (and `left`
                                    // where a prologue computes it and the epilogue uses it)
  std::string product;
  // The library matmul's operands: a program input (`left` also: the prologue's output when
  // there is one) and the view each is read through (empty: as it is).
  std::string left, right;
  std::vector<int> left_view, right_view;
  std::string text;  // "matmul h = matmul(Y, W^T) at 4:7": for summaries and proofs
};

// Every cut of a single-output program whose product or left operand leaves work for a fused
// kernel (a matmul of two inputs that is the output is the eager baseline itself: not a cut).
std::vector<LibraryCut> library_cuts(const Program& program);

// The values `outputs` need, as a program of its own: values in `as_inputs` become inputs of the
// same name and type (after the program's own inputs that are used, in parameter order). A part
// of a split brings its sibling parts (one statement), unread where no output needs them.
Program extract_program(const Program& program, const std::vector<int>& outputs, const std::vector<int>& as_inputs,
                        const std::string& name);

}  // namespace prism::search
