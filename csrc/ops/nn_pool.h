#pragma once
// Pooling geometry shared by the pooling ops (nn_pool.cpp) and their CPU loops
// (kernels/cpu/pool_kernel.cpp). Note [Pooling windows].
#include <cstdint>
#include <vector>

namespace tp::pool {

/// The windows of one spatial dim: output o reduces inputs begin[o] + j * step, j < count[o].
struct Window {
  std::vector<int64_t> begin, count;
  std::vector<double> pad_count;  // avg pooling: the window's size including padding
  int64_t step = 1;
};

/// A pooling's planes and windows; spatial arrays are padded in front to three dims.
struct PoolShape {
  int64_t nsp = 0, planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  Window w[3];
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
};

}  // namespace tp::pool
