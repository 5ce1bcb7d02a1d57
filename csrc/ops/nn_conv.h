#pragma once
// Convolution geometry shared by the convolution kernels: nn_conv.cpp (the ops, GEMM paths)
// and nn_conv_depthwise.cpp (direct depthwise loops). Note [Convolution as GEMM].
#include <algorithm>
#include <cstdint>

#include "core/tensor_impl.h"

namespace tp::conv {

/// A plain convolution's geometry; spatial arrays are padded in front to three dims.
struct ConvShape {
  int64_t nsp = 0, n = 0, cin = 0, cout = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};

  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  int64_t k_numel() const { return k[0] * k[1] * k[2]; }
  bool pointwise() const {
    for (int i = 0; i < 3; ++i)
      if (k[i] != 1 || s[i] != 1 || p[i] != 0) return false;
    return true;
  }
  bool depthwise() const { return groups > 1 && groups == cin && cout == cin; }
};

/// Output columns ow in [lo, hi) (within [0, out)) read input column ow * s + off inside [0, in).
inline void valid_range(int64_t out, int64_t in, int64_t off, int64_t s, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = in - off > 0 ? (in - off + s - 1) / s : 0;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

/// Calls f(orow, base): for each output row (od, oh) whose input row (id, ih) for kernel
/// position (kd, kh, kw) exists, with the output row's offset and the input row's offset
/// plus kw's column shift (kw * d - p along dim 2).
template <class F>
inline void for_each_row(const ConvShape& g, int64_t kd, int64_t kh, int64_t kw, F f) {
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
      if (ih < 0 || ih >= g.in[1]) continue;
      f((od * g.out[1] + oh) * g.out[2], (id * g.in[1] + ih) * g.in[2] + kw * g.d[2] - g.p[2]);
    }
  }
}

// Direct convolutions (nn_conv_direct.cpp, Note [Direct convolution taps]). Tensors are
// contiguous (or, for depthwise ones, dense channels last), in the compute dtype
// (float32/float64 or an integer type); bias may be undefined; w is contiguous.

/// The most multiply-adds per output position (output channels x input channels x kernel
/// positions, per group) of a convolution that is not depthwise and runs directly. Measured
/// against im2col + GEMM on the 2-core dev machine (AVX2): the direct loops win below (LeNet's
/// 6->16 5x5 forward 0.85 vs 1.18 ms), GEMM above (16->32 3x3 on 28x28: 4.5 vs 4.2 ms).
constexpr int64_t kDirectMaxMacs = 2400;
/// The three products of a convolution (Note [Convolution as GEMM]).
enum class Pass { forward, input, weight };
/// Whether the direct loops run this pass of a convolution: depthwise ones, and small ones
/// with stride 1 (for the input gradient, padded at least half the kernel's reach).
bool direct_conv(const ConvShape& g, Pass pass);
/// y = conv(x, w) + bias. With `channels_last` (depthwise only), x and y are dense channels last.
void direct_forward(const ConvShape& g, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    bool channels_last);
/// gx = the transposed convolution of gy with w (the input gradient); layouts as direct_forward.
void direct_input(const ConvShape& g, const Tensor& gy, const Tensor& w, const Tensor& gx, bool channels_last);
/// gw = the weight gradient from gy and x; layouts as direct_forward.
void direct_weight(const ConvShape& g, const Tensor& gy, const Tensor& x, const Tensor& gw, bool channels_last);

}  // namespace tp::conv
