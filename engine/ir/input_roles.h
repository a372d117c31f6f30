// What each input of a program is, read off the program by the tuner's edge suite
// (tune/edge_suite.h) and the search's check on large activations (search/verify.h): a weight, an
// additive mask of scores, or an activation.
#pragma once
#include <vector>

#include "engine/ir/program.h"

namespace prism {

struct InputRoles {
  // Per input, in parameter order. A weight: a gain or bias (rank 0 or 1), or a 2-D matmul right
  // operand, read as it is or transposed (nn.Linear's W), also under casts (autocast's bf16(W))
  // or reshaped into it (a patch convolution's 4-D W as a linear's).
  // Large-magnitude sets leave weights as drawn: activations of std 100 are what users have,
  // weights of std 100 are not.
  std::vector<bool> weight;
  // The input's axis along which it is an additive mask: added to scores that a max reduces
  // along that axis (softmax(S + M), also under a scale or casts: a 16-bit softmax reduces
  // f32(S + M)), where its size is not 1; -1 elsewhere.
  std::vector<int> mask_axis;

  bool activation(size_t input) const { return !weight[input] && mask_axis[input] < 0; }
};

// `program` lowered (softmax as max, exp, sum).
InputRoles input_roles(const Program& program);

}  // namespace prism
