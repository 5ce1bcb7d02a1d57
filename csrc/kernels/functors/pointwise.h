// Scalar functors of the pointwise ops, shared by every backend. Each is a template on
// the compute type T, built from KernelParams; `out_t` is the type it writes.
// Names match ops.yaml's `functor:` field; math follows PyTorch's CPU results.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/complex.h"
#include "core/complex_math.h"
#include "core/cpu_capability.h"
#include "kernels/functors/special_math.h"
#include "kernels/tensor_iterator.h"

// Note [libmvec vectors]
// Contiguous float32 loops get a vector body at the widest width the TU is compiled for
// (Note [CPU capability]): 16 lanes with AVX-512, 8 with AVX2, else 4 with the baseline's
// SSE2. vec_f is that vector type. exp/log/sin/cos/tanh/sigmoid are our own
// (vec_math.h, Note [float32 math]); erf, log1p and expm1 (the activations) still call
// glibc's vector math (libmvec), TP_MVEC(erff) being the level's entry point. Every level
// negates by flipping the sign bit, as the scalar code does (-(+0) is -0).
#if defined(TP_HAVE_LIBMVEC) && defined(__AVX512F__) && !defined(__CUDACC__)
#include <immintrin.h>
#define TP_VEC_LANES 16
#define TP_MVEC(fn) _ZGVeN16v_##fn
namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif
using vec_f = __m512;
inline vec_f vec_load(const float* p) { return _mm512_loadu_ps(p); }
inline void vec_store(float* p, vec_f v) { _mm512_storeu_ps(p, v); }
inline vec_f vec_set1(float x) { return _mm512_set1_ps(x); }
inline vec_f vec_add(vec_f a, vec_f b) { return _mm512_add_ps(a, b); }
inline vec_f vec_div(vec_f a, vec_f b) { return _mm512_div_ps(a, b); }
inline vec_f vec_neg(vec_f a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.f)); }
inline vec_f vec_sub(vec_f a, vec_f b) { return _mm512_sub_ps(a, b); }
inline vec_f vec_mul(vec_f a, vec_f b) { return _mm512_mul_ps(a, b); }
/// a > b ? x : y per lane (false for NaN, as the scalar comparison)
inline vec_f vec_select_gt(vec_f a, vec_f b, vec_f x, vec_f y) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x);
}
/// a <= b ? x : y per lane (false for NaN)
inline vec_f vec_select_le(vec_f a, vec_f b, vec_f x, vec_f y) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LE_OQ), y, x);
}
#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
#elif defined(TP_HAVE_LIBMVEC) && defined(__AVX2__) && !defined(__CUDACC__)
#include <immintrin.h>
#define TP_VEC_LANES 8
#define TP_MVEC(fn) _ZGVdN8v_##fn
namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif
using vec_f = __m256;
inline vec_f vec_load(const float* p) { return _mm256_loadu_ps(p); }
inline void vec_store(float* p, vec_f v) { _mm256_storeu_ps(p, v); }
inline vec_f vec_set1(float x) { return _mm256_set1_ps(x); }
inline vec_f vec_add(vec_f a, vec_f b) { return _mm256_add_ps(a, b); }
inline vec_f vec_div(vec_f a, vec_f b) { return _mm256_div_ps(a, b); }
inline vec_f vec_neg(vec_f a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.f)); }
inline vec_f vec_sub(vec_f a, vec_f b) { return _mm256_sub_ps(a, b); }
inline vec_f vec_mul(vec_f a, vec_f b) { return _mm256_mul_ps(a, b); }
/// a > b ? x : y per lane (false for NaN, as the scalar comparison)
inline vec_f vec_select_gt(vec_f a, vec_f b, vec_f x, vec_f y) {
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GT_OQ));
}
/// a <= b ? x : y per lane (false for NaN)
inline vec_f vec_select_le(vec_f a, vec_f b, vec_f x, vec_f y) {
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LE_OQ));
}
#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
#elif defined(TP_HAVE_LIBMVEC) && defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#define TP_VEC_LANES 4
#define TP_MVEC(fn) _ZGVbN4v_##fn
namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif
using vec_f = __m128;
inline vec_f vec_load(const float* p) { return _mm_loadu_ps(p); }
inline void vec_store(float* p, vec_f v) { _mm_storeu_ps(p, v); }
inline vec_f vec_set1(float x) { return _mm_set1_ps(x); }
inline vec_f vec_add(vec_f a, vec_f b) { return _mm_add_ps(a, b); }
inline vec_f vec_div(vec_f a, vec_f b) { return _mm_div_ps(a, b); }
inline vec_f vec_neg(vec_f a) { return _mm_xor_ps(a, _mm_set1_ps(-0.f)); }
inline vec_f vec_sub(vec_f a, vec_f b) { return _mm_sub_ps(a, b); }
inline vec_f vec_mul(vec_f a, vec_f b) { return _mm_mul_ps(a, b); }
inline vec_f vec_blend(vec_f mask, vec_f x, vec_f y) {
  return _mm_or_ps(_mm_and_ps(mask, x), _mm_andnot_ps(mask, y));
}
/// a > b ? x : y per lane (false for NaN, as the scalar comparison)
inline vec_f vec_select_gt(vec_f a, vec_f b, vec_f x, vec_f y) { return vec_blend(_mm_cmpgt_ps(a, b), x, y); }
/// a <= b ? x : y per lane (false for NaN)
inline vec_f vec_select_le(vec_f a, vec_f b, vec_f x, vec_f y) { return vec_blend(_mm_cmple_ps(a, b), x, y); }
#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
#endif
#ifdef TP_VEC_LANES
extern "C" {
tp::functors::vec_f TP_MVEC(erff)(tp::functors::vec_f);
tp::functors::vec_f TP_MVEC(log1pf)(tp::functors::vec_f);
tp::functors::vec_f TP_MVEC(expm1f)(tp::functors::vec_f);
}
#include "kernels/functors/vec_math.h"
#endif

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif

