// A GPU as a target: an H100's data sheet, or this machine's device described by its driver,
// with its streaming-read bandwidth measured (bandwidth.h).
#pragma once
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/target.h"

namespace prism::backend::cuda {

// An NVIDIA H100 SXM from its data sheet: what the cost model plans for when there is no GPU to ask.
TargetDescription cuda_h100_data();

// The GPU of this machine (device 0, driver.h's DeviceInfo): its SMs as cores, the opt-in shared
// memory per block as fast_memory_bytes, its compute capability as arch, its streaming-read
// bandwidth measured (bandwidth.h; the data sheet's when that fails); peaks from the data sheet
// for the H100 (SXM or PCIe) and H200, else the H100 SXM's, marked "assumed" in the model. Throws
// Error{Failed} saying why when there is no device.
TargetDescription describe_cuda_device();

}  // namespace prism::backend::cuda
