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

/// A value and the index it came from, ordered by the value alone.
template <class T>
struct Keyed {
  T v;
  int64_t i;
};

/// Sorts el[0..n) by value with `<` exactly as libstdc++'s std::sort does (introsort:
/// median-of-three quicksort down to 16-element pieces, heapsort past 2 log2(n) levels,
/// then insertion sort), so equal values, and NaNs, which compare false both ways, end up
/// in the same order as in PyTorch's CPU mode (Note [Index choice on ties]). Bounds checks
/// where std::sort relies on sentinels keep a NaN from walking off the ends.
template <class T>
TP_HD void sort_like_std(Keyed<T>* el, int64_t n) {
  auto less = [&](int64_t a, int64_t b) { return el[a].v < el[b].v; };
  auto swap = [&](int64_t a, int64_t b) {
    Keyed<T> t = el[a];
    el[a] = el[b];
    el[b] = t;
  };
  // heap of the piece at `base`: sift the hole at `hole` down to a leaf, then `value` up
  auto adjust_heap = [&](int64_t base, int64_t hole, int64_t len, Keyed<T> value) {
    int64_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
      child = 2 * (child + 1);
      if (el[base + child].v < el[base + child - 1].v) --child;
      el[base + hole] = el[base + child];
      hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
      child = 2 * (child + 1);
      el[base + hole] = el[base + child - 1];
      hole = child - 1;
    }
    int64_t parent = (hole - 1) / 2;
    while (hole > top && el[base + parent].v < value.v) {
      el[base + hole] = el[base + parent];
      hole = parent;
      parent = (hole - 1) / 2;
    }
    el[base + hole] = value;
  };
  auto heap_sort = [&](int64_t lo, int64_t hi) {
    int64_t len = hi - lo;
    for (int64_t parent = (len - 2) / 2; parent >= 0; --parent) adjust_heap(lo, parent, len, el[lo + parent]);
    for (int64_t last = hi - 1; last - lo > 0; --last) {
      Keyed<T> value = el[last];
      el[last] = el[lo];
      adjust_heap(lo, 0, last - lo, value);
    }
  };
  auto linear_insert = [&](int64_t i, int64_t lo) {
    Keyed<T> value = el[i];
    while (i > lo && value.v < el[i - 1].v) {
      el[i] = el[i - 1];
      --i;
    }
    el[i] = value;
  };
  auto insertion_sort = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo + 1; i < hi; ++i) {
      if (el[i].v < el[lo].v) {  // smaller than the first: goes first, whatever lies between
        Keyed<T> value = el[i];
        for (int64_t j = i; j > lo; --j) el[j] = el[j - 1];
        el[lo] = value;
      } else {
        linear_insert(i, lo);
      }
    }
  };
  constexpr int64_t kPiece = 16;
  if (n < 2) return;
  int64_t log2n = 0;
  while ((n >> (log2n + 1)) > 0) ++log2n;
  struct Range {
    int64_t lo, hi, depth;
  };
  Range stack[128];  // one entry per level: at most 2 log2(n) <= 126
  int top = 0;
  stack[top++] = {0, n, 2 * log2n};
  while (top > 0) {
    Range r = stack[--top];
    while (r.hi - r.lo > kPiece) {
      if (r.depth == 0) {
        heap_sort(r.lo, r.hi);
        break;
      }
      --r.depth;
      int64_t a = r.lo + 1, b = r.lo + (r.hi - r.lo) / 2, c = r.hi - 1;  // median of three to lo
      if (less(a, b)) {
        if (less(b, c)) swap(r.lo, b);
        else if (less(a, c)) swap(r.lo, c);
        else swap(r.lo, a);
      } else if (less(a, c)) {
        swap(r.lo, a);
      } else if (less(b, c)) {
        swap(r.lo, c);
      } else {
        swap(r.lo, b);
      }
      int64_t first = r.lo + 1, last = r.hi;
      while (true) {
        while (first < r.hi - 1 && less(first, r.lo)) ++first;
        --last;
        while (last > r.lo && less(r.lo, last)) --last;
        if (!(first < last)) break;
        swap(first, last);
        ++first;
      }
      stack[top++] = {first, r.hi, r.depth};  // pieces are independent: any order will do
      r.hi = first;
    }
  }
  if (n > kPiece) {
    insertion_sort(0, kPiece);
    for (int64_t i = kPiece; i < n; ++i) linear_insert(i, 0);
  } else {
    insertion_sort(0, n);
  }
}

/// PyTorch's CPU mode from el sorted by sort_like_std: the value of the longest run of
/// equal values (the first such run on ties; NaN equals nothing) and the index of the
/// run's last element.
template <class T>
TP_HD void mode_of_sorted(const Keyed<T>* el, int64_t n, T& value, int64_t& index) {
  int64_t best = 0, run = 0;
  for (int64_t i = 0; i < n; ++i) {
    ++run;
    if (i == n - 1 || el[i].v != el[i + 1].v) {
      if (run > best) {
        best = run;
        value = el[i].v;
        index = el[i].i;
      }
      run = 0;
    }
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
