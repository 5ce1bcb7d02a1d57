#pragma once
// Row reductions of the nn kernels, written with GCC/Clang vector types (32-byte vectors,
// two accumulators) so they are vector code whatever the auto-vectoriser decides: it left
// `#pragma omp simd reduction` loops, and on some compilers lane-array loops, scalar.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

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
inline Vec<T> splat(T x) {
  return Vec<T>{} + x;  // the scalar operand is broadcast (one vbroadcast)
}

template <class T>
inline T hsum(Vec<T> v) {
  T s = 0;
  for (int j = 0; j < kLanes<T>; ++j) s += v[j];
  return s;
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