template <class T> constexpr bool kFloat = std::is_floating_point_v<T>;
template <class T> constexpr bool kBool = std::is_same_v<T, bool>;

template <class T> struct Base {
  using out_t = T;
  Base(const KernelParams&) {}
};
template <class T> struct Predicate {
  using out_t = bool;
  Predicate(const KernelParams&) {}
};

// Note [Complex functors]: a functor whose kernel ops.yaml instantiates for the complex
// types (`complex: true` on the CPU and CUDA, `complex: cpu` on the CPU only) computes a
// complex x through Name_complex(x), found by argument-dependent lookup in namespace tp
// below: std::complex on the host (C99 Annex G special values), core/complex_math.h on
// the device; arithmetic (Complex<T>'s operators, Reciprocal) is the same code on both.
// `complex: cpu` is for functions with no device version yet. The others never see a
// complex T, so their real-only bodies stay as they are: `if constexpr` discards the
// complex branch of a real instantiation.
// Device code cannot call std::complex's math: there the same functions come from
// core/complex_math.h (Note [Complex math on the device]).
#ifdef __CUDA_ARCH__
#define TP_COMPLEX_FN(Name, fn)                                                                \
  template <class T> TP_HD inline Complex<T> Name##_complex(Complex<T> x) { return cmath::fn(x); }
#else
#define TP_COMPLEX_FN(Name, fn)                                                                \
  template <class T> TP_HD inline Complex<T> Name##_complex(Complex<T> x) { return std::fn(x.std()); }
