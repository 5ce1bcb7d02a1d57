// Functors of the special-function ops (csrc/ops/special.yaml): the gamma family, Bessel
// functions, the normal distribution's functions, Hurwitz zeta, the incomplete gamma
// ratios, and the integer / bit-level ops that came with them (gcd, lcm, nextafter,
// heaviside, signbit, frexp). The math is in special_functions.h (double precision; float32
// results are rounded from it).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/functors/special_functions.h"
#include "kernels/functors/special_vec.h"

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // as special_functions.h's helpers
#endif

#define TP_SPECIAL_UNARY(Name, fn)                                             \
  template <class T> struct Name : Base<T> {                                   \
    using Base<T>::Base;                                                       \
    TP_HD T operator()(T x) const { return T(special::fn(double(x))); }        \
  };
TP_SPECIAL_UNARY(Erfcx, erfcx)
TP_SPECIAL_UNARY(I0, i0)
TP_SPECIAL_UNARY(I0e, i0e)
TP_SPECIAL_UNARY(I1, i1)
TP_SPECIAL_UNARY(I1e, i1e)
TP_SPECIAL_UNARY(Ndtri, ndtri)
TP_SPECIAL_UNARY(LogNdtr, log_ndtr)
TP_SPECIAL_UNARY(BesselJ0, bessel_j0)
TP_SPECIAL_UNARY(BesselJ1, bessel_j1)
TP_SPECIAL_UNARY(BesselY0, bessel_y0)
TP_SPECIAL_UNARY(BesselY1, bessel_y1)
TP_SPECIAL_UNARY(ModifiedBesselK0, modified_bessel_k0)
TP_SPECIAL_UNARY(ModifiedBesselK1, modified_bessel_k1)
TP_SPECIAL_UNARY(ScaledModifiedBesselK0, scaled_modified_bessel_k0)
TP_SPECIAL_UNARY(ScaledModifiedBesselK1, scaled_modified_bessel_k1)
TP_SPECIAL_UNARY(AiryAi, airy_ai)
TP_SPECIAL_UNARY(SphericalBesselJ0, spherical_bessel_j0)
#undef TP_SPECIAL_UNARY

#define TP_SPECIAL_BINARY(Name, fn)                                                        \
  template <class T> struct Name : Base<T> {                                               \
    using Base<T>::Base;                                                                   \
    TP_HD T operator()(T a, T b) const { return T(special::fn(double(a), double(b))); }    \
  };
TP_SPECIAL_BINARY(Zeta, zeta)
TP_SPECIAL_BINARY(Igamma, igamma)
TP_SPECIAL_BINARY(Igammac, igammac)
TP_SPECIAL_BINARY(StandardGammaGrad, standard_gamma_grad)
#undef TP_SPECIAL_BINARY

