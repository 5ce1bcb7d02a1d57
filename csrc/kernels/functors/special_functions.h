// Special functions of tp.special and the gamma family (lgamma, digamma, polygamma,
// Hurwitz zeta, the incomplete gamma ratios, Bessel functions, the normal distribution's
// cdf and its inverse, erfcx). Every function works in double precision, whatever the
// tensor's dtype (float32 results are the double results rounded), and is TP_HD so the
// same code serves the CPU loops and the CUDA kernels.
//
// Note [Special function numerics]
// The methods are the textbook ones, chosen for double precision across the whole range:
//   digamma      recurrence up to x >= 10, then the asymptotic series in 1/x^2 (terms to
//                B14); reflection psi(1 - x) - pi cot(pi x) below 0, cot from the exact
//                fractional part
//   zeta(s, q)   Euler-Maclaurin: the first N terms directly (q + N >= 12), the integral,
//                half the next term and up to 13 Bernoulli corrections
//   polygamma    trigamma like digamma (recurrence to x >= 12, asymptotic series to B16,
//                reflection below 0); higher orders (-1)^(n+1) n! zeta(n + 1, x)
//   i0/i1(e)     power series for |x| <= 20, the large-argument asymptotic series above
//                (its smallest term is below 1e-17 there)
//   j0/j1        power series for |x| <= 4, Miller's backward recurrence normalised by
//                J0 + 2 sum J2k = 1 up to 25, Hankel's asymptotic expansion above
//   y0/y1        power series for x <= 4; up to 25 Neumann's series
//                Y0 = (2/pi)(ln(x/2) + gamma) J0 - (4/pi) sum (-1)^k J2k / k and its derivative
//                (Y1 = -Y0'), the J_n from the same backward recurrence; Hankel above
//   k0/k1        power series for x <= 1; above, the trapezoidal rule on
//                exp(x) K_nu(x) = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt (geometric
//                convergence; the step shrinks as 1/sqrt(x), about 20-40 nodes at any x)
//   airy_ai      Maclaurin series for |x| <= 1; K_1/3 through the same integral above; from
//                -1 to -10 Taylor steps (h <= 0.5) of y'' = x y from 0, stable where Ai
//                oscillates; the asymptotic expansion with its phase below -10
//   (the orthogonal polynomials are in special.h: Note [Orthogonal polynomial kernels])
//   erfcx        exp(x^2) erfc(x) with x^2 split into two doubles up to 10, the asymptotic
//                series of erfc above; 2 exp(x^2) - erfcx(-x) for negative x
//   ndtri        sqrt(2) erfinv(2p - 1) in [0.25, 0.75]; otherwise Halley steps on the
//                lower tail from Acklam's rational approximation, the residual taken in log
//                space (erfcx), so p down to the smallest subnormal keeps full precision
//   log_ndtr     log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, log1p(-erfc(x / sqrt 2) / 2)
//                above
//   igamma(c)    the series of P below x = a + 1, the continued fraction (modified Lentz) of
//                Q above; x^a e^-x / Gamma(a) through Stirling's correction and log1p(t) - t
//                for a >= 10 (no cancellation between a log x, x and lgamma(a)); Q for small
//                a and x from its own series, so Q keeps its relative precision when tiny;
//                above a = 1e6 Temme's uniform asymptotic expansion (two terms)
// Special values (poles, negative integers, +-inf, NaN, signed zeros) follow PyTorch's CPU
// kernels; tests/python/test_special.py checks them on a grid.
//
// The CPU loops are compiled once per capability level (Note [CPU capability]); these
// functions are too large to be always inlined, and a copy kept out of line must not be
// shared between levels (an AVX-512 copy would then serve the baseline level too): in a level's
// file they live in that level's namespace (inline, so callers need not name it).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cpu_capability.h"
#include "core/macros.h"
#include "kernels/functors/special_math.h"