#endif
TP_COMPLEX_FN(Sqrt, sqrt)
TP_COMPLEX_FN(Exp, exp)
TP_COMPLEX_FN(Log, log)
TP_COMPLEX_FN(Sin, sin)
TP_COMPLEX_FN(Cos, cos)
TP_COMPLEX_FN(Tanh, tanh)
#undef TP_COMPLEX_FN
template <class T> TP_HD inline Complex<T> Reciprocal_complex(Complex<T> x) { return Complex<T>(T(1)) / x; }
template <class T> TP_HD inline Complex<T> Sigmoid_complex(Complex<T> x) {
  return Complex<T>(T(1)) / (Complex<T>(T(1)) + Exp_complex(-x));
}
template <class T> inline Complex<T> Rsqrt_complex(Complex<T> x) { return Complex<T>(T(1)) / Sqrt_complex(x); }
template <class T> inline Complex<T> Pow_complex(Complex<T> a, Complex<T> b) {
  return std::pow(a.std(), b.std());  // cpow: exp(b log a), as PyTorch (also for a real b)
}
template <class T> inline Complex<T> Tan_complex(Complex<T> x) { return std::tan(x.std()); }
template <class T> inline Complex<T> Asin_complex(Complex<T> x) { return std::asin(x.std()); }
template <class T> inline Complex<T> Acos_complex(Complex<T> x) { return std::acos(x.std()); }
template <class T> inline Complex<T> Atan_complex(Complex<T> x) { return std::atan(x.std()); }
template <class T> inline Complex<T> Sinh_complex(Complex<T> x) { return std::sinh(x.std()); }
template <class T> inline Complex<T> Cosh_complex(Complex<T> x) { return std::cosh(x.std()); }
template <class T> inline Complex<T> Asinh_complex(Complex<T> x) { return std::asinh(x.std()); }
template <class T> inline Complex<T> Acosh_complex(Complex<T> x) { return std::acosh(x.std()); }
template <class T> inline Complex<T> Atanh_complex(Complex<T> x) { return std::atanh(x.std()); }
// Note [Complex logarithms and exponentials in other bases]: log2 and log10 are log(z) with
// both parts divided by ln 2 / ln 10, exp2 is exp(z ln 2), as PyTorch computes them (no C
// library function exists for them).
template <class T> inline Complex<T> Log2_complex(Complex<T> x) {
  const Complex<T> l = Log_complex(x);
  const T ln2 = T(0.693147180559945309417232121458176568);
  return {l.re / ln2, l.im / ln2};
}
template <class T> inline Complex<T> Log10_complex(Complex<T> x) {
  const Complex<T> l = Log_complex(x);
  const T ln10 = T(2.30258509299404568401799145468436421);
  return {l.re / ln10, l.im / ln10};
}
template <class T> inline Complex<T> Exp2_complex(Complex<T> x) {
  const T ln2 = T(0.693147180559945309417232121458176568);
  return Exp_complex(Complex<T>(x.re * ln2, x.im * ln2));
}
// log1p by Kahan's device, as PyTorch computes it (off Apple): u = 1 + z, then z itself where
// u rounds to 1, log(u) where u - 1 is z exactly, else log(u) * z / (u - 1), whose rounding
// errors cancel. (With an infinite part the last form is NaN, as PyTorch's is.) expm1's real
// part is expm1(x) cos(y) - 2 sin^2(y / 2), without the cancellation of exp(z) - 1.
template <class T> inline Complex<T> Log1p_complex(Complex<T> z) {
  const Complex<T> u(z.re + T(1), z.im);  // the real 1 leaves a -0 imaginary part as it is
  if (u.re == T(1) && u.im == T(0)) return z;
  const Complex<T> log_u = Log_complex(u), um1(u.re - T(1), u.im);
  if (um1 == z) return log_u;
  return log_u * (z / um1);
}
template <class T> inline Complex<T> Expm1_complex(Complex<T> z) {
  const T h = std::sin(z.im / T(2));
  return {std::expm1(z.re) * std::cos(z.im) - T(2) * h * h, std::exp(z.re) * std::sin(z.im)};
}

// ---------------------------------------------------------------- unary
#define TP_FLOAT_UNARY(Name, expr)                                    \
  template <class T> struct Name : Base<T> {                          \
    using Base<T>::Base;                                              \
    TP_HD T operator()(T x) const {                                   \
      if constexpr (kComplex<T>) return Name##_complex(x);            \
      else return expr;                                               \
    }                                                                 \
  };
