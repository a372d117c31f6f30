// Calls a generated CPU library's prism_entry (engine/backend/cpu/abi.h) in this process with
// every tensor at its declared dtype, as the kernel runner's worker does: f32 tensors are handed
// over as they are, f16/bf16 ones as their 16 bits; outputs come back widened to f32.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/interp/half.h"
#include "engine/interp/tensor.h"

namespace prism::test {

// `inputs` hold f32 values (already representable at `input_dtypes`, as random_tensor makes
// them); `outputs` are allocated at `output_dtypes` with these shapes. Returns prism_entry's code.
inline int call_entry(const backend::cpu::LoadedLibrary& lib, const std::vector<const Tensor*>& inputs, const std::vector<DType>& input_dtypes,
                      std::vector<Tensor>& outputs, const std::vector<DType>& output_dtypes, int threads) {
  auto narrow = [](DType dtype, float x) { return dtype == DType::F16 ? f32_to_f16_bits(x) : f32_to_bf16_bits(x); };
  std::vector<std::vector<uint16_t>> narrow_in(inputs.size()), narrow_out(outputs.size());
  std::vector<const void*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_dtypes[i] == DType::F32) {
      ins.push_back(inputs[i]->data.data());
      continue;
    }
    for (float x : inputs[i]->data) narrow_in[i].push_back(narrow(input_dtypes[i], x));
    ins.push_back(narrow_in[i].data());
  }
  std::vector<void*> outs;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (output_dtypes[o] == DType::F32) {
      outs.push_back(outputs[o].data.data());
      continue;
    }
    narrow_out[o].assign(outputs[o].data.size(), 0);
    outs.push_back(narrow_out[o].data());
  }
  const int rc = lib.function<backend::cpu::EntryFn>(backend::cpu::kEntrySymbol)(ins.data(), outs.data(), threads);
  for (size_t o = 0; o < outputs.size(); ++o)
    if (output_dtypes[o] != DType::F32)
      for (size_t i = 0; i < narrow_out[o].size(); ++i)
        outputs[o].data[i] = output_dtypes[o] == DType::F16 ? f16_bits_to_f32(narrow_out[o][i]) : bf16_bits_to_f32(narrow_out[o][i]);
  return rc;
}

}  // namespace prism::test
