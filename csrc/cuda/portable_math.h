// log, exp and sincospi built from correctly rounded operations only, so the CUDA samplers
// (random_samplers.h) and their host reference give identical bits (Note [Philox streams]).
// Each is accurate to a few ulps over the arguments the samplers pass; none is a general
// libm replacement (no NaN/negative/subnormal handling in log). Host code that includes
// this header must be compiled with -ffp-contract=off: the compiler may not fuse what is
// written as a separate multiply and add. Device code uses the _rn intrinsics, which nvcc
// never fuses.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/philox.h"

namespace tp::pmath {

// ---------------------------------------------------------------- rounded primitives
TP_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TP_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TP_HD float sub(float a, float b) { return add(a, -b); }
TP_HD double sub(double a, double b) { return add(a, -b); }
TP_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TP_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TP_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
TP_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TP_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
TP_HD double fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
TP_HD float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
TP_HD double sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
/// Round to the nearest integer, ties to even (exact).
TP_HD float rint(float a) {
#if defined(__CUDA_ARCH__)
  return ::rintf(a);
#else
  return std::nearbyint(a);
#endif
}
TP_HD double rint(double a) {
#if defined(__CUDA_ARCH__)
  return ::rint(a);
#else
  return std::nearbyint(a);
#endif
}

TP_HD double ceil(double a) {
#if defined(__CUDA_ARCH__)
  return ::ceil(a);
#else
  return std::ceil(a);
#endif
}
TP_HD double floor(double a) {
#if defined(__CUDA_ARCH__)
  return ::floor(a);
#else
  return std::floor(a);
#endif
}

TP_HD uint32_t bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}
TP_HD uint64_t bits(double x) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
#endif
}
TP_HD float float_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
TP_HD double double_from_bits(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(int64_t(u));
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}

/// Horner evaluation of c[0] + z c[1] + ... + z^(n-1) c[n-1] with fused steps.
template <class F, int N>
TP_HD F horner(F z, const F (&c)[N]) {
  F p = c[N - 1];
  for (int k = N - 2; k >= 0; --k) p = fma(p, z, c[k]);
  return p;
}

// ---------------------------------------------------------------- log
/// Natural log of a positive, finite, normal x: x = 2^e m with m in [sqrt(1/2), sqrt(2)),
/// log m = 2 atanh(s) with s = (m - 1) / (m + 1), a series in s^2 (|s| < 0.172).
TP_HD float log(float x) {
  const uint32_t ix = bits(x);
  int e = int(ix >> 23) - 127;
  uint32_t m = (ix & 0x007fffffu) | 0x3f800000u;
  if (m > 0x3fb504f3u) {  // m > sqrt(2): halve it
    m -= 0x00800000u;
    e += 1;
  }
  const float f = sub(float_from_bits(m), 1.0f);  // exact, in [sqrt(1/2) - 1, sqrt(2) - 1]
  // log1p(f) = f + f^2 P(f), P a degree-8 weighted least-squares fit (max error 0.75 ulp
  // in float arithmetic): no division, which costs a GPU more than the two extra terms.
  constexpr float c[] = {-0.49999988079071045f, 0.3333333730697632f, -0.2500157654285431f,
                         0.2000119835138321f,   -0.16608606278896332f, 0.1419624537229538f,
                         -0.13261467218399048f, 0.12822002172470093f, -0.07477458566427231f};
  const float log_m = fma(mul(f, f), horner(f, c), f);
  return fma(float(e), 0.693147182f, log_m);
}