namespace tp::functors::special {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {
#endif

constexpr double kPi = 3.14159265358979323846;
constexpr double kEulerGamma = 0.57721566490153286061;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrt2Pi = 2.50662827463100050242;
constexpr double kInvSqrtPi = 0.56418958354775628695;
constexpr double kEps = 2.220446049250313e-16;

static TP_HD inline double inf() { return std::numeric_limits<double>::infinity(); }
static TP_HD inline double nan() { return std::numeric_limits<double>::quiet_NaN(); }

// ------------------------------------------------------------------ gamma family
/// psi(x), the logarithmic derivative of Gamma.
static TP_HD inline double digamma(double x) {
  if (x != x) return x;
  if (x == 0) return std::copysign(inf(), -x);  // psi(+0) = -inf, psi(-0) = +inf
  if (x == inf()) return x;
  double acc = 0;
  if (x < 0) {
    if (x == -inf()) return nan();
    double frac = x - std::nearbyint(x);  // exact; 0 at the poles
    if (frac == 0) return nan();
    acc = -kPi / std::tan(kPi * frac);  // cot(pi x) = cot(pi frac)
    x = 1 - x;
  }
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  double z = 1 / (x * x);
  // sum_k B_2k / (2k x^2k) for k = 1..7
  double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return acc + std::log(x) - 0.5 / x - tail;
}

/// The Hurwitz zeta function sum_{k >= 0} (k + q)^-s (Riemann's at q = 1).
static TP_HD inline double zeta(double s, double q) {
  // the poles first, as PyTorch checks them (zeta(nan, 0) and zeta(1, nan) are inf)
  if (s == 1) return inf();
  if (s < 1) return nan();
  if (q <= 0) {
    if (q == std::floor(q)) return inf();  // a term hits a pole
    if (s != std::floor(s)) return nan();  // a negative base to a non-integer power
  }
  if (s != s || q != q) return nan();
  if (q == inf()) return nan();  // PyTorch's zeta gives NaN there (the limit is 0)
  if (s == inf()) return q > 1 ? nan() : q == 1 ? 1.0 : inf();  // PyTorch's values (q > 1: NaN)
  // B_2j / (2j)!, j = 1..13
  const double b[13] = {8.333333333333333e-02, -1.388888888888889e-03, 3.306878306878307e-05,
                        -8.267195767195768e-07, 2.08767569878681e-08, -5.284190138687493e-10,
                        1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                        -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19,
                        3.534707039629467e-21};
  // direct terms until the tail's base reaches max(12, s), where the Bernoulli corrections
  // shrink fast (their ratio is about ((s + 2j) / (2 pi a))^2)
  double sum = 0, a = q, start = std::fmax(12.0, s);
  if (q < -1e7) return nan();  // would take more than 1e7 direct terms
  while (a < start) {
    double t = std::pow(a, -s);
    sum += t;
    // past 0 the rest is below t (a + 1) / (s - 1): stop once that is negligible
    if (a > 0 && std::fabs(t) * std::fmax(1.0, (a + 1) / (s - 1)) <= kEps * 0.25 * std::fabs(sum)) return sum;
    a += 1;
  }
  double as = std::pow(a, -s);  // a^-s
  sum += std::pow(a, 1 - s) / (s - 1) + 0.5 * as;  // (a^(1-s) on its own: a^-s may underflow)
  // j-th correction: b_j * s (s+1) ... (s+2j-2) * a^(-s-2j+1)
  double rising = s, pw = as / a;
  for (int j = 0; j < 13; ++j) {
    double t = b[j] * rising * pw;
    sum += t;
    if (std::fabs(t) < kEps * 0.5 * std::fabs(sum)) break;
    rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
    pw /= a * a;
  }
  return sum;
}

/// psi'(x): recurrence up to x >= 12, then 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1) (to B_16);
/// reflection pi^2 / sin^2(pi x) - psi'(1 - x) below 0.
static TP_HD inline double trigamma(double x) {
  if (x != x || x == -inf()) return nan();
  double acc = 0;
  if (x < 0 && x != std::floor(x)) {
    double s = std::sin(kPi * (x - std::nearbyint(x)));
    acc = kPi * kPi / (s * s);
    return acc - trigamma(1 - x);
  }
  while (x < 12) {
    acc += 1 / (x * x);
    x += 1;
  }
  double ix = 1 / x, z = ix * ix;
  // B_2k for k = 1..8: 1/6, -1/30, 1/42, -1/30, 5/66, -691/2730, 7/6, -3617/510
  double tail = z * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * (5.0 / 66 -
                z * (691.0 / 2730 - z * (7.0 / 6 - z * (3617.0 / 510))))))));
  return acc + ix * (1 + 0.5 * ix + tail);
}

/// The n-th derivative of digamma.
static TP_HD inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (x != x) return x;
  if (n == 1) return trigamma(x);
  double fact = 1;
  for (int64_t k = 2; k <= n; ++k) fact *= double(k);
  double sign = (n % 2) ? 1.0 : -1.0;
  return sign * fact * zeta(double(n + 1), x);
}

/// log Gamma(1 + a) for |a| <= 0.5, without the cancellation of lgamma(1 + a) near 0.
static TP_HD inline double lgamma1p_small(double a) {
  // (-1)^k (zeta(k) - 1) / k terms, k = 2..31
  const double zm1[30] = {
      6.4493406684822644e-1, 2.0205690315959429e-1, 8.2323233711138192e-2, 3.6927755143369926e-2,
      1.734306198444914e-2, 8.3492773819228268e-3, 4.0773561979443394e-3, 2.0083928260822144e-3,
      9.9457512781808534e-4, 4.9418860411946456e-4, 2.460865533080483e-4, 1.2271334757848915e-4,
      6.1248135058704829e-5, 3.0588236307020494e-5, 1.5282259408651872e-5, 7.6371976378997623e-6,
      3.8172932649998399e-6, 1.9082127165539389e-6, 9.5396203387279611e-7, 4.7693298678780646e-7,
      2.3845050272773299e-7, 1.1921992596531107e-7, 5.960818905125948e-8, 2.980350351465228e-8,
      1.4901554828365041e-8, 7.4507117898354295e-9, 3.7253340247884571e-9, 1.862659723513049e-9,
      9.3132743241966818e-10, 4.6566290650337841e-10};
  double sum = 0, pw = -a;
  for (int k = 2; k <= 31; ++k) {
    pw *= -a;  // (-a)^k
    sum += zm1[k - 2] * pw / k;
  }
  return (1 - kEulerGamma) * a - std::log1p(a) + sum;
}

/// log(1 + t) - t, accurate for small t.
static TP_HD inline double log1pmx(double t) {
  if (std::fabs(t) > 0.25) return std::log1p(t) - t;
  // -t^2/2 + t^3/3 - ...
  double sum = 0, pw = t;
  for (int k = 2; k < 60; ++k) {
    pw *= -t;
    double term = pw / k;
    sum += term;
    if (std::fabs(term) < kEps * 0.5 * std::fabs(sum)) break;
  }
  return sum;
}

/// x^a e^-x / Gamma(a), the common factor of the incomplete gamma ratios.
static TP_HD inline double gamma_prefactor(double a, double x) {
  if (a < 10) return std::exp(a * std::log(x) - x - std::lgamma(a));
  // Gamma(a) = sqrt(2 pi / a) (a / e)^a e^mu(a), mu from Stirling's series
  double ia = 1 / a, z = ia * ia;
  double mu = ia * (1.0 / 12 - z * (1.0 / 360 - z * (1.0 / 1260 - z * (1.0 / 1680 - z * (1.0 / 1188 -
              z * (691.0 / 360360 - z * (1.0 / 156)))))));
  // a log(x / a) + a - x: through log1p(t) - t (t = (x - a) / a) near x = a, where the two
  // parts cancel; directly elsewhere (x / a then keeps its precision, 1 + t would not)
  double t = (x - a) / a;
  double e = std::fabs(t) < 0.5 ? a * log1pmx(t) : a * std::log(x / a) + (a - x);
  return std::sqrt(a / (2 * kPi)) * std::exp(e - mu);
}

