// The per-row and per-element rules of the order-statistic, scan and counting ops, shared
// by the CPU loops (order_stats.cpp, counting.cpp) and the CUDA kernels, so both give the
// same values and pick the same indices.
#pragma once
#include <math.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/macros.h"

namespace tp::order_math {

template <class T>
TP_HD bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

/// NaN ranks above every number.
template <class T>
TP_HD bool gt_or_nan(T a, T b) {
  return (is_nan(a) && !is_nan(b)) || a > b;
}

/// Whether cummax (IsMax) / cummin moves from `best` to the next element x: a tie moves
/// the index forward; a NaN sticks (each later NaN takes over).
template <bool IsMax, class T>
TP_HD bool cum_takes(T x, T best) {
  return is_nan(x) || (!is_nan(best) && (IsMax ? x >= best : x <= best));
}

/// Moves the k-th smallest of v[0..n) to v[k] (NaN largest), permuting ix alongside:
/// the median-of-three quickselect of Note [Index choice on ties].
template <class T>
TP_HD void quick_select(T* v, int64_t* ix, int64_t n, int64_t k) {
  auto swap = [&](int64_t i, int64_t j) {
    T t = v[i];
    v[i] = v[j];
    v[j] = t;
    int64_t u = ix[i];
    ix[i] = ix[j];
    ix[j] = u;
  };
  int64_t lo = 0, hi = n - 1;
  while (hi > lo) {
    if (hi == lo + 1) {
      if (gt_or_nan(v[lo], v[hi])) swap(lo, hi);
      return;
    }
    swap(lo + (hi - lo) / 2, lo + 1);  // median of three: v[lo + 1] <= v[lo] <= v[hi]
    if (gt_or_nan(v[lo + 1], v[hi])) swap(lo + 1, hi);
    if (gt_or_nan(v[lo], v[hi])) swap(lo, hi);
    if (gt_or_nan(v[lo + 1], v[lo])) swap(lo + 1, lo);
    int64_t i = lo + 1, j = hi;
    const T pivot = v[lo];
    while (true) {
      do ++i; while (gt_or_nan(pivot, v[i]));
      do --j; while (gt_or_nan(v[j], pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
}

/// log(exp(a) + exp(b)) without overflow; NaN propagates, -inf is the identity.
TP_HD inline double log_add_exp(double a, double b) {
  if (a != a || b != b) return std::numeric_limits<double>::quiet_NaN();
  double hi = a > b ? a : b, lo = a > b ? b : a;
  if (lo == -std::numeric_limits<double>::infinity() || hi == std::numeric_limits<double>::infinity())
    return hi;
  return hi + ::log1p(::exp(lo - hi));
}

/// quantile's interpolation between the two ranks around q * (m - 1).
enum class Interp { Linear, Lower, Higher, Midpoint, Nearest };

/// PyTorch's lerp, which is exact at both ends.
template <class T>
TP_HD T lerp_exact(T a, T b, T w) {
  return w < T(0.5) ? T(a + w * (b - a)) : T(b - (b - a) * (T(1) - w));
}

/// The q-quantile of sorted, NaN-free buf[0..m) (NaN when m == 0), computed in T as
/// PyTorch does. floor/ceil/nearbyint run in double, which is exact for float ranks too.
template <class T>
TP_HD T quantile_of_sorted(const T* buf, int64_t m, double q, Interp how) {
  if (m == 0) return std::numeric_limits<T>::quiet_NaN();
  T rank = T(q) * T(m - 1);
  T below = T(::floor(double(rank))), above = T(::ceil(double(rank)));
  switch (how) {
    case Interp::Lower: return buf[int64_t(below)];
    case Interp::Higher: return buf[int64_t(above)];
    case Interp::Nearest: return buf[int64_t(::nearbyint(double(rank)))];  // half to even
    case Interp::Midpoint: return lerp_exact(buf[int64_t(below)], buf[int64_t(above)], T(0.5));
    default: return lerp_exact(buf[int64_t(below)], buf[int64_t(above)], T(rank - below));
  }
}

/// histc's bin of e over [left, right] split in nbins bins of `width` (-1 outside the
/// range or NaN; the right edge belongs to the last bin). `rnd` rounds each step to the
/// input's storage precision (identity for float32/float64), as PyTorch's kernel does.
template <class T, class Round>
TP_HD int64_t histc_bin(T e, T left, T right, T width, T nbins, int64_t bins, Round rnd) {
  if (!(e >= left && e <= right)) return -1;
  auto pos = int64_t(rnd(rnd(rnd(e - left) * nbins) / width));
  return pos < bins - 1 ? pos : bins - 1;
}

}  // namespace tp::order_math
