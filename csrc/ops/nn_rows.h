#pragma once
// Row reductions of the nn kernels. Each keeps 64 bytes of independent partial results (16
// float or 8 double lanes), a pattern the compiler vectorises without reassociating: GCC
// left `#pragma omp simd reduction` loops scalar inside these kernels' lambdas.
#include <algorithm>
#include <cstdint>
#include <limits>

namespace tp::rows {

/// sum of term(i) for i in [0, n).
template <class T, class F>
inline T sum(int64_t n, F term) {
  constexpr int W = int(64 / sizeof(T));
  T acc[W] = {};
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int j = 0; j < W; ++j) acc[j] += term(i + j);
  T s = 0;
  for (int j = 0; j < W; ++j) s += acc[j];
  for (; i < n; ++i) s += term(i);
  return s;
}

/// The largest of x[0..n) (-inf when empty; NaNs are not looked for).
template <class T>
inline T max(const T* x, int64_t n) {
  constexpr int W = int(64 / sizeof(T));
  T acc[W];
  std::fill(acc, acc + W, -std::numeric_limits<T>::infinity());
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int j = 0; j < W; ++j) acc[j] = acc[j] < x[i + j] ? x[i + j] : acc[j];
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < W; ++j) m = std::max(m, acc[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

}  // namespace tp::rows