/// P(a, x) by its power series (x < a + 1).
static TP_HD inline double igamma_series(double a, double x) {
  double term = 1, sum = 1;
  for (int k = 1; k < 1000000; ++k) {
    term *= x / (a + k);
    sum += term;
    // the rest is below term x / (a + k + 1 - x) (a geometric bound)
    if (term * x < kEps * 0.25 * sum * (a + k + 1 - x)) break;
  }
  return gamma_prefactor(a, x) / a * sum;
}

/// Q(a, x) by its continued fraction (x >= a + 1), modified Lentz.
static TP_HD inline double igammac_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEps) break;
  }
  return gamma_prefactor(a, x) * h;
}

/// Q(a, x) for small a and x (x <= 1.5, a <= 1.5): 1 - x^a / Gamma(a + 1) (1 + a T) with
/// T = sum_{k >= 1} (-x)^k / ((a + k) k!), the first part through expm1.
static TP_HD inline double igammac_small(double a, double x) {
  double lg = std::fabs(a) <= 0.5 ? lgamma1p_small(a) : std::lgamma(1 + a);
  double u = a * std::log(x) - lg;
  double t = 0, pw = 1;
  for (int k = 1; k < 200; ++k) {
    pw *= -x / k;
    double term = pw / (a + k);
    t += term;
    if (std::fabs(term) < kEps * 0.25 * std::fabs(t)) break;
  }
  return -std::expm1(u) - std::exp(u) * a * t;
}

static TP_HD inline double erfcx(double x);

/// P(a, x) (or Q(a, x) when `upper`) for large a (> 1e6) by Temme's uniform asymptotic
/// expansion: Q = erfc(y) / 2 + e^(-y^2) / sqrt(2 pi a) (C0(eta) + C1(eta) / a), y = eta
/// sqrt(a / 2), eta^2 / 2 = lambda - 1 - log(lambda), lambda = x / a (the next term is below
/// 1e-17 there). erfc is taken as erfcx times e^(-y^2), so tails keep their relative precision.
static TP_HD inline double igamma_temme(double a, double x, bool upper) {
  double mu = (x - a) / a;  // lambda - 1
  double half_eta2 = -(mu < -0.5 ? std::log(x / a) - mu : log1pmx(mu));  // eta^2 / 2 >= 0
  double eta = std::copysign(std::sqrt(2 * half_eta2), mu);
  double c0, c1;
  if (std::fabs(eta) < 0.3) {  // Taylor series in eta (the direct forms cancel near eta = 0)
    const double k0[16] = {-0.3333333333333333, 0.08333333333333333, -0.014814814814814815,
                           0.0011574074074074073, 0.0003527336860670194, -0.0001787551440329218,
                           3.919263178522438e-05, -2.185448510679992e-06, -1.85406221071516e-06,
                           8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09,
                           1.0261809784240309e-08, -4.382036018453353e-09, 9.14769958223679e-10,
                           -2.5514193994946248e-11};
    const double k1[14] = {-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
                           -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
                           -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
                           4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
                           1.1951628599778148e-08, -1.7543241719747647e-11};
    c0 = 0, c1 = 0;
    for (int k = 15; k >= 0; --k) c0 = c0 * eta + k0[k];
    for (int k = 13; k >= 0; --k) c1 = c1 * eta + k1[k];
  } else {
    c0 = 1 / mu - 1 / eta;
    c1 = 1 / (eta * eta * eta) - 1 / (mu * mu * mu) - 1 / (mu * mu) - 1 / (12 * mu);
  }
  double y = eta * std::sqrt(a / 2);
  double r = (c0 + c1 / a) / std::sqrt(2 * kPi * a);
  double e = std::exp(-half_eta2 * a);  // e^(-y^2)
  // the upper tail (y > 0) of Q, or of P (y < 0), directly; the other through 1 - it
  double q_tail = y >= 0 ? e * (0.5 * erfcx(y) + r) : 0;
  double p_tail = y < 0 ? e * (0.5 * erfcx(-y) - r) : 0;
  if (upper) return y >= 0 ? q_tail : 1 - p_tail;
  return y < 0 ? p_tail : 1 - q_tail;
}

/// The regularized lower incomplete gamma function P(a, x) (torch.igamma).
// The special cases come first, in PyTorch's order, so a NaN in one argument can still
// give 0 or 1 (igamma(nan, inf) = 1, as PyTorch's).
static TP_HD inline double igamma(double a, double x) {
  if (a < 0 || x < 0) return nan();
  if (a == 0) return x > 0 ? 1.0 : nan();
  if (x == 0) return 0;
  if (a == inf()) return x == inf() ? nan() : 0.0;
  if (x == inf()) return 1;
  if (a != a || x != x) return nan();
  if (a > 1e6) return igamma_temme(a, x, false);
  if (x < a + 1) return igamma_series(a, x);
  return 1 - igammac_fraction(a, x);
}

