// IEEE binary16 (f16) and bfloat16 storage: conversion from f32 with round-to-nearest-even,
// including subnormals, overflow to infinity, and NaN (kept quiet, sign preserved).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/ir/dtype.h"

namespace prism {

uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(uint16_t h);

// x rounded to the nearest value `dtype` can store (identity for f32).
float round_to(DType dtype, float x);
void round_all(DType dtype, float* data, size_t n);

}  // namespace prism
