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

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // as special_functions.h's helpers
#endif

#define TP_SPECIAL_UNARY(Name, fn)                                             \
  template <class T> struct Name : Base<T> {                                   \
    using Base<T>::Base;                                                       \
    TP_HD T operator()(T x) const { return T(special::fn(double(x))); }        \
  };
TP_SPECIAL_UNARY(Digamma, digamma)
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

/// log|Gamma(x)|: the C library's, in the compute type (PyTorch calls std::lgamma too).
template <class T> struct Lgamma : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return std::lgamma(x); }
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
    T px = T(special::kPi) * x;
    return std::sin(px) / px;
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