/// The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (torch.igammac).
static TP_HD inline double igammac(double a, double x) {
  if (a < 0 || x < 0) return nan();
  if (a == 0) return x > 0 ? 0.0 : nan();
  if (x == 0) return 1;
  if (a == inf()) return x == inf() ? nan() : 1.0;
  if (x == inf()) return 0;
  if (a != a || x != x) return nan();
  if (a > 1e6) return igamma_temme(a, x, true);
  if (x < a + 1) {
    double p = igamma_series(a, x);
    if (p > 0.75 && x <= 1.5 && a <= 1.5) return igammac_small(a, x);
    return 1 - p;
  }
  return igammac_fraction(a, x);
}

// ------------------------------------------------------------------ error function family
/// exp(x^2) erfc(x), the scaled complementary error function.
static TP_HD inline double erfcx(double x) {
  if (x != x) return x;
  if (x < 0) {
    if (x < -27) return inf();  // 2 exp(x^2) overflows from x < -26.63 on
    double hi = x * x, lo = std::fma(x, x, -hi);  // x^2 = hi + lo exactly
    return 2 * std::exp(hi) * std::exp(lo) - erfcx(-x);
  }
  if (x <= 10) {
    double hi = x * x, lo = std::fma(x, x, -hi);
    return std::exp(hi) * std::exp(lo) * std::erfc(x);
  }
  if (x == inf()) return 0;
  // erfc(x) ~ exp(-x^2) / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2x^2)^k
  double z = 1 / (2 * x * x), term = 1, sum = 1;
  for (int k = 1; k < 40; ++k) {
    term *= -(2 * k - 1) * z;
    sum += term;
    if (std::fabs(term) < kEps * 0.25) break;
  }
  return kInvSqrtPi / x * sum;
}

/// log of the standard normal cdf.
static TP_HD inline double log_ndtr(double x) {
  if (x != x) return x;
  if (x < -1) {
    double t = -x * kSqrtHalf;
    return std::log(erfcx(t) / 2) - x * x / 2;
  }
  if (x < 3) return std::log1p(-std::erfc(x * kSqrtHalf) / 2);
  if (x > 40) return -0.0;  // log1p(-Phi(-x)), Phi(-x) below the smallest subnormal
  // erfc(x / sqrt 2) = erfcx(x / sqrt 2) exp(-x^2 / 2), x^2 split exactly: the rounding of
  // x / sqrt 2 then barely matters (erfcx varies slowly)
  double hi = x * x, lo = std::fma(x, x, -hi);
  return std::log1p(-erfcx(x * kSqrtHalf) * std::exp(-hi / 2) * std::exp(-lo / 2) / 2);
}

/// The inverse of the standard normal cdf.
static TP_HD inline double ndtri(double p) {
  if (p != p || p < 0 || p > 1) return nan();
  if (p == 0) return -inf();
  if (p == 1) return inf();
  if (p >= 0.25 && p <= 0.75) return kSqrt2 * tp::functors::erfinv(2 * p - 1);  // 2p - 1 is exact here
  bool upper = p > 0.5;
  double q = upper ? 1 - p : p;  // exact for p >= 0.5
  // first guess: Acklam's rational approximations (relative error below 1.2e-9)
  double x;
  if (q < 0.02425) {
    double t = std::sqrt(-2 * std::log(q));
    x = (((((-7.784894002430293e-03 * t - 3.223964580411365e-01) * t - 2.400758277161838e+00) * t -
           2.549732539343734e+00) * t + 4.374664141464968e+00) * t + 2.938163982698783e+00) /
        ((((7.784695709041462e-03 * t + 3.224671290700398e-01) * t + 2.445134137142996e+00) * t +
          3.754408661907416e+00) * t + 1);
  } else {
    double t = q - 0.5, r = t * t;
    x = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r +
           1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * t /
        (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r +
           6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1);
  }
  // Halley steps on Phi(x) = q, the residual u = (Phi(x) - q) / phi(x) taken in log space:
  // Phi / phi = sqrt(pi / 2) erfcx(-x / sqrt 2), q / phi = sqrt(2 pi) exp(log q + x^2 / 2)
  double lq = std::log(q);
  for (int i = 0; i < 3; ++i) {
    double u = 1.2533141373155002512 * erfcx(-x * kSqrtHalf) - kSqrt2Pi * std::exp(lq + x * x / 2);
    double step = u / (1 + x * u / 2);
    x -= step;
    if (std::fabs(step) < 1e-13 * std::fabs(x)) break;  // the next step would be below 1e-30
  }
  return upper ? -x : x;
}

// ------------------------------------------------------------------ Bessel functions
/// I0(|x|) or I1(|x|) by the power series (|x| <= 20); `order` 0 or 1.
static TP_HD inline double bessel_i_series(double ax, int order) {
  double y = ax * ax / 4, term = 1, sum = 1;
  for (int k = 1; k < 500; ++k) {
    term *= y / (double(k) * double(k + order));
    sum += term;
    if (term < kEps * 0.25 * sum) break;
  }
  return order == 0 ? sum : sum * ax / 2;
}

/// exp(-|x|) I_order(|x|) by the asymptotic series (|x| > 20).
static TP_HD inline double bessel_ie_asymptotic(double ax, int order) {
  double mu = 4.0 * order * order, term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    double odd = 2 * k - 1;
    double next = term * (odd * odd - mu) / (8 * k * ax);
    if (std::fabs(next) > std::fabs(term)) break;
    term = next;
    sum += term;
    if (std::fabs(term) < kEps * 0.25 * std::fabs(sum)) break;
  }
  return sum / std::sqrt(2 * kPi * ax);
}