// ---------------------------------------------------------------- orthogonal polynomials
// Note [Orthogonal polynomial kernels]
// tp.special's polynomials p_n(x) take n as a tensor of x's dtype; the degree is n
// truncated to an integer. NaN, +-inf and n beyond int64 give 0, as negative n do (PyTorch's
// float-to-int64 conversion turns those into INT64_MIN on x86). The three-term recurrences
// run in the tensor's type, as PyTorch's do, so float32 overflows where PyTorch's does (an
// overflowed recurrence turns inf - inf into NaN there too); they stop early once NaN (which
// no later step undoes). Chebyshev polynomials inside (-1, 1) above a small degree come from
// their trigonometric forms in double (T_n = cos n t, U_n = sin (n+1)t / sin t,
// V_n = cos (n+1/2)t / cos t/2, W_n = sin (n+1/2)t / sin t/2 with x = cos t), evaluated
// where the denominator is not small (U_n(-x) = (-1)^n U_n(x), V_n(-x) = (-1)^n W_n(x)); the
// shifted kinds' 2x - 1 is taken in double there, exact for a float32 x.
// PyTorch returns uninitialised values for NaN x at some degrees; NaN here.
template <class T> static TP_HD inline int64_t poly_degree(T n) {
  if (!(std::fabs(n) < T(9.2233720368547758e18))) return -1;
  return int64_t(n);
}
/// The recurrence p_{k+1} = 2 x p_k - p_{k-1} from p_0 = 1, p_1 = first up to degree n >= 1.
template <class T> static TP_HD inline T chebyshev_recurrence(T x, T first, int64_t n) {
  T p = T(1), q = first;
  for (int64_t k = 2; k <= n; ++k) {
    T r = (x + x) * q - p;
    p = q;
    q = r;
    if (r != r) break;
  }
  return q;
}
// The Chebyshev kinds take the argument twice: y in the tensor's type for the recurrence, and
// yd, its exact value in double (2x - 1 taken in double for the shifted kinds, so a float32 x
// near 0 or 1 loses nothing to the shift) for the endpoint tests and the trigonometric forms.
template <class T> static TP_HD inline T chebyshev_t(T y, double yd, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(yd) == 1) return (yd > 0 || n % 2 == 0) ? T(1) : T(-1);
  if (n > 6 && std::fabs(yd) < 1) return T(std::cos(double(n) * std::acos(yd)));
  if (n == 0) return T(1);
  if (n == 1) return y;
  return chebyshev_recurrence(y, y, n);
}
template <class T> static TP_HD inline T chebyshev_u(T y, double yd, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(yd) == 1) return (yd > 0 || n % 2 == 0) ? T(n) + T(1) : -(T(n) + T(1));
  if (n > 8 && std::fabs(yd) < 1) {
    const double t = std::acos(std::fabs(yd));
    const double r = std::sin(double(n + 1) * t) / std::sin(t);
    return T(yd < 0 && n % 2 ? -r : r);
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y;
  return chebyshev_recurrence(y, y + y, n);
}
/// W_n(x) = sin((n + 1/2) t) / sin(t/2) for x = cos t in [0, 1) (the denominator is >= 1/sqrt 2
/// or accurate: t itself is).
static TP_HD inline double chebyshev_w_trig(double x, int64_t n) {
  const double t = std::acos(x);
  return std::sin((double(n) + 0.5) * t) / std::sin(t / 2);
}
/// V_n(x) = cos((n + 1/2) t) / cos(t/2) for x = cos t in [0, 1).
static TP_HD inline double chebyshev_v_trig(double x, int64_t n) {
  const double t = std::acos(x);
  return std::cos((double(n) + 0.5) * t) / std::cos(t / 2);
}
template <class T> static TP_HD inline T chebyshev_v(T y, double yd, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(yd) == 1) {
    if (yd > 0) return T(1);
    return n % 2 == 0 ? T(2) * T(n) + T(1) : -(T(2) * T(n) + T(1));
  }
  if (n > 8 && std::fabs(yd) < 1) {
    if (yd >= 0) return T(chebyshev_v_trig(yd, n));
    const double r = chebyshev_w_trig(-yd, n);  // V_n(x) = (-1)^n W_n(-x)
    return T(n % 2 ? -r : r);
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y - T(1);
  return chebyshev_recurrence(y, y + y - T(1), n);
}
template <class T> static TP_HD inline T chebyshev_w(T y, double yd, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(yd) == 1) {
    if (yd > 0) return T(2) * T(n) + T(1);
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n > 8 && std::fabs(yd) < 1) {
    if (yd >= 0) return T(chebyshev_w_trig(yd, n));
    const double r = chebyshev_v_trig(-yd, n);  // W_n(x) = (-1)^n V_n(-x)
    return T(n % 2 ? -r : r);
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y + T(1);
  return chebyshev_recurrence(y, y + y + T(1), n);
}
template <class T> static TP_HD inline T hermite_h(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  T p = T(1), q = x + x;
  for (int64_t k = 1; k < n; ++k) {  // H_{k+1} = 2x H_k - 2k H_{k-1}
    T r = (x + x) * q - T(2 * k) * p;
    p = q;
    q = r;
    if (r != r) break;
  }
  return q;
}
template <class T> static TP_HD inline T hermite_he(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  T p = T(1), q = x;
  for (int64_t k = 1; k < n; ++k) {  // He_{k+1} = x He_k - k He_{k-1}
    T r = x * q - T(k) * p;
    p = q;
    q = r;
    if (r != r) break;
  }
  return q;
}
template <class T> static TP_HD inline T laguerre_l(T x, int64_t n) {
  if (n < 0) return T(0);
  if (x == T(0) || n == 0) return T(1);
  T p = T(1), q = T(1) - x;
  for (int64_t k = 1; k < n; ++k) {  // (k+1) L_{k+1} = (2k+1-x) L_k - k L_{k-1}
    T r = ((T(2 * k + 1) - x) * q - T(k) * p) / T(k + 1);
    p = q;
    q = r;
    if (r != r) break;
  }
  return q;
}
template <class T> static TP_HD inline T legendre_p(T x, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(x) == T(1)) return (x > T(0) || n % 2 == 0) ? T(1) : T(-1);
  if (n == 0) return T(1);
  T p = T(1), q = x;
  for (int64_t k = 1; k < n; ++k) {  // (k+1) P_{k+1} = (2k+1) x P_k - k P_{k-1}
    T r = (T(2 * k + 1) * x * q - T(k) * p) / T(k + 1);
    p = q;
    q = r;
    if (r != r) break;
  }
  return q;
}

