// Complex elementary functions that also run on the GPU.
//
// Note [Complex math on the device]: on the host the complex transcendental functions are
// std::complex's (glibc's C99 Annex G implementations, which PyTorch's CPU results follow;
// Note [Complex layout and arithmetic]). std::complex's math is host code, so the CUDA
// kernels use these instead: the textbook formulas on real functions the device has, with
// Annex G's special cases (infinities, NaNs, signed zeros) spelt out as branches before
// them, Kahan's form of tanh (no cancellation for small |x|, no overflow for large |x|),
// log's real part through log1p near |z| = 1 and sqrt scaled against overflow. Where Annex
// G leaves a sign unspecified we give what glibc gives. Accuracy is a few ulp of each part,
// inside the op database's tolerances against the CPU's glibc results.
#pragma once
#include <cmath>

#include "core/complex.h"

namespace tp::cmath {

/// Beyond this x, exp(x) overflows (exp(x) * cos(y) may not).
template <class T> TP_HD constexpr T overflow_edge() { return sizeof(T) == 4 ? T(88) : T(709); }

template <class T> TP_HD inline Complex<T> exp(Complex<T> z) {
  const T x = z.re, y = z.im;
  if (y == T(0)) return {std::exp(x), y};  // keeps the zero's sign; NaN + i0 -> NaN + i0
  if (!std::isfinite(y)) {
    if (std::isinf(x)) {
      if (x > 0) return {x, y - y};  // +inf + i(inf|nan) -> inf + iNaN
      return {T(0), T(0)};           // -inf + i(inf|nan) -> 0 + i0
    }
    return {y - y, y - y};
  }
  // large x whose exp overflows while exp(x) * cos(y) may not: two half-size factors
  if (x > overflow_edge<T>()) {
    const T e = std::exp(x * T(0.5));
    return {e * std::cos(y) * e, e * std::sin(y) * e};
  }
  const T e = std::exp(x);
  return {e * std::cos(y), e * std::sin(y)};
}

template <class T> TP_HD inline Complex<T> log(Complex<T> z) {
  const T x = z.re, y = z.im;
  const T ax = std::fabs(x), ay = std::fabs(y);
  const T hi = ax > ay ? ax : ay, lo = ax > ay ? ay : ax;
  T re;
  if (hi > T(0.5) && hi < T(2) && std::isfinite(lo))  // near the unit circle: no cancellation
    re = T(0.5) * std::log1p((hi - T(1)) * (hi + T(1)) + lo * lo);
  else
    re = std::log(std::hypot(x, y));  // hypot(inf, nan) = inf, log(0) = -inf
  return {re, std::atan2(y, x)};
}

template <class T> TP_HD inline Complex<T> sqrt(Complex<T> z) {
  const T x = z.re, y = z.im;
  const T inf = T(INFINITY);
  if (x == T(0) && y == T(0)) return {T(0), y};
  if (std::isinf(y)) return {inf, y};
  if (std::isnan(x)) return {x, x};
  if (std::isinf(x)) {
    if (x > 0) return {x, std::isnan(y) ? y : std::copysign(T(0), y)};
    return {std::isnan(y) ? y : T(0), std::copysign(inf, y)};
  }
  if (std::isnan(y)) return {y, y};
  // |x| + hypot(x, y) overflows near the largest finite values: work on z / 4
  const T limit = sizeof(T) == 4 ? T(8.5e37) : T(4.4e307);
  T scale = T(1), a = x, b = y;
  if (std::fabs(a) >= limit || std::fabs(b) >= limit) {
    a *= T(0.25);
    b *= T(0.25);
    scale = T(2);
  }
  const T t = std::sqrt((std::fabs(a) + std::hypot(a, b)) * T(0.5));
  if (a >= T(0)) return {t * scale, b / (T(2) * t) * scale};
  return {std::fabs(b) / (T(2) * t) * scale, std::copysign(t, b) * scale};
}

template <class T> TP_HD inline Complex<T> sinh(Complex<T> z) {
  const T a = z.re, b = z.im;
  if (b == T(0)) return {std::sinh(a), b};
  if (a == T(0) && !std::isfinite(b)) return {a, b - b};
  if (!std::isfinite(b)) return {std::isinf(a) ? a : b - b, b - b};
  if (std::isnan(a)) return {a, a};
  if (std::fabs(a) > overflow_edge<T>()) {  // cosh a ~ |sinh a| = e^|a| / 2 = (e^|a|/2 / 2) e^|a|/2
    const T e = std::exp(std::fabs(a) * T(0.5)), h = T(0.5) * e;
    return {std::copysign(h, a) * std::cos(b) * e, h * std::sin(b) * e};
  }
  return {std::sinh(a) * std::cos(b), std::cosh(a) * std::sin(b)};
}

template <class T> TP_HD inline Complex<T> cosh(Complex<T> z) {
  const T a = z.re, b = z.im;
  if (b == T(0)) return {std::cosh(a), std::signbit(a) ? -b : b};
  if (a == T(0) && !std::isfinite(b)) return {b - b, a};
  if (!std::isfinite(b)) return {std::isinf(a) ? std::fabs(a) : b - b, b - b};
  if (std::isnan(a)) return {a, a};
  if (std::fabs(a) > overflow_edge<T>()) {
    const T e = std::exp(std::fabs(a) * T(0.5)), h = T(0.5) * e;
    return {h * std::cos(b) * e, std::copysign(h, a) * std::sin(b) * e};
  }
  return {std::cosh(a) * std::cos(b), std::sinh(a) * std::sin(b)};
}

/// sin(z) = -i sinh(iz), cos(z) = cosh(iz)
template <class T> TP_HD inline Complex<T> sin(Complex<T> z) {
  const Complex<T> s = sinh(Complex<T>(-z.im, z.re));
  return {s.im, -s.re};
}
template <class T> TP_HD inline Complex<T> cos(Complex<T> z) { return cosh(Complex<T>(-z.im, z.re)); }

template <class T> TP_HD inline Complex<T> tanh(Complex<T> z) {
  const T x = z.re, y = z.im;
  if (!std::isfinite(x)) {
    if (std::isnan(x)) return {x, y == T(0) ? y : x};
    const T im = std::isfinite(y) ? std::sin(y) * std::cos(y) : y;
    return {std::copysign(T(1), x), std::copysign(T(0), im)};
  }
  if (!std::isfinite(y)) return {x == T(0) ? x : y - y, y - y};
  // beyond this |x|, tanh's real part is +-1 and its imaginary part 4 sin y cos y e^{-2|x|}
  const T far = sizeof(T) == 4 ? T(9) : T(22);
  if (std::fabs(x) >= far) {
    const T e = std::exp(-std::fabs(x));
    return {std::copysign(T(1), x), T(4) * std::sin(y) * std::cos(y) * e * e};
  }
  const T t = std::tan(y), beta = T(1) + t * t, s = std::sinh(x), rho = std::sqrt(T(1) + s * s);
  const T den = T(1) + beta * s * s;
  return {beta * rho * s / den, t / den};
}

}  // namespace tp::cmath