// PyTorch's i0 and i1 (exp(x) times a series in 1/x) give NaN at +-inf; so do these.
static TP_HD inline double i0(double x) {
  double ax = std::fabs(x);
  if (ax == inf()) return nan();
  if (ax <= 20) return bessel_i_series(ax, 0);
  return std::exp(ax) * bessel_ie_asymptotic(ax, 0);
}
static TP_HD inline double i0e(double x) {
  double ax = std::fabs(x);
  if (ax <= 20) return bessel_i_series(ax, 0) * std::exp(-ax);
  return bessel_ie_asymptotic(ax, 0);
}
static TP_HD inline double i1(double x) {
  double ax = std::fabs(x), r;
  if (ax == inf()) return nan();
  if (ax <= 20) r = bessel_i_series(ax, 1);
  else r = std::exp(ax) * bessel_ie_asymptotic(ax, 1);
  return x < 0 ? -r : r;  // i1(-0) is +0, as PyTorch's
}
static TP_HD inline double i1e(double x) {
  double ax = std::fabs(x), r;
  if (ax <= 20) r = bessel_i_series(ax, 1) * std::exp(-ax);
  else r = bessel_ie_asymptotic(ax, 1);
  return x < 0 ? -r : r;
}

/// J0(ax) and J1(ax) for 4 < ax <= 25 by Miller's backward recurrence.
static TP_HD inline void bessel_j_miller(double ax, double& j0, double& j1) {
  int n = 2 * int((ax + 45) / 2);
  double jp1 = 0, j = 1e-30, norm = 0, one = 0;
  for (int k = n; k > 0; --k) {
    double jm1 = (2.0 * k / ax) * j - jp1;  // J_{k-1}
    jp1 = j;
    j = jm1;
    if (k == 2) one = j;
    if ((k - 1) % 2 == 0 && k > 1) norm += 2 * j;
    if (std::fabs(j) > 1e250) {  // rescale (never reached in this range; kept for safety)
      j *= 1e-250, jp1 *= 1e-250, norm *= 1e-250, one *= 1e-250;
    }
  }
  norm += j;
  j0 = j / norm;
  j1 = one / norm;
}

/// Hankel's asymptotic P and Q for order nu at ax > 25.
static TP_HD inline void bessel_j_hankel(double ax, int order, double& p, double& q) {
  double mu = 4.0 * order * order, term = 1;
  p = 1, q = 0;
  for (int k = 1; k < 80; ++k) {
    double odd = 2 * k - 1;
    double next = term * (mu - odd * odd) / (k * 8 * ax);
    if (std::fabs(next) > std::fabs(term)) break;
    term = next;
    // a_k / x^k enters Q (k odd) or P (k even) with sign (-1)^floor(k / 2)
    double signed_term = ((k / 2) % 2) ? -term : term;
    if (k % 2) q += signed_term;
    else p += signed_term;
    if (std::fabs(term) < kEps * 0.1) break;
  }
}

static TP_HD inline double bessel_j0(double x) {
  double ax = std::fabs(x);
  if (ax <= 4) {
    double y = -x * x / 4, term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      term *= y / (double(k) * k);
      sum += term;
      if (std::fabs(term) < kEps * 0.1) break;
    }
    return sum;
  }
  if (ax <= 25) {
    double j0, j1;
    bessel_j_miller(ax, j0, j1);
    return j0;
  }
  double p, q;
  bessel_j_hankel(ax, 0, p, q);
  double s = std::sin(ax), c = std::cos(ax);  // cos(x - pi/4) = (c + s) / sqrt 2, ...
  return (p * (c + s) - q * (s - c)) / std::sqrt(kPi * ax);
}

static TP_HD inline double bessel_j1(double x) {
  double ax = std::fabs(x), r;
  if (ax <= 4) {
    double y = -x * x / 4, term = 1, sum = 1;
    for (int k = 1; k < 60; ++k) {
      term *= y / (double(k) * (k + 1));
      sum += term;
      if (std::fabs(term) < kEps * 0.1) break;
    }
    return x / 2 * sum;  // keeps the sign of -0
  }
  if (ax <= 25) {
    double j0;
    bessel_j_miller(ax, j0, r);
  } else {
    double p, q;
    bessel_j_hankel(ax, 1, p, q);
    double s = std::sin(ax), c = std::cos(ax);  // cos(x - 3pi/4) = (s - c) / sqrt 2, ...
    r = (p * (s - c) + q * (s + c)) / std::sqrt(kPi * ax);
  }
  return x < 0 ? -r : r;
}


// ------------------------------------------------------------------ Y0, Y1, K0, K1, Ai
/// exp(x) K_nu(x) for x > 0 by the trapezoidal rule on its integral (DLMF 10.32.9)
/// exp(x) K_nu(x) = int_0^inf exp(-2 x sinh^2(t/2)) cosh(nu t) dt. The integrand is entire
/// and decays doubly exponentially, so the rule converges geometrically in 1/h; the step
/// shrinks as 1/sqrt(x) with the integrand's width (the error then stays near exp(-70)).
/// sinh(t/2) and cosh(nu t) advance by the addition formulas (all terms positive: no
/// cancellation), one exp per node.
static TP_HD inline double bessel_k_scaled_integral(double x, double nu) {
  const double h = std::fmin(0.15, 0.5 / std::sqrt(x));
  const double sh = std::sinh(h / 2), ch = std::cosh(h / 2);
  const double snu = std::sinh(nu * h), cnu = std::cosh(nu * h);
  double s = 0, c = 1;      // sinh(t/2), cosh(t/2) at t = k h
  double ns = 0, nc = 1;    // sinh(nu t), cosh(nu t)
  double sum = 0.5;         // the node at t = 0, halved
  for (int k = 1; k < 4000; ++k) {
    double s2 = s * ch + c * sh, c2 = c * ch + s * sh;
    s = s2, c = c2;
    double ns2 = ns * cnu + nc * snu, nc2 = nc * cnu + ns * snu;
    ns = ns2, nc = nc2;
    double term = std::exp(-2 * (x * s) * s) * nc;
    sum += term;
    if (term < 1e-18 * sum) break;
  }
  return sum * h;
}

