// The CUDA side of the random ops (csrc/ops/random.cpp checks the arguments, shared with
// the CPU path, then calls these for CUDA tensors). Values follow Note [Philox streams].
#pragma once
#include <optional>
#include <tuple>

#include "core/generator.h"
#include "core/tensor_impl.h"

namespace tp::cuda {

void uniform_(const Tensor& self, double from, double to, const std::optional<Generator>& gen);
void normal_(const Tensor& self, double mean, double std, const std::optional<Generator>& gen);
void log_normal_(const Tensor& self, double mean, double std, const std::optional<Generator>& gen);
void exponential_(const Tensor& self, double lambda, const std::optional<Generator>& gen);
void cauchy_(const Tensor& self, double median, double sigma, const std::optional<Generator>& gen);
void geometric_(const Tensor& self, double p, const std::optional<Generator>& gen);
/// Integers from [base, base + range) (range 0: all 2^64 values, base = INT64_MIN).
void random_(const Tensor& self, int64_t base, uint64_t range, const std::optional<Generator>& gen);
void bernoulli_(const Tensor& self, double p, const std::optional<Generator>& gen);
/// p (floating, any device) broadcast to self's shape. Returns false, writing nothing, when
/// an element of p lies outside [0, 1] (the caller raises the CPU path's error).
bool bernoulli_(const Tensor& self, const Tensor& p, const std::optional<Generator>& gen);
/// The training pass of native_dropout: (output, bool mask), laid out like input.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          const std::optional<Generator>& gen);
Tensor native_dropout_backward(const Tensor& grad, const Tensor& mask, double scale);

/// Caps the grid of the Philox kernels at `blocks` (0: the default). A test hook: the
/// values must not change with it.
void set_philox_grid_limit(int blocks);

}  // namespace tp::cuda
