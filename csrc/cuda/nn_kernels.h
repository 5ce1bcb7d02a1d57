// CUDA kernels behind softmax / log_softmax, cross entropy (softmax_kernels.cu) and
// layer / batch / group norm (norm_kernels.cu). The callers in csrc/ops/ check arguments
// and lay the data out; these see contiguous tensors on one device.
//
// Note [nn kernel dtypes]: x, y, grads of the input are of the input's dtype T (float,
// double, half, bfloat16); everything per row or per channel (weights, biases, means,
// 1/std, running statistics, weight and bias gradients, cross-entropy grads) is of T's
// accumulation dtype (Float64 for double, Float32 otherwise), in which the kernels compute.
#pragma once
#include "core/tensor_impl.h"

namespace tp::cuda {

/// softmax (log_softmax when `log`) of x viewed as (outer, n, inner) along n, into y.
void softmax_forward(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log);

/// The gradient of softmax (log_softmax) from its output y and grad g, into gx;
/// layout as softmax_forward.
void softmax_backward(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n,
                      int64_t inner, bool log);

/// loss[i] = lse[i] - x[i, t[i]] (0 where t[i] == ignore_index) for the rows of the
/// (N, C) logits x, lse[i] = logsumexp(x[i]); t is int64. Returns false (loss
/// unspecified) when a target is neither ignore_index nor in [0, C).
bool cross_entropy_forward(const Tensor& x, const Tensor& t, int64_t ignore_index, const Tensor& loss,
                           const Tensor& lse);

/// gx[i] = g[i] * (exp(x[i] - lse[i]) - onehot(t[i])) (0 for ignored rows); g and lse
/// (the forward's) have N elements. Returns false (gx unspecified) on an out-of-range
/// target, as cross_entropy_forward.
bool cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& t, int64_t ignore_index,
                            const Tensor& lse, const Tensor& gx);

/// Layer norm of `rows` rows of `len` elements: y = (x - mean) * rstd * w + b (w, b may
/// be undefined, else contiguous in x's dtype or the accumulation dtype: Note [Layer-norm
/// weights in their dtype]); mean and rstd (accumulation dtype) get `rows` values. With mean
/// undefined, RMS norm: no centring (Note [RMS norm as an uncentred layer norm],
/// csrc/ops/nn_norm.cpp).
void layer_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, int64_t rows,
                        int64_t len, const Tensor& y, const Tensor& mean, const Tensor& rstd);

/// layer_norm's gradients; any of gx, gw, gb may be undefined (not asked for). gw and gb
/// (x's dtype or the accumulation dtype; w as layer_norm_forward's) are column sums over the
/// rows formed in a fixed order (bitwise reproducible). With mean
/// undefined, RMS norm's (as layer_norm_forward).
void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& w, int64_t rows, int64_t len, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb);

/// Batch norm of x viewed as (A, C, L) over A and L per channel (NCHW: A = N, L = spatial;
/// channels last: A = N * spatial, L = 1). Training: batch statistics into mean / invstd,
/// running statistics (may be undefined) updated with momentum (unbiased variance);
/// otherwise mean / invstd from the running statistics.
void batch_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, int64_t A,
                        int64_t C, int64_t L, const Tensor& y, const Tensor& mean, const Tensor& invstd);

/// batch_norm's gradients (layout as batch_norm_forward); gx, gw, gb may be undefined.
void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                         const Tensor& w, bool training, int64_t A, int64_t C, int64_t L, const Tensor& gx,
                         const Tensor& gw, const Tensor& gb);

/// Group norm of a contiguous (N, C, L) x in G groups of C / G channels: mean and rstd are
/// (N, G); w and b (C values) may be undefined.
void group_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, int64_t N,
                        int64_t C, int64_t L, int64_t G, const Tensor& y, const Tensor& mean,
                        const Tensor& rstd);

}  // namespace tp::cuda