/// K0(x) or K1(x) (order 0 or 1) for 0 < x <= 1 by the power series (DLMF 10.31.1).
static TP_HD inline double bessel_k_series(double x, int order) {
  const double y = x * x / 4, lg = std::log(x / 2);
  double term = 1, isum = 1;
  if (order == 0) {  // -ln(x/2) I0(x) + sum_k psi(k + 1) y^k / (k!)^2
    double psi = -kEulerGamma, sum = psi;
    for (int k = 1; k < 100; ++k) {
      term *= y / (double(k) * k);
      psi += 1.0 / k;
      isum += term;
      sum += term * psi;
      if (term < kEps * 1e-2) break;
    }
    return sum - lg * isum;
  }
  // 1/x + ln(x/2) I1(x) - (x/4) sum_k (psi(k + 1) + psi(k + 2)) y^k / (k! (k + 1)!)
  double psi1 = -kEulerGamma, psi2 = 1 - kEulerGamma, sum = psi1 + psi2;
  for (int k = 1; k < 100; ++k) {
    term *= y / (double(k) * (k + 1));
    psi1 += 1.0 / k;
    psi2 += 1.0 / (k + 1);
    isum += term;
    sum += term * (psi1 + psi2);
    if (term < kEps * 1e-2) break;
  }
  return 1 / x + lg * (x / 2) * isum - (x / 4) * sum;
}

/// PyTorch's values: NaN below 0 (and at -inf), +inf at +-0, 0 at +inf.
static TP_HD inline double modified_bessel_k(double x, int order, bool scaled) {
  if (x != x || x < 0) return nan();
  if (x == 0) return inf();
  if (x == inf()) return 0;
  if (x <= 1) {
    double k = bessel_k_series(x, order);
    return scaled ? k * std::exp(x) : k;
  }
  double k = bessel_k_scaled_integral(x, order);
  return scaled ? k : k * std::exp(-x);
}

/// Y0(x) (order 0) or Y1(x) for x > 0 finite: the power series (DLMF 10.8.1) up to 4,
/// Neumann's series in J_2k (DLMF 10.23.3) and its derivative for Y1 up to 25, the J_n from
/// Miller's backward recurrence as in bessel_j_miller; Hankel's expansion above.
static TP_HD inline double bessel_y(double x, int order) {
  const double lg = std::log(x / 2) + kEulerGamma;
  if (x <= 4) {
    const double y = -x * x / 4;
    double term = 1, jsum = 1, h = 0;
    if (order == 0) {  // (2/pi) [L J0 - sum_k H_k (-y)^k ... ]: sum_k>=1 H_k y^k / (k!)^2 enters with -
      double sum = 0;
      for (int k = 1; k < 60; ++k) {
        term *= y / (double(k) * k);
        h += 1.0 / k;
        jsum += term;
        sum += term * h;
        if (std::fabs(term) < kEps * 1e-2) break;
      }
      return (2 / kPi) * (lg * jsum - sum);
    }
    // -2/(pi x) + (2/pi) ln(x/2) J1 - (x/(2 pi)) sum_k (psi(k+1) + psi(k+2)) y^k / (k!(k+1)!)
    double psi1 = -kEulerGamma, psi2 = 1 - kEulerGamma, sum = psi1 + psi2;
    for (int k = 1; k < 60; ++k) {
      term *= y / (double(k) * (k + 1));
      psi1 += 1.0 / k;
      psi2 += 1.0 / (k + 1);
      jsum += term;
      sum += term * (psi1 + psi2);
      if (std::fabs(term) < kEps * 1e-2) break;
    }
    const double j1 = x / 2 * jsum;
    return -2 / (kPi * x) + (2 / kPi) * (lg - kEulerGamma) * j1 - x / (2 * kPi) * sum;
  }
  if (x <= 25) {
    // backward from J_n: norm = J0 + 2 sum J_2k, s0 = sum_k (-1)^k J_2k / k,
    // s1 = sum_k (-1)^k (J_2k-1 - J_2k+1) / k = sum_j c_j J_2j+1 with
    // c_j = (-1)^(j+1) (1/(j+1) + 1/j (j >= 1))
    int n = 2 * int((x + 45) / 2);
    double jp1 = 0, j = 1e-30, norm = 0, s0 = 0, s1 = 0, j1 = 0;
    for (int k = n; k > 0; --k) {
      double jm1 = (2.0 * k / x) * j - jp1;  // J_{k-1}
      jp1 = j;
      j = jm1;
      const int m = k - 1;
      if (m % 2 == 0) {
        if (m > 0) {
          norm += 2 * j;
          s0 += ((m / 2) % 2 ? -j : j) / (m / 2);
        }
      } else {
        const int jj = m / 2;
        double c = 1.0 / (jj + 1) + (jj >= 1 ? 1.0 / jj : 0.0);
        s1 += (jj % 2 ? c : -c) * j;
        if (m == 1) j1 = j;
      }
    }
    norm += j;
    const double j0 = j / norm;
    if (order == 0) return (2 / kPi) * (lg * j0 - 2 * s0 / norm);
    return (2 / kPi) * (-j0 / x + lg * (j1 / norm) + s1 / norm);
  }
  double p, q;
  bessel_j_hankel(x, order, p, q);
  const double s = std::sin(x), c = std::cos(x);
  // Y = sqrt(2 / (pi x)) (P sin chi + Q cos chi), chi = x - pi/4 (order 0) or x - 3 pi/4
  if (order == 0) return (p * (s - c) + q * (s + c)) / std::sqrt(kPi * x);
  return (q * (s - c) - p * (s + c)) / std::sqrt(kPi * x);
}

