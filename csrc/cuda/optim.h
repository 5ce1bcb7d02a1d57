// The fused optimizer steps on CUDA (csrc/cuda/optim_kernels.cu): a few launches per
// parameter group, each updating a table of tensors chunk by chunk (multi-tensor apply).
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace tp::cuda {

/// One parameter's dense arrays (params, grads, then the optimizer's state lists), all
/// of the same dtype, layout and element count, on one GPU.
struct OptimRow {
  void* data[5] = {};
  int64_t numel = 0;
  DType dtype = DType::Float32;
};

/// The step counts: host values (CPU step tensors, already incremented), or device
/// one-element float32/float64 tensors the launch increments first (fused / capturable).
struct OptimSteps {
  std::vector<double> host;
  std::vector<void*> device;
  DType device_dtype = DType::Float32;
};

/// Hyper-parameters of one step (Note [Fused optimizer kernels]).
struct OptimHyper {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0, beta1 = 0, beta2 = 0, eps = 0,
         lr_decay = 0;
  bool maximize = false, nesterov = false, first_step = false, amsgrad = false, decoupled = false;
};

enum class OptimKind { Sgd, Adam, Adagrad };

/// Runs one fused step of `kind` over rows on `device` (current stream).
void fused_optimizer_step(OptimKind kind, const std::vector<OptimRow>& rows, const OptimSteps& steps,
                          const OptimHyper& h, int device);

}  // namespace tp::cuda