#define TP_SPECIAL_POLY(Name, fn)                                                   \
  template <class T> struct Name : Base<T> {                                       \
    using Base<T>::Base;                                                           \
    TP_HD T operator()(T x, T n) const { return fn(x, poly_degree(n)); }           \
  };
#define TP_SPECIAL_CHEBYSHEV(Name, fn, shifted)                                     \
  template <class T> struct Name : Base<T> {                                       \
    using Base<T>::Base;                                                           \
    TP_HD T operator()(T x, T n) const {                                           \
      if constexpr (shifted) return fn(x + x - T(1), 2 * double(x) - 1, poly_degree(n)); \
      else return fn(x, double(x), poly_degree(n));                                \
    }                                                                              \
  };
TP_SPECIAL_CHEBYSHEV(ChebyshevPolynomialT, chebyshev_t, false)
TP_SPECIAL_CHEBYSHEV(ChebyshevPolynomialU, chebyshev_u, false)
TP_SPECIAL_CHEBYSHEV(ChebyshevPolynomialV, chebyshev_v, false)
TP_SPECIAL_CHEBYSHEV(ChebyshevPolynomialW, chebyshev_w, false)
// shifted: p*_n(x) = p_n(2x - 1)
TP_SPECIAL_CHEBYSHEV(ShiftedChebyshevPolynomialT, chebyshev_t, true)
TP_SPECIAL_CHEBYSHEV(ShiftedChebyshevPolynomialU, chebyshev_u, true)
TP_SPECIAL_CHEBYSHEV(ShiftedChebyshevPolynomialV, chebyshev_v, true)
TP_SPECIAL_CHEBYSHEV(ShiftedChebyshevPolynomialW, chebyshev_w, true)
TP_SPECIAL_POLY(HermitePolynomialH, hermite_h)
TP_SPECIAL_POLY(HermitePolynomialHe, hermite_he)
TP_SPECIAL_POLY(LaguerrePolynomialL, laguerre_l)
TP_SPECIAL_POLY(LegendrePolynomialP, legendre_p)
#undef TP_SPECIAL_CHEBYSHEV
#undef TP_SPECIAL_POLY

/// log|Gamma(x)|: the C library's, in the compute type; contiguous float32 lanes through
/// Note [Vectorised float32 lgamma and digamma].
template <class T> struct Lgamma : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return std::lgamma(x); }
#ifdef TP_VEC_LANES
  static vec_f vec(vec_f v) {
    return special_vec::map_lanes<true>(v, special_vec::lgamma_finite, [](float x) { return std::lgamma(x); });
  }
#endif
};
template <class T> struct Digamma : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return T(special::digamma(double(x))); }
#ifdef TP_VEC_LANES
  static vec_f vec(vec_f v) {
    return special_vec::map_lanes<false>(v, special_vec::digamma_positive,
                                     [](float x) { return float(special::digamma(double(x))); });
  }
#endif
};
template <class T> struct Polygamma : Base<T> {
  int64_t n;
  Polygamma(const KernelParams& p) : Base<T>(p), n(p.i0) {}
  TP_HD T operator()(T x) const {
    if (n == 1 && x < T(0) && x == std::floor(x) && x != -std::numeric_limits<T>::infinity()) {
      // A pole. PyTorch's trigamma returns pi^2 / sin^2(pi x) there with sin(pi x) rounded
      // away from 0, in the compute type (finite, huge): so does this.
      T s = std::sin(T(special::kPi) * x);
      return (T(special::kPi) * T(special::kPi)) / (s * s) - T(special::zeta(2, 1 - double(x)));
    }
    return T(special::polygamma(n, double(x)));
  }
};
/// -x log x (0 at 0, -inf below).
template <class T> struct Entr : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if (x != x) return x;
    if (x > T(0)) return -x * std::log(x);
    if (x == T(0)) return T(0);
    return -std::numeric_limits<T>::infinity();
  }
};
/// x * log1p(y), 0 where x is 0 (unless y is NaN).
template <class T> struct Xlog1py : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x, T y) const {
    if (y != y) return y;
    if (x == T(0)) return T(0);
    return x * std::log1p(y);
  }
};
/// sin(pi x) / (pi x), 1 at 0: PyTorch's formula in the compute type.
template <class T> struct Sinc : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if (x == T(0)) return T(1);
    if constexpr (kComplex<T>) {
      const T px = real_t<T>(special::kPi) * x;
      return Sin_complex(px) / px;
    } else {
      T px = T(special::kPi) * x;
      return std::sin(px) / px;
    }
  }
};
/// Reparameterised gradient of Dirichlet samples (Note [Exact reparameterised gradients]).
template <class T> struct DirichletGrad : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x, T alpha, T total) const {
    return T(special::dirichlet_grad(double(x), double(alpha), double(total)));
  }
};