TP_FLOAT_UNARY(Sqrt, std::sqrt(x))
TP_FLOAT_UNARY(Rsqrt, T(1) / std::sqrt(x))
TP_FLOAT_UNARY(Exp2, std::exp2(x))
TP_FLOAT_UNARY(Expm1, std::expm1(x))
TP_FLOAT_UNARY(Log2, std::log2(x))
TP_FLOAT_UNARY(Log10, std::log10(x))
TP_FLOAT_UNARY(Log1p, std::log1p(x))
TP_FLOAT_UNARY(Tan, std::tan(x))
TP_FLOAT_UNARY(Asin, std::asin(x))
TP_FLOAT_UNARY(Acos, std::acos(x))
TP_FLOAT_UNARY(Atan, std::atan(x))
TP_FLOAT_UNARY(Sinh, std::sinh(x))
TP_FLOAT_UNARY(Cosh, std::cosh(x))
TP_FLOAT_UNARY(Asinh, std::asinh(x))
TP_FLOAT_UNARY(Acosh, std::acosh(x))
TP_FLOAT_UNARY(Atanh, std::atanh(x))
TP_FLOAT_UNARY(Erf, std::erf(x))
TP_FLOAT_UNARY(Erfc, std::erfc(x))
TP_FLOAT_UNARY(Erfinv, erfinv(x))
TP_FLOAT_UNARY(Frac, x - std::trunc(x))
TP_FLOAT_UNARY(Reciprocal, T(1) / x)
#undef TP_FLOAT_UNARY

// Unary ops with a vector path for contiguous float32 (Note [float32 math]).
#define TP_VEC_UNARY(Name, expr, vexpr)                                           \
  template <class T> struct Name : Base<T> {                                      \
    using Base<T>::Base;                                                          \
    TP_HD T operator()(T x) const {                                               \
      if constexpr (kComplex<T>) return Name##_complex(x);                        \
      else return expr;                                                           \
    }                                                                             \
    TP_VEC_BODY(vexpr)                                                            \
  };
#ifdef TP_VEC_LANES
#define TP_VEC_BODY(vexpr) \
  static vec_f vec(vec_f v) { return vexpr; }
#else
#define TP_VEC_BODY(vexpr)
#endif
TP_VEC_UNARY(Exp, std::exp(x), vmath::exp(v))
TP_VEC_UNARY(Log, std::log(x), vmath::log(v))
TP_VEC_UNARY(Sin, std::sin(x), vmath::sin(v))
TP_VEC_UNARY(Cos, std::cos(x), vmath::cos(v))
TP_VEC_UNARY(Tanh, std::tanh(x), vmath::tanh(v))
TP_VEC_UNARY(Sigmoid, T(1) / (T(1) + std::exp(-x)), vmath::sigmoid(v))
#undef TP_VEC_UNARY
#undef TP_VEC_BODY

template <class T> struct Neg : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return T(-x); }
};
template <class T> struct Relu : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {  // NaN stays NaN, as PyTorch's relu
    if constexpr (kFloat<T>) return x < T(0) ? T(0) : x;
    else return x > T(0) ? x : T(0);
  }
};
template <class T> struct Conj : Base<T> {  // the identity on real types
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if constexpr (kComplex<T>) return conj(x);
    else return x;
  }
};
template <class T> struct Abs : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (kFloat<T>) return std::fabs(x);
    else return T(x < 0 ? -x : x);
  }
};
template <class T> struct Sign : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if constexpr (kBool<T>) return x;
    else if constexpr (std::is_unsigned_v<T>) return T(x > 0);
    else return T((T(0) < x) - (x < T(0)));
  }
};
template <class T> struct Square : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return T(x * x); }
};
#define TP_ROUNDING(Name, fn)                                    \
  template <class T> struct Name : Base<T> {                     \
    using Base<T>::Base;                                         \
    TP_HD T operator()(T x) const {                                    \
      if constexpr (kFloat<T>) return fn(x);                     \
      else return x;                                             \
    }                                                            \
  };