TP_HD double log(double x) {
  const uint64_t ix = bits(x);
  int e = int(ix >> 52) - 1023;
  uint64_t m = (ix & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  if (m > 0x3ff6a09e667f3bcdull) {  // m > sqrt(2)
    m -= 0x0010000000000000ull;
    e += 1;
  }
  const double f = sub(double_from_bits(m), 1.0);
  const double s = div(f, add(2.0, f));
  const double z = mul(s, s);
  constexpr double c[] = {1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13,
                          1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
  const double log_m = mul(add(s, s), horner(z, c));
  // ln 2 split so that e * hi is exact
  return fma(double(e), 0.6931471803691238, fma(double(e), 1.9082149292705877e-10, log_m));
}

// ---------------------------------------------------------------- exp
/// 2^n for n in [-126, 127] (float) / [-1022, 1023] (double), by its bits.
TP_HD float pow2f(int n) { return float_from_bits(uint32_t(n + 127) << 23); }
TP_HD double pow2(int n) { return double_from_bits(uint64_t(n + 1023) << 52); }

/// e^x: x = n ln 2 + r with |r| <= ln(2) / 2, a Taylor polynomial for e^r, scaled by 2^n
/// in two steps (one rounding also for subnormal results).
TP_HD float exp(float x) {
  if (!(x < 88.7228394f)) return x != x ? x : INFINITY;
  if (x < -103.972084f) return 0.0f;
  const float n = rint(mul(x, 1.44269502f));
  const float r = fma(n, -3.19461833e-05f, fma(n, -0.693115234f, x));
  constexpr float c[] = {1.0f, 1.0f, 0.5f, 0.166666672f, 0.0416666679f, 0.00833333377f,
                         0.00138888892f, 0.000198412701f, 2.48015876e-05f};  // 1 / k!
  const float p = horner(r, c);
  const int ni = int(n), half = ni / 2;
  return mul(mul(p, pow2f(half)), pow2f(ni - half));
}

TP_HD double exp(double x) {
  if (!(x < 709.782712893384)) return x != x ? x : INFINITY;
  if (x < -745.1332191019412) return 0.0;
  const double n = rint(mul(x, 1.4426950408889634));
  const double r = fma(n, -1.9082149292705877e-10, fma(n, -0.6931471803691238, x));
  constexpr double c[] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720,
                          1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800,
                          1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
                          1.0 / 87178291200.0, 1.0 / 1307674368000.0};
  const double p = horner(r, c);
  const int ni = int(n), half = ni / 2;
  return mul(mul(p, pow2(half)), pow2(ni - half));
}

// ---------------------------------------------------------------- sincospi
/// sin(pi t) and cos(pi t) for |t| <= 2: t = n / 2 + r with |r| <= 1/4 (exact), Taylor
/// polynomials in r, then the quadrant n mod 4.
/// sin and cos of (r + q / 2) pi from s = sin(r pi), c = cos(r pi): quadrant q in 0..3
/// swaps and negates them (selects, not a branch: a GPU warp takes one path).
template <class F>
TP_HD void quadrant(int q, F s, F c, F* sin_out, F* cos_out) {
  const F a = (q & 1) ? c : s, b = (q & 1) ? s : c;
  *sin_out = (q & 2) ? -a : a;
  *cos_out = ((q + 1) & 2) ? -b : b;
}

TP_HD void sincospi(float t, float* sin_out, float* cos_out) {
  const float n = rint(add(t, t));
  const float r = fma(n, -0.5f, t);
  const float z = mul(r, r);
  constexpr float cs[] = {3.14159274f, -5.16771269f, 2.55016398f, -0.599264503f,
                          0.0821458846f, -0.00737043098f};  // (-1)^k pi^(2k+1) / (2k+1)!
  constexpr float cc[] = {1.0f, -4.93480206f, 4.05871201f, -1.33526278f, 0.235330626f,
                          -0.0258068908f, 0.0019295743f};  // (-1)^k pi^(2k) / (2k)!
  const float s = mul(r, horner(z, cs));
  const float c = horner(z, cc);
  quadrant(int(n) & 3, s, c, sin_out, cos_out);
}

TP_HD void sincospi(double t, double* sin_out, double* cos_out) {
  const double n = rint(add(t, t));
  const double r = fma(n, -0.5, t);
  const double z = mul(r, r);
  constexpr double cs[] = {3.141592653589793, -5.16771278004997, 2.5501640398773455,
                           -0.5992645293207921, 0.08214588661112823, -0.0073704309457143504,
                           0.00046630280576761255, -2.1915353447830217e-05,
                           7.952054001475513e-07, -2.2948428997269873e-08};
  constexpr double cc[] = {1.0, -4.934802200544679, 4.0587121264167685, -1.3352627688545895,
                           0.2353306303588932, -0.02580689139001406, 0.0019295743094039231,
                           -0.0001046381049248457, 4.303069587032947e-06,
                           -1.3878952462213771e-07, 3.604730797462501e-09};
  const double s = mul(r, horner(z, cs));
  const double c = horner(z, cc);
  quadrant(int(n) & 3, s, c, sin_out, cos_out);
}

}  // namespace tp::pmath