static TP_HD inline double modified_bessel_k0(double x) { return modified_bessel_k(x, 0, false); }
static TP_HD inline double modified_bessel_k1(double x) { return modified_bessel_k(x, 1, false); }
static TP_HD inline double scaled_modified_bessel_k0(double x) { return modified_bessel_k(x, 0, true); }
static TP_HD inline double scaled_modified_bessel_k1(double x) { return modified_bessel_k(x, 1, true); }

/// PyTorch's values: NaN below 0 and at +-inf, -inf at +-0.
static TP_HD inline double bessel_y0(double x) {
  if (x != x || x < 0 || x == inf()) return nan();
  if (x == 0) return -inf();
  return bessel_y(x, 0);
}
static TP_HD inline double bessel_y1(double x) {
  if (x != x || x < 0 || x == inf()) return nan();
  if (x == 0) return -inf();
  return bessel_y(x, 1);
}

/// The Airy function Ai: its Maclaurin series for |x| <= 1 (DLMF 9.4.1); above,
/// (1/pi) sqrt(x/3) K_1/3(2/3 x^3/2) (DLMF 9.6.1) through bessel_k_scaled_integral; from -10
/// to -1, Taylor steps of the Airy equation y'' = x y from 0 (bounded oscillation there, so
/// no error grows); below -10, the asymptotic expansion (DLMF 9.7.9). As PyTorch's: NaN at
/// +-inf, 0 above 103.892 (where Ai is below 1e-307).
static TP_HD inline double airy_ai(double x) {
  constexpr double kAi0 = 0.355028053887817239260, kAip0 = -0.258819403792806798405;
  if (x != x || x == inf() || x == -inf()) return nan();
  if (x > 103.892) return 0;
  if (std::fabs(x) <= 1) {
    const double x3 = x * x * x;
    double f = 1, g = x, a = 1, b = x;
    for (int k = 1; k < 40; ++k) {
      a *= x3 / ((3.0 * k - 1) * (3.0 * k));
      b *= x3 / ((3.0 * k) * (3.0 * k + 1));
      f += a;
      g += b;
      if (std::fabs(a) + std::fabs(b) < kEps * 1e-2) break;
    }
    return kAi0 * f + kAip0 * g;
  }
  if (x > 1) {
    const double z = 2.0 / 3 * x * std::sqrt(x);
    return std::sqrt(x / 3) / kPi * std::exp(-z) * bessel_k_scaled_integral(z, 1.0 / 3);
  }
  if (x >= -10) {
    // Taylor coefficients at x0: a2 = x0 a0 / 2, a_{k+2} = (x0 a_k + a_{k-1}) / ((k+2)(k+1))
    const int steps = int(std::ceil(-x / 0.5));
    const double h = x / steps;
    double y = kAi0, dy = kAip0, x0 = 0;
    for (int s = 0; s < steps; ++s) {
      const double a2 = x0 * y / 2;
      double am3 = y, am2 = dy, am1 = a2;  // a_{k-3}, a_{k-2}, a_{k-1} at k = 3
      double hp = h * h, val = y + dy * h + a2 * hp, der = dy + 2 * a2 * h;
      int small = 0;
      for (int k = 3; k < 60; ++k) {
        const double an = (x0 * am2 + am3) / (double(k) * (k - 1));  // a_k
        am3 = am2, am2 = am1, am1 = an;
        der += k * an * hp;
        hp *= h;
        val += an * hp;
        // a_k vanish in a pattern (at x0 = 0, every third): three in a row must be negligible
        small = std::fabs(an * hp) < kEps * 1e-3 ? small + 1 : 0;
        if (small == 3) break;
      }
      y = val, dy = der, x0 += h;
    }
    return y;
  }
  // Ai(-z) ~ (pi^-1/2 z^-1/4) [cos(t - pi/4) sum (-1)^k u_2k t^-2k + sin(t - pi/4) sum (-1)^k u_2k+1 t^-2k-1],
  // t = 2/3 z^3/2, u_k = u_{k-1} (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k)
  const double z = -x, t = 2.0 / 3 * z * std::sqrt(z);
  double u = 1, term = 1, p = 1, q = 0;
  for (int k = 1; k < 200; ++k) {
    u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
    double next = u / std::pow(t, k);
    if (next > term) break;
    term = next;
    double signed_term = ((k / 2) % 2) ? -term : term;
    if (k % 2) q += signed_term;
    else p += signed_term;
    if (term < kEps * 1e-2) break;
  }
  const double s = std::sin(t), c = std::cos(t);  // cos(t - pi/4) = (c + s)/sqrt 2, sin(t - pi/4) = (s - c)/sqrt 2
  return (p * (c + s) + q * (s - c)) * kSqrtHalf / (std::sqrt(kPi) * std::sqrt(std::sqrt(z)));
}

/// sin(x) / x: its series below 0.5 in magnitude, 0 at +-inf, as PyTorch's.
static TP_HD inline double spherical_bessel_j0(double x) {
  if (x == inf() || x == -inf()) return 0;
  if (std::fabs(x) < 0.5) {
    const double y = -x * x;
    double term = 1, sum = 1;
    for (int k = 1; k < 12; ++k) {
      term *= y / ((2.0 * k) * (2.0 * k + 1));
      sum += term;
      if (std::fabs(term) < kEps * 1e-2) break;
    }
    return sum;
  }
  return std::sin(x) / x;
}