TP_ROUNDING(Floor, std::floor)
TP_ROUNDING(Ceil, std::ceil)
TP_ROUNDING(Trunc, std::trunc)
TP_ROUNDING(Round, std::nearbyint)
#undef TP_ROUNDING
template <class T> struct RoundDecimals : Base<T> {
  T scale;
  bool neg;
  RoundDecimals(const KernelParams& p) : Base<T>(p) {
    int64_t d = p.i0;
    neg = d < 0;
    scale = T(std::pow(10.0, double(neg ? -d : d)));
  }
  TP_HD T operator()(T x) const {
    return neg ? std::nearbyint(x / scale) * scale : std::nearbyint(x * scale) / scale;
  }
};
template <class T> struct Logit : Base<T> {
  T lo, hi;
  bool clamp;
  Logit(const KernelParams& p) : Base<T>(p), lo(T(p.s0.to_double())), hi(T(1) - lo),
                                 clamp(p.s0.to_double() >= 0) {}
  TP_HD T operator()(T x) const {
    T z = clamp ? (x < lo ? lo : x > hi ? hi : x) : x;
    return std::log(z / (T(1) - z));
  }
};
template <class T> struct BitwiseNot : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if constexpr (kBool<T>) return !x;
    else return T(~x);
  }
};
template <class T> struct LogicalNot : Predicate<T> {
  using Predicate<T>::Predicate;
  TP_HD bool operator()(T x) const { return !bool(x); }
};
#define TP_FLOAT_PREDICATE(Name, fexpr)                          \
  template <class T> struct Name : Predicate<T> {                \
    using Predicate<T>::Predicate;                               \
    TP_HD bool operator()(T x) const {                           \
      if constexpr (kFloat<T>) return fexpr;                     \
      else if constexpr (kComplex<T>) return Name##Complex(x);   \
      else return Name##Int;                                     \
    }                                                            \
  };
// complex: NaN where either part is, infinite where either part is, finite where both are
template <class T> TP_HD inline bool IsNanComplex(Complex<T> x) { return x.re != x.re || x.im != x.im; }
template <class T> TP_HD inline bool IsInfComplex(Complex<T> x) { return std::isinf(x.re) || std::isinf(x.im); }
template <class T> TP_HD inline bool IsFiniteComplex(Complex<T> x) {
  return std::isfinite(x.re) && std::isfinite(x.im);
}
constexpr bool IsNanInt = false, IsInfInt = false, IsFiniteInt = true, IsPosInfInt = false,
               IsNegInfInt = false;
TP_FLOAT_PREDICATE(IsNan, x != x)
TP_FLOAT_PREDICATE(IsInf, std::isinf(x))
TP_FLOAT_PREDICATE(IsFinite, std::isfinite(x))
TP_FLOAT_PREDICATE(IsPosInf, x == std::numeric_limits<T>::infinity())
TP_FLOAT_PREDICATE(IsNegInf, x == -std::numeric_limits<T>::infinity())
#undef TP_FLOAT_PREDICATE
template <class T> struct NanToNum : Base<T> {
  using R = real_t<T>;
  R nan, posinf, neginf;
  // s1/s2 carry the bounds already resolved for the output dtype (see pointwise ops).
  NanToNum(const KernelParams& p) : Base<T>(p), nan(R(p.s0.to_double())),
                                    posinf(R(p.s1.to_double())), neginf(R(p.s2.to_double())) {}
  TP_HD R replace(R x) const {
    return x != x ? nan : x == std::numeric_limits<R>::infinity() ? posinf
           : x == -std::numeric_limits<R>::infinity() ? neginf : x;
  }
  TP_HD T operator()(T x) const {
    if constexpr (kFloat<T>) return replace(x);
    else if constexpr (kComplex<T>) return T(replace(x.re), replace(x.im));  // each part, as PyTorch
    else return x;
  }
};
template <class T> struct ClampScalar : Base<T> {
  T lo, hi;
  bool has_lo, has_hi;
  ClampScalar(const KernelParams& p) : Base<T>(p), lo(p.s0.to<T>()), hi(p.s1.to<T>()),
                                       has_lo(p.i0 & 1), has_hi(p.i0 & 2) {}
  TP_HD T operator()(T x) const {
    if constexpr (kFloat<T>) {
      if (x != x) return x;
      if (has_lo && lo != lo) return lo;
      if (has_hi && hi != hi) return hi;
    }
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};
template <class T> struct Fill : Base<T> {
  T v;
  Fill(const KernelParams& p) : Base<T>(p), v(p.s0.to<T>()) {}
  TP_HD T operator()() const { return v; }
};
template <class T> struct Identity : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return x; }
};

