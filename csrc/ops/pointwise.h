// The shared driver of pointwise ops: TensorIterator + the device's loop for a functor.
#pragma once
#include "kernels/tensor_iterator.h"
#include "tensorplay/pointwise_kernels.h"

namespace tp {

/// Each backend's loop table: [functor][compute dtype] -> loop (nullptr: unsupported).
using PwLoopTable = Loop1d[int(PwKernel::kCount)][kNumDTypes];
PwLoopTable& pointwise_loops(DeviceType device);

/// Runs `kernel` over `inputs` into `out` (or a new tensor) and returns the result.
Tensor run_pointwise(PwKernel kernel, const IterConfig& cfg, OutArg out,
                     std::initializer_list<const Tensor*> inputs, const KernelParams& p);

/// A 0-dim CPU tensor holding `s`, marked as a wrapped number for type promotion.
Tensor wrapped_scalar(const Scalar& s);

/// nextafter's KernelParams::i0: 1 / 2 when the result is float16 / bfloat16 (computed in
/// float32, stepping by the narrow type's ulp), else 0.
int64_t nextafter_mode(const Tensor& self, const Tensor& other);

}  // namespace tp
