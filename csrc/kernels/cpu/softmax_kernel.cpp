// softmax / log_softmax forward and backward over a contiguous (outer, n, inner) block, and
// cross entropy's gradient rows. Compiled once per CPU capability level; nn_norm.cpp and
// nn_loss.cpp call them through softmax_stub, softmax_backward_stub and
// cross_entropy_backward_stub.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "kernels/functors/pointwise.h"
#include "ops/nn_rows.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

/// y[i] = exp(x[i] - shift), returning the sum of the y[i].
template <class T>
T exp_shifted(const T* x, T* y, int64_t n, T shift) {
  int64_t i = 0;
  T sum = 0;
#ifdef TP_VEC_LANES
  if constexpr (std::is_same_v<T, float>) {
    using namespace functors;
    alignas(64) float lanes[TP_VEC_LANES] = {};
    vec_f acc = vec_set1(0.f), sh = vec_set1(shift);
    for (; i + TP_VEC_LANES <= n; i += TP_VEC_LANES) {
      vec_f e = vmath::exp(vec_add(vec_load(x + i), vec_neg(sh)));
      vec_store(y + i, e);
      acc = vec_add(acc, e);
    }
    vec_store(lanes, acc);
    for (float v : lanes) sum += v;
  }
#endif
  for (; i < n; ++i) sum += (y[i] = std::exp(x[i] - shift));
  return sum;
}

/// softmax / log_softmax of a contiguous (outer, n, inner) tensor along n.
template <class T>
void softmax_loop(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        const T m = rows::max(xr, n);
        // A NaN in the row makes the sum NaN, hence every output NaN, as in PyTorch.
        T sum = exp_shifted(xr, yr, n, m);
        if (log) {
          const T shift = m + std::log(sum);
          for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - shift;
        } else {
          const T inv = T(1) / sum;
          for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
        }
      }
    });
    return;
  }
  parallel_for(0, outer, 1, [&](int64_t b, int64_t e) {
    std::vector<T> m(inner), s(inner);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * n * inner;
      T* yo = y + o * n * inner;
      std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const T v = xo[j * inner + i];
          m[i] = (v > m[i] || v != v) ? v : m[i];
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) s[i] += (yo[j * inner + i] = std::exp(xo[j * inner + i] - m[i]));
      for (int64_t i = 0; i < inner; ++i) s[i] = log ? m[i] + std::log(s[i]) : T(1) / s[i];
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          T& v = yo[j * inner + i];
          v = log ? xo[j * inner + i] - s[i] : v * s[i];
        }
    }
  });
}

/// softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g).
template <class T>
void softmax_backward_loop(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* gr = g + r * n;
        const T* yr = y + r * n;
        T* o = gx + r * n;
        if (log) {
          const T s = rows::sum<T>(n, [&](auto at) { return at(gr); });
          exp_shifted(yr, o, n, T(0));
          for (int64_t i = 0; i < n; ++i) o[i] = gr[i] - o[i] * s;
        } else {
          const T s = rows::sum<T>(n, [&](auto at) { return at(gr) * at(yr); });
          for (int64_t i = 0; i < n; ++i) o[i] = yr[i] * (gr[i] - s);
        }
      }
    });
    return;
  }
  parallel_for(0, outer, 1, [&](int64_t b, int64_t e) {
    std::vector<T> s(inner);
    for (int64_t o = b; o < e; ++o) {
      const int64_t base = o * n * inner;
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          s[i] += log ? g[k] : g[k] * y[k];
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          gx[k] = log ? g[k] - std::exp(y[k]) * s[i] : y[k] * (g[k] - s[i]);
        }
    }
  });
}

/// Per row i of the (n, c) softmax dx: scaled by g[i], less g[i] at the target t[i]; a row
/// whose target is ignore_index becomes zeros.
template <class T>
void cross_entropy_backward_loop(T* dx, const T* g, const int64_t* t, int64_t n, int64_t c, int64_t ignore_index) {
  parallel_for(0, n, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      T* drow = dx + i * c;
      const T gi = t[i] == ignore_index ? T(0) : g[i];
      for (int64_t j = 0; j < c; ++j) drow[j] *= gi;
      if (t[i] != ignore_index) drow[t[i]] -= gi;
    }
  });
}

void softmax_kernel(DType dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      softmax_loop(static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner, log);
  });
}

void softmax_backward_kernel(DType dt, const void* g, const void* y, void* gx, int64_t outer, int64_t n,
                             int64_t inner, bool log) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      softmax_backward_loop(static_cast<const T*>(g), static_cast<const T*>(y), static_cast<T*>(gx), outer, n,
                            inner, log);
  });
}

void cross_entropy_backward_kernel(DType dt, void* dx, const void* g, const int64_t* t, int64_t n, int64_t c,
                                   int64_t ignore_index) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      cross_entropy_backward_loop(static_cast<T*>(dx), static_cast<const T*>(g), t, n, c, ignore_index);
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(softmax_stub, &softmax_kernel);
TP_REGISTER_CPU_KERNEL(softmax_backward_stub, &softmax_backward_kernel);
TP_REGISTER_CPU_KERNEL(cross_entropy_backward_stub, &cross_entropy_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