// ------------------------------------------------------------------ reparameterised gradients
// Note [Exact reparameterised gradients]
// A sample x = F^-1(u; a) of a distribution with cdf F moves with its parameter as
// dx/da = -(dF/da)(x; a) / pdf(x; a). PyTorch approximates these (Taylor series, saddle
// points, fitted rational functions: relative errors up to ~1e-3). Here dF/da is computed
// to full precision: the series / continued fraction that gives F is evaluated on dual
// numbers (value, d/da), and the common factor x^a ... / Gamma(a) cancels against the pdf,
// so nothing overflows.
struct Dual {
  double v, d;
};
static TP_HD inline Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
static TP_HD inline Dual operator+(Dual a, double b) { return {a.v + b, a.d}; }
static TP_HD inline Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
static TP_HD inline Dual operator*(Dual a, double b) { return {a.v * b, a.d * b}; }
static TP_HD inline Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
static TP_HD inline Dual recip(Dual a) { return {1 / a.v, -a.d / (a.v * a.v)}; }

/// dx/da for x ~ Gamma(a, 1): -(dP(a, x)/da) / pdf(x; a) (torch._standard_gamma_grad).
static TP_HD inline double standard_gamma_grad(double a, double x) {
  if (a != a || x != x || a == inf() || x == inf()) return nan();
  double r;
  if (x < a + 1) {
    // P = x^a e^-x / Gamma(a + 1) S, S = sum_k t_k, t_k = t_{k-1} x / (a + k)
    Dual t{1, 0}, s{1, 0};
    for (int k = 1; k < 1000000; ++k) {
      Dual ak{a + k, 1};
      t = t * Dual{x, 0} / ak;
      s = s + t;
      if (t.v * x < kEps * 0.25 * s.v * (a + k + 1 - x) && std::fabs(t.d) < kEps * 0.25 * std::fabs(s.d)) break;
    }
    r = -(x / a) * (s.v * (std::log(x) - digamma(a + 1)) + s.d);
  } else {
    // Q = x^a e^-x / Gamma(a) h, h the continued fraction (modified Lentz, on duals)
    const double tiny = 1e-300;
    Dual b{x + 1 - a, -1}, c{1 / tiny, 0}, d = recip(b), h = d;
    for (int i = 1; i < 1000000; ++i) {
      Dual an{-i * (i - a), double(i)};
      b = b + 2.0;
      d = an * d + b;
      if (std::fabs(d.v) < tiny) d = {tiny, 0};
      c = b + an / c;
      if (std::fabs(c.v) < tiny) c = {tiny, 0};
      d = recip(d);
      Dual delta = d * c;
      h = h * delta;
      if (std::fabs(delta.v - 1) < kEps && std::fabs(delta.d) < kEps * (1 + std::fabs(h.d / h.v))) break;
    }
    r = x * (h.v * (std::log(x) - digamma(a)) + h.d);
  }
  return r != r ? 0.0 : r;  // x = 0 and the like: 0, as PyTorch's
}

/// The continued fraction F of I_y(p, q) = y^p (1 - y)^q / (p B(p, q)) F, on duals (the
/// derivative with respect to p when `wrt_p`, else q).
static TP_HD inline Dual beta_fraction(double y, double p, double q, bool wrt_p) {
  const double tiny = 1e-300;
  Dual P{p, wrt_p ? 1.0 : 0.0}, Q{q, wrt_p ? 0.0 : 1.0};
  Dual c{1, 0}, d = recip(Dual{1, 0} + (P + Q) * Dual{-y, 0} / (P + 1.0)), h = d;
  for (int m = 1; m < 1000000; ++m) {
    Dual m2{2.0 * m, 0};
    Dual aa = Dual{double(m), 0} * (Q + (-double(m))) * Dual{y, 0} / ((P + (2.0 * m - 1)) * (P + m2));
    d = Dual{1, 0} + aa * d;
    if (std::fabs(d.v) < tiny) d = {tiny, 0};
    c = Dual{1, 0} + aa / c;
    if (std::fabs(c.v) < tiny) c = {tiny, 0};
    d = recip(d);
    h = h * d * c;
    aa = (P + double(m)) * (P + Q + double(m)) * Dual{-y, 0} / ((P + m2) * (P + (2.0 * m + 1)));
    d = Dual{1, 0} + aa * d;
    if (std::fabs(d.v) < tiny) d = {tiny, 0};
    c = Dual{1, 0} + aa / c;
    if (std::fabs(c.v) < tiny) c = {tiny, 0};
    d = recip(d);
    Dual delta = d * c;
    h = h * delta;
    if (std::fabs(delta.v - 1) < kEps && std::fabs(delta.d) < kEps * (1 + std::fabs(h.d / h.v))) break;
  }
  return h;
}

/// torch._dirichlet_grad(x, alpha, total): g with dx_j/dalpha_i = g_i (delta_ij - x_j) for
/// x ~ Dirichlet(alpha). The marginal x_i ~ Beta(alpha_i, total - alpha_i) moves with
/// alpha_i (the others fixed, so b = total - alpha_i is fixed) as
/// -(dI_x(a, b)/da) / pdf(x; a, b) = g_i (1 - x_i).
static TP_HD inline double dirichlet_grad(double x, double a, double total) {
  if (x != x || a != a || total != total) return nan();
  if (!(x > 0 && x < 1)) return 0;
  double b = total - a, r;
  if (x < (a + 1) / (a + b + 2)) {
    // I = K F, K = x^a (1-x)^b / (a B(a, b)); d log K / da = log x - 1/a - psi(a) + psi(a+b)
    Dual f = beta_fraction(x, a, b, true);
    double l = std::log(x) - 1 / a - digamma(a) + digamma(a + b);
    r = -(x / a) * (f.v * l + f.d);
  } else {
    // I = 1 - I_{1-x}(b, a) = 1 - K2 F2, K2 = (1-x)^b x^a / (b B(a, b))
    Dual f = beta_fraction(1 - x, b, a, false);
    double l = std::log(x) - digamma(a) + digamma(a + b);
    r = (x / b) * (f.v * l + f.d);
  }
  return r != r ? 0.0 : r;
}

#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors::special
