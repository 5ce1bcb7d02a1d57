#pragma once
// Row reductions of the nn kernels, written with GCC/Clang vector types (32-byte vectors,
// two accumulators) so they are vector code whatever the auto-vectoriser decides: it left
// `#pragma omp simd reduction` loops, and on some compilers lane-array loops, scalar.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tp::rows {

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
};
/// 32 bytes of T (float or double) as one vector value.
template <class T>
using Vec = typename VecOf<T>::type;
template <class T>
constexpr int kLanes = int(32 / sizeof(T));

template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}

template <class T>
inline Vec<T> splat(T x) {  // every lane listed: one broadcast instruction
  if constexpr (kLanes<T> == 8) return Vec<T>{x, x, x, x, x, x, x, x};
  else return Vec<T>{x, x, x, x};
}

template <class T>
inline T hsum(Vec<T> v) {
  T s = 0;
  for (int j = 0; j < kLanes<T>; ++j) s += v[j];
  return s;
}

/// dst[0..n) = src[0..n) for the short rows of small images: an inline loop (a memmove call
/// per row of ten elements costs more than the copy).
template <class T>
inline void copy_short(T* dst, const T* src, int64_t n) {
  if (n >= 64) {
    std::memcpy(dst, src, size_t(n) * sizeof(T));
    return;
  }
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<T>)
    for (; i + kLanes<T> <= n; i += kLanes<T>) store(dst + i, load(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

/// sum of term(i) for i in [0, n): term is called with a vector index loader `at`
/// (at(p) = the lanes p[i..]) in the body and with scalars in the tail, so one generic
/// lambda serves both: [&](auto at) { return at(g) * at(y); }.
template <class T, class F>
inline T sum(int64_t n, F term) {
  constexpr int W = kLanes<T>;
  Vec<T> a0 = splat<T>(0), a1 = splat<T>(0);
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 += term([&](const T* p) { return load(p + i); });
    a1 += term([&](const T* p) { return load(p + i + W); });
  }
  T s = hsum<T>(a0 + a1);
  for (; i < n; ++i) s += term([&](const T* p) { return p[i]; });
  return s;
}

/// The largest of x[0..n) (-inf when empty; NaNs are not looked for).
template <class T>
inline T max(const T* x, int64_t n) {
  constexpr int W = kLanes<T>;
  Vec<T> m = splat<T>(-std::numeric_limits<T>::infinity());
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    Vec<T> v = load(x + i);
    m = m < v ? v : m;
  }
  T r = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < W; ++j) r = std::max(r, m[j]);
  for (; i < n; ++i) r = std::max(r, x[i]);
  return r;
}

}  // namespace tp::rows