// ---------------------------------------------------------------- binary
template <class T> struct Add : Base<T> {
  T alpha;
  Add(const KernelParams& p) : Base<T>(p), alpha(p.s0.to<T>()) {}
  TP_HD T operator()(T a, T b) const {
    if constexpr (kBool<T>) return a || (b && alpha);
    else return T(a + alpha * b);
  }
};
template <class T> struct Sub : Base<T> {
  T alpha;
  Sub(const KernelParams& p) : Base<T>(p), alpha(p.s0.to<T>()) {}
  TP_HD T operator()(T a, T b) const { return T(a - alpha * b); }
};
template <class T> struct Mul : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kBool<T>) return a && b;
    else return T(a * b);
  }
};
template <class T> struct Div : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const { return a / b; }
};
// Integer division helpers flag division by zero instead of trapping.
// On CUDA the result is 0 and nothing is raised (PyTorch's CUDA kernels do not raise either).
template <class T> TP_HD inline bool zero_divisor(const KernelParams& p, T b) {
  if constexpr (!kFloat<T>) {
    if (b == 0) {
#ifndef __CUDA_ARCH__
      p.error.store(kZeroDivision, std::memory_order_relaxed);
#endif
      return true;
    }
  }
  return false;
}
template <class T> struct DivTrunc : Base<T> {
  const KernelParams& p;
  DivTrunc(const KernelParams& p) : Base<T>(p), p(p) {}
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) return std::trunc(a / b);
    else {
      if (zero_divisor(p, b)) return 0;
      if constexpr (std::is_signed_v<T>) if (b == -1) return T(-a);  // avoids MIN / -1 trap
      return T(a / b);
    }
  }
};
template <class T> TP_HD inline T floor_div(T a, T b) {
  if constexpr (kFloat<T>) {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return T(-a);
      T q = T(a / b);
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    } else {
      return T(a / b);
    }
  }
}
template <class T> struct DivFloor : Base<T> {
  const KernelParams& p;
  DivFloor(const KernelParams& p) : Base<T>(p), p(p) {}
  TP_HD T operator()(T a, T b) const {
    if (zero_divisor(p, b)) return 0;
    return floor_div(a, b);
  }
};
template <class T> struct Remainder : Base<T> {
  const KernelParams& p;
  Remainder(const KernelParams& p) : Base<T>(p), p(p) {}
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) {
      T m = std::fmod(a, b);
      if (m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    } else {
      if (zero_divisor(p, b)) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
        T m = T(a % b);
        if (m != 0 && ((b < 0) != (m < 0))) m = T(m + b);
        return m;
      } else {
        return T(a % b);
      }
    }
  }
};
template <class T> struct Fmod : Base<T> {
  const KernelParams& p;
  Fmod(const KernelParams& p) : Base<T>(p), p(p) {}
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) return std::fmod(a, b);
    else {
      if (zero_divisor(p, b)) return 0;
      if constexpr (std::is_signed_v<T>) if (b == -1) return 0;
      return T(a % b);
    }
  }
};
template <class T> struct Pow : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) return std::pow(a, b);
    else if constexpr (kComplex<T>) return Pow_complex(a, b);
    else if constexpr (kBool<T>) return a || !b;
    else {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) return a == 1 ? T(1) : a == -1 ? T((b & 1) ? -1 : 1) : T(0);
      }
      T r = 1, base = a;
      for (auto e = b; e; e >>= 1) {
        if (e & 1) r = T(r * base);
        base = T(base * base);
      }
      return r;
    }
  }
};
#define TP_FLOAT_BINARY(Name, expr)                          \
  template <class T> struct Name : Base<T> {                 \
    using Base<T>::Base;                                     \
    TP_HD T operator()(T a, T b) const { return expr; }            \
  };
