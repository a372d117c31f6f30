// NumPy .npy files (format versions 1.0, 2.0 and 3.0), C order only.
//  - read: '<f4' and '<f2' as themselves; '<f8' converted to f32 (rounded). The result's dtype is
//    F32 or F16.
//  - write: F16 as '<f2'; F32 and BF16 as '<f4' (NumPy has no bfloat16; bf16 values are exact in
//    f32). Version 1.0 header unless the header needs more room.
// Errors are prism::Error whose message starts with the path: NotFound when the file cannot be
// opened, InvalidArgument when it is not a supported .npy, Failed when writing fails.
#pragma once
#include <string>

#include "engine/interp/tensor.h"

namespace prism {

// `max_bytes`: a larger file is InvalidArgument before it is read (a FIFO or a device too).
Tensor read_npy(const std::string& path, size_t max_bytes = size_t(4) << 30);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace prism
