#pragma once
// Row reductions of the nn kernels, written with GCC/Clang vector types (32-byte vectors,
// two accumulators) so they are vector code whatever the auto-vectoriser decides: it left
// `#pragma omp simd reduction` loops, and on some compilers lane-array loops, scalar. Also
// short row copies and column sums (per-channel sums of channels-last data). Included by
// baseline files and by the per-level kernel files, each getting its own copy (TP_CPU_NS).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/cpu_capability.h"
#include "core/parallel.h"

// A kernel file's copies are its level's (Note [CPU capability]: one-definition rule).
#ifdef TP_CPU_CAPABILITY
namespace tp::cpu::TP_CPU_NS::rows {
#else
namespace tp::rows {
#endif

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

/// Column sums of a (rows x C) matrix, e.g. per-channel sums of channels-last data:
/// add_row(r, acc) adds row r's terms into acc (k arrays of C), vector code over the columns.
/// Rows run in pieces on the thread budget, blocks of 64 rows summed apart before they join
/// their piece's sum; the pieces add up in order. out: k x C.
template <class T, class F>
void column_sums(int64_t rows, int64_t C, int64_t k, T* out, F add_row) {
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), rows / 256));
  std::vector<T> part(size_t(pieces * k * C), T(0));
  parallel_for(0, pieces, 1, [&](int64_t b, int64_t e) {
    std::vector<T> block(size_t(k * C));
    for (int64_t p = b; p < e; ++p) {
      T* acc = part.data() + p * k * C;
      for (int64_t r0 = rows * p / pieces, end = rows * (p + 1) / pieces; r0 < end; r0 += 64) {
        std::fill(block.begin(), block.end(), T(0));
        for (int64_t r = r0; r < std::min(end, r0 + 64); ++r) add_row(r, block.data());
        for (int64_t i = 0; i < k * C; ++i) acc[i] += block[size_t(i)];
      }
    }
  });
  std::fill_n(out, k * C, T(0));
  for (int64_t p = 0; p < pieces; ++p)
    for (int64_t i = 0; i < k * C; ++i) out[i] += part[size_t(p * k * C + i)];
}

}  // namespace tp::rows (or tp::cpu::TP_CPU_NS::rows)