TP_FLOAT_BINARY(Atan2, std::atan2(a, b))
TP_FLOAT_BINARY(Hypot, std::hypot(a, b))
TP_FLOAT_BINARY(Copysign, std::copysign(a, b))
TP_FLOAT_BINARY(Xlogy, b != b ? b : a == 0 ? T(0) : a * std::log(b))
#undef TP_FLOAT_BINARY
template <class T> struct Fmax : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) return std::fmax(a, b);
    else return a > b ? a : b;
  }
};
template <class T> struct Fmin : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) return std::fmin(a, b);
    else return a < b ? a : b;
  }
};
/// relu's gradient in one pass: grad where the result is not <= 0 (NaN results pass it).
template <class T> struct ReluBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T grad, T result) const { return result <= T(0) ? T(0) : grad; }
};
template <class T> struct Maximum : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) if (a != a || b != b) return a != a ? a : b;
    return a > b ? a : b;
  }
};
template <class T> struct Minimum : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if constexpr (kFloat<T>) if (a != a || b != b) return a != a ? a : b;
    return a < b ? a : b;
  }
};
#define TP_COMPARE(Name, op)                                   \
  template <class T> struct Name : Predicate<T> {              \
    using Predicate<T>::Predicate;                             \
    TP_HD bool operator()(T a, T b) const { return a op b; }         \
  };
TP_COMPARE(Eq, ==)
TP_COMPARE(Ne, !=)
TP_COMPARE(Lt, <)
TP_COMPARE(Le, <=)
TP_COMPARE(Gt, >)
TP_COMPARE(Ge, >=)
#undef TP_COMPARE
#define TP_LOGICAL(Name, op)                                              \
  template <class T> struct Name : Predicate<T> {                         \
    using Predicate<T>::Predicate;                                        \
    TP_HD bool operator()(T a, T b) const { return bool(a) op bool(b); }        \
  };
TP_LOGICAL(LogicalAnd, &&)
TP_LOGICAL(LogicalOr, ||)
TP_LOGICAL(LogicalXor, !=)
#undef TP_LOGICAL
#define TP_BITWISE(Name, op)                                   \
  template <class T> struct Name : Base<T> {                   \
    using Base<T>::Base;                                       \
    TP_HD T operator()(T a, T b) const { return T(a op b); }         \
  };
TP_BITWISE(BitwiseAnd, &)
TP_BITWISE(BitwiseOr, |)
TP_BITWISE(BitwiseXor, ^)
#undef TP_BITWISE
template <class T> struct LeftShift : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    if (b < 0 || uint64_t(b) >= sizeof(T) * 8) return 0;
    return T(U(a) << b);
  }
};
template <class T> struct RightShift : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b) const {
    if (b < 0 || uint64_t(b) >= sizeof(T) * 8) {
      if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
      else return 0;
    }
    return T(a >> b);
  }
};
template <class T> struct LerpScalar : Base<T> {
  T w;
  LerpScalar(const KernelParams& p) : Base<T>(p), w(p.s0.to<T>()) {}
  TP_HD T operator()(T a, T b) const { return lerp(a, b, w); }
};

// ---------------------------------------------------------------- ternary
template <class T> struct Where : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(bool c, T a, T b) const { return c ? a : b; }
};
template <class T> struct Lerp : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T a, T b, T w) const { return lerp(a, b, w); }
};
template <class T> struct Addcmul : Base<T> {
  T value;
  Addcmul(const KernelParams& p) : Base<T>(p), value(p.s0.to<T>()) {}
  TP_HD T operator()(T s, T a, T b) const {
    if constexpr (kBool<T>) return s || (value && a && b);
    else return T(s + value * a * b);
  }
};
template <class T> struct Addcdiv : Base<T> {
  T value;
  Addcdiv(const KernelParams& p) : Base<T>(p), value(p.s0.to<T>()) {}
  TP_HD T operator()(T s, T a, T b) const { return s + value * (a / b); }
};
template <class T> struct ClampTensor : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x, T lo, T hi) const {
    if constexpr (kFloat<T>) if (x != x || lo != lo || hi != hi) return x != x ? x : lo != lo ? lo : hi;
    return x < lo ? (lo > hi ? hi : lo) : (x > hi ? hi : x);
  }
};

#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
#include "kernels/functors/activation.h"  // NOLINT: activation functors extend this set
#include "kernels/functors/special.h"     // NOLINT: and the special functions
