#pragma once
// Convolution geometry shared by the convolution ops (nn_conv.cpp) and their CPU loops
// (kernels/cpu/conv/conv_kernel.cpp). Note [Convolution as GEMM].
#include <cstdint>

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

}  // namespace tp::conv