// ---------------------------------------------------------------- integers and bits
// Note [gcd and lcm of the most negative integer]
// |INT_MIN| does not fit its type: taken in the signed type it stays negative, Euclid's
// remainders then go negative too, gcd(INT_MIN, 5) came out -1 and lcm divided INT_MIN by
// -1, a SIGFPE that killed the process (PyTorch 2.13 dies the same way). Both work on
// magnitudes in an unsigned type at least 32 bits wide, so every step is defined; the
// result wraps into T as PyTorch's does where its arithmetic is defined (gcd(INT_MIN, 0) =
// INT_MIN, lcm(INT_MIN, 8) = INT_MIN).
template <class T>
using GcdWord = std::make_unsigned_t<std::conditional_t<(sizeof(T) < 4), int32_t, T>>;
template <class T> static TP_HD inline GcdWord<T> magnitude(T x) {
  using W = GcdWord<T>;
  if constexpr (std::is_signed_v<T>) return x < 0 ? W(W(0) - W(x)) : W(x);
  else return W(x);
}
template <class W> static TP_HD inline W gcd_word(W a, W b) {
  while (a != 0) {
    W c = a;
    a = b % a;
    b = c;
  }
  return b;
}
template <class T> struct Gcd : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const { return T(gcd_word(magnitude(a), magnitude(b))); }
};
template <class T> struct Lcm : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    const auto x = magnitude(a), y = magnitude(b);
    const auto g = gcd_word(x, y);
    if (g == 0) return T(0);
    return T(x / g * y);  // |a / g * b|, wrapping only when stored (as PyTorch's for narrow types)
  }
};
/// values where x is 0, else 1 for x > 0 and 0 below (NaN too).
template <class T> struct Heaviside : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x, T values) const {
    if constexpr (kBool<T>) return x ? true : values;
    else return x == T(0) ? values : T(x > T(0));
  }
};
template <class T> struct Signbit : Predicate<T> {
  using Predicate<T>::Predicate;
  TP_HD bool operator()(T x) const {
    if constexpr (kFloat<T>) return std::signbit(x);
    else if constexpr (std::is_signed_v<T>) return x < 0;
    else return false;
  }
};
/// frexp's mantissa (in [0.5, 1) in magnitude; x itself for 0, inf and NaN) and exponent
/// (as a float; the op converts it to int32).
template <class T> struct FrexpMantissa : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    int e;
    return std::frexp(x, &e);
  }
};
template <class T> struct FrexpExponent : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    int e = 0;
    std::frexp(x, &e);
    return std::isfinite(x) ? T(e) : T(0);
  }
};

/// The float16 (`half`) or bfloat16 value next to a (a value of that type) towards b,
/// computed in float: the step is the narrow type's ulp at a.
static TP_HD inline float narrow_nextafter(float a, float b, bool half) {
  if (a != a || b != b) return a + b;
  if (a == b) return b;
  const float min_sub = half ? 5.9604644775390625e-08f : 9.18354961579912115600575419705e-41f;
  if (a == 0) return b > 0 ? min_sub : -min_sub;
  const float max_finite = half ? 65504.0f : 3.3895313892515355e38f;
  const float mag = std::fabs(a);
  if (mag == std::numeric_limits<float>::infinity()) return std::copysign(max_finite, a);
  const int min_exp = half ? -14 : -126, mant = half ? 10 : 7;
  int e;
  std::frexp(mag, &e);
  const int E = e - 1;  // mag in [2^E, 2^(E+1))
  const float ulp = std::ldexp(1.0f, (E < min_exp ? min_exp : E) - mant);
  float r;
  if ((b > a) == (a > 0)) {  // away from zero
    r = mag == max_finite ? std::numeric_limits<float>::infinity() : mag + ulp;
  } else {  // towards zero: the step below a power of two is half as large
    r = mag - ((mag == std::ldexp(1.0f, E) && E > min_exp) ? ulp / 2 : ulp);
  }
  return std::copysign(r, a);
}
/// nextafter; KernelParams::i0 = 1 (float16) or 2 (bfloat16) when the result dtype is a
/// half type computed in float32.
template <class T> struct Nextafter : Base<T> {
  int mode;
  Nextafter(const KernelParams& p) : Base<T>(p), mode(int(p.i0)) {}
  TP_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>)
      if (mode != 0) return narrow_nextafter(a, b, mode == 1);
    return std::nextafter(a, b);
  }
};

#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
