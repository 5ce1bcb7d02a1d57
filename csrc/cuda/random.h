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

/// randperm: result (n elements of a dtype that holds 0 .. n-1) gets the stable argsort of
/// n Philox keys.
void randperm(const Tensor& result, const std::optional<Generator>& gen);

/// Kinds of the events in multinomial's probabilities.
constexpr int kProbabilityNegative = 1;  // an entry < 0 or NaN
constexpr int kProbabilityInfinite = 2;  // an entry +inf
constexpr int kProbabilityZeroSum = 3;   // a row of zeros

/// What a scan of multinomial's probabilities found.
struct ProbabilityIssues {
  int first_kind;  // the kind of the first event in row-major order, or 0
  bool bad_entry;  // an entry is negative, NaN or +inf
  bool zero_row;   // a row is all zeros
};
/// p: rows x n_categories contiguous float32 or float64 probabilities on a GPU.
ProbabilityIssues scan_probabilities(const Tensor& p, int64_t rows, int64_t n_categories);
/// multinomial's race keys p / Exp(1), shaped like the contiguous float32 or float64 p.
Tensor multinomial_keys(const Tensor& p, const std::optional<Generator>& gen);
/// multinomial with replacement: result (int64, rows x n_sample elements) from the rows'
/// contiguous float64 inclusive sums `cum`.
void multinomial_draws(const Tensor& cum, int64_t n_sample, const std::optional<Generator>& gen,
                       const Tensor& result);
/// poisson: out (contiguous, self's shape and floating dtype) from the rates self. Returns
/// false, writing nothing, when a rate is negative or NaN.
bool poisson(const Tensor& self, const Tensor& out, const std::optional<Generator>& gen);

/// Caps the grid of the Philox kernels at `blocks` (0: the default). A test hook: the
/// values must not change with it.
void set_philox_grid_limit(int blocks);

}  // namespace tp::cuda
