// Vector bodies of the float32 lgamma and digamma functors (special.h): each lane widened
// to double, computed with the same instructions for every lane, rounded back to float.
//
// Note [Vectorised float32 lgamma and digamma]
// The scalar functors call glibc's lgammaf (about 16 ns an element on the 2-core AMD EPYC box)
// and the double digamma with its recurrence loop (about 21 ns); PyTorch's vectorised lgamma
// (Sleef) takes about 8 ns and its float digamma about 22 ns. Contiguous float32 vectors go
// through here instead, in double (float32 results need ~1e-13 of it; measured: within 0.51
// ulp of the float64 result everywhere, tests/python/test_special.py):
//   lgamma   x >= 8: Stirling's series (terms to B14, error < 1e-15 at x = 8).
//            0 < x < 8: y = x moved into [2, 3) by whole steps (at most two up, five down;
//            each step's factor formed independently), lgamma(y) = f R(f - 1/2) with
//            f = y - 2, plus or minus the log of the steps' product. R(t) = lgamma(2.5 + t) /
//            (0.5 + t) is a degree-13 Chebyshev fit on [-1/2, 1/2] (scripts/fit_lgamma_poly.py,
//            mpmath; 9e-16 relative, 2.2e-15 evaluated in double); the factor f keeps the
//            zero at 2 exact and the product is exact for x < 2, so the zeros at 1 and 2 lose
//            at most a factor ~2 to cancellation. One log serves both ranges.
//            x < 0: log(pi / |sin(pi x)|) - lgamma(1 - x), sin(pi x) by its Taylor series
//            from the exact distance to the nearest integer; +inf at the poles.
//   digamma  x > 0: the recurrence to x >= 10 of Note [Special function numerics], its
//            terms 1/(x + k) added as fractions in a tree (no division per step, no chain
//            through the steps), then the same asymptotic series. Negative lanes take the
//            scalar functor.
// Lanes at 0, +-inf or NaN (and digamma's negative ones) are recomputed by the scalar
// functor, so PyTorch's special values stay. What made it fast (1 thread, 16M in (0, 20)):
// calling libmvec's double log spilled every live vector register around the call (Stirling
// alone 5.5 ns an element; an inline log: 2.3); both halves of a vec_f in one function so
// their chains interleave; steps formed independently instead of as a masked chain
// (lgamma 6.1 -> 3.2 ns, digamma 4.9 -> 3.6 ns).
#pragma once
#ifdef TP_VEC_LANES
#include <utility>

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif
namespace special_vec {
/// Half as many double lanes as vec_f has floats: one native register of doubles.
#if TP_VEC_LANES == 16
using vec_d = __m512d;
#elif TP_VEC_LANES == 8
using vec_d = __m256d;
#else
using vec_d = __m128d;
#endif
constexpr int kLanesD = TP_VEC_LANES / 2;
typedef float half_f __attribute__((vector_size(kLanesD * sizeof(float))));
typedef long long vec_i __attribute__((vector_size(sizeof(vec_d))));
typedef int vec_fi __attribute__((vector_size(sizeof(vec_f))));
constexpr int kParts = TP_VEC_LANES / kLanesD;  // double registers per vec_f

/// Bit i set where lane i of v has 0 < v < inf (NaN fails).
inline unsigned positive_finite_lanes(vec_f v) {
#if TP_VEC_LANES == 16
  return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ) &
         _mm512_cmp_ps_mask(v, _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
#elif TP_VEC_LANES == 8
  return unsigned(_mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ),
      _mm256_cmp_ps(v, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ))));
#else
  return unsigned(_mm_movemask_ps(_mm_and_ps(_mm_cmpgt_ps(v, _mm_setzero_ps()),
                                             _mm_cmplt_ps(v, _mm_set1_ps(__builtin_inff())))));
#endif
}

/// log(x) for positive normal x, inline (a call to libmvec's spilled every live vector
/// register): x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1),
/// |s| <= 0.172, by its Taylor series to s^21 (truncation below 1e-17 relative).
inline vec_d vlog(vec_d x) {
  vec_i b = __builtin_bit_cast(vec_i, x);
  vec_d m = __builtin_bit_cast(vec_d, (b & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
  // the biased exponent, as a double without an int64 conversion (none below AVX-512)
  vec_d e = __builtin_bit_cast(vec_d, (b >> 52) | 0x4330000000000000LL) - (4503599627370496.0 + 1023);
  auto big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = big ? e + 1 : e;
  vec_d s = (m - 1) / (m + 1), z = s * s, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
  vec_d p = ((2.0 / 3 + z * (2.0 / 5)) + z2 * (2.0 / 7 + z * (2.0 / 9))) +
            z4 * ((2.0 / 11 + z * (2.0 / 13)) + z2 * (2.0 / 15 + z * (2.0 / 17))) +
            z8 * (2.0 / 19 + z * (2.0 / 21));
  return e * 0.69314718055994530942 + (2 * s + s * z * p);
}

template <size_t... I>
inline void widen(vec_f v, vec_d (&x)[kParts], std::index_sequence<I...>) {
  x[0] = __builtin_convertvector(half_f(__builtin_shufflevector(v, v, I...)), vec_d);
  x[1] = __builtin_convertvector(half_f(__builtin_shufflevector(v, v, (I + kLanesD)...)), vec_d);
}
template <size_t... I>
inline vec_f narrow(const vec_d (&x)[kParts], std::index_sequence<I...>) {
  half_f lo = __builtin_convertvector(x[0], half_f), hi = __builtin_convertvector(x[1], half_f);
  return __builtin_bit_cast(vec_f, __builtin_shufflevector(lo, hi, I..., (I + kLanesD)...));
}

/// Runs dfn (in place on both halves of v, widened to double) on the lanes with 0 < x < inf
/// (kSigned: 0 < |x| < inf), and sfn (float -> float) on the others, which enter dfn as 1.
/// dfn sees both halves at once so their dependency chains interleave.
template <bool kSigned, class DFn, class SFn>
inline vec_f map_lanes(vec_f v, DFn dfn, SFn sfn) {
  static_assert(kParts == 2);
  constexpr unsigned kAll = (1u << TP_VEC_LANES) - 1;
  unsigned ok = positive_finite_lanes(kSigned ? __builtin_bit_cast(vec_f, __builtin_bit_cast(vec_fi, v) & 0x7fffffff) : v);
  float in[TP_VEC_LANES], out[TP_VEC_LANES];
  vec_f w = v;
  if (ok != kAll) {
    vec_store(in, v);
    for (int i = 0; i < TP_VEC_LANES; ++i) out[i] = (ok >> i & 1) ? in[i] : 1.f;
    w = vec_load(out);
  }
  vec_d x[kParts];
  widen(w, x, std::make_index_sequence<kLanesD>{});
  dfn(x);
  vec_f r = narrow(x, std::make_index_sequence<kLanesD>{});
  if (ok == kAll) return r;
  vec_store(out, r);
  for (int i = 0; i < TP_VEC_LANES; ++i)
    if (!(ok >> i & 1)) out[i] = sfn(in[i]);
  return vec_load(out);
}

/// R(t) = lgamma(2.5 + t) / (0.5 + t) on [-1/2, 1/2], by Estrin's scheme (short chains).
inline vec_d lgamma_r(vec_d t) {
  vec_d t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
  vec_d a = (0.5693657409458376 + t * 0.26758179939881) + t2 * (-0.04480584269709123 + t * 0.010877001514083384);
  vec_d b = (-0.00309518231235729 + t * 0.0009610979358148764) +
            t2 * (-0.0003150588022985425 + t * 0.00010710003617003032);
  vec_d c = (-3.7358455763413416e-05 + t * 1.3277697217859539e-05) +
            t2 * (-4.756903759794048e-06 + t * 1.7339935811673732e-06);
  vec_d d = -7.256795690806115e-07 + t * 2.692528778308433e-07;
  return (a + t4 * b) + t8 * (c + t4 * d);
}

/// log Gamma(x) for 0 < x < inf (Note [Vectorised float32 lgamma and digamma]). Below 8, x
/// moves into [2, 3) by whole steps whose factors are formed independently (no chain); both
/// ranges share one log, of x (Stirling) or of the steps' product.
inline void lgamma_positive(vec_d (&x)[kParts]) {
  long any_big = 0, all_big = -1;
  for (int j = 0; j < kParts; ++j) {
    auto big = x[j] >= 8;
    for (int i = 0; i < kLanesD; ++i) any_big |= big[i], all_big &= big[i];
  }
  for (int j = 0; j < kParts; ++j) {
    vec_d v = x[j], one = vec_d{} + 1, arg = v, small = vec_d{}, sign = one;
    if (!all_big) {
      vec_d f1 = v - 1, f2 = v - 2, f3 = v - 3, f4 = v - 4, f5 = v - 5;  // exact
      vec_d down = ((f1 >= 2 ? f1 : one) * (f2 >= 2 ? f2 : one)) *
                   ((f3 >= 2 ? f3 : one) * (f4 >= 2 ? f4 : one)) * (f5 >= 2 ? f5 : one);
      vec_d y = f5 >= 2 ? f5 : f4 >= 2 ? f4 : f3 >= 2 ? f3 : f2 >= 2 ? f2 : f1 >= 2 ? f1 : v;
      auto up1 = v < 2, up2 = v < 1;
      vec_d up = v * (up2 ? v + 1 : one);  // exact
      y = up2 ? v + 2 : up1 ? v + 1 : y;
      vec_d f = y - 2;
      small = f * lgamma_r(f - 0.5);
      sign = up1 ? -one : one;
      arg = v >= 8 ? v : up1 ? up : down;
    }
    vec_d l = vlog(arg), res = small + sign * l;
    if (any_big) {  // Stirling's series, terms to B14
      vec_d r = 1 / v, z = r * r;
      vec_d s = 1.0 / 1188 - z * (691.0 / 360360 - z * (1.0 / 156));
      s = 1.0 / 12 - z * (1.0 / 360 - z * (1.0 / 1260 - z * (1.0 / 1680 - z * s)));
      vec_d large = (v - 0.5) * l - v + (0.91893853320467274178 + r * s);
      res = v >= 8 ? large : res;
    }
    x[j] = res;
  }
}

/// sin(pi f) for |f| <= 1/2: its Taylor series to f^21 (truncation ~1e-17 relative).
inline vec_d sinpi(vec_d f) {
  vec_d u = f * f, u2 = u * u, u4 = u2 * u2, u8 = u4 * u4;
  vec_d p = ((3.141592653589793 - u * 5.16771278004997) + u2 * (2.5501640398773455 - u * 0.5992645293207921)) +
            u4 * ((0.08214588661112823 - u * 0.0073704309457143504) +
                  u2 * (0.00046630280576761255 - u * 2.1915353447830217e-05)) +
            u8 * ((7.952054001475513e-07 - u * 2.2948428997269873e-08) + u2 * 5.392664662608129e-10);
  return f * p;
}

/// log|Gamma(x)| for finite x != 0: below 0 by reflection, log(pi / |sin(pi x)|) - lgamma(1 - x),
/// sin(pi x) from the exact distance to the nearest integer (+inf at the poles, as PyTorch's).
inline void lgamma_finite(vec_d (&x)[kParts]) {
  vec_d y[kParts];
  long any_neg = 0;
  for (int j = 0; j < kParts; ++j) {
    auto neg = x[j] < 0;
    y[j] = neg ? 1 - x[j] : x[j];
    for (int i = 0; i < kLanesD; ++i) any_neg |= neg[i];
  }
  lgamma_positive(y);
  for (int j = 0; j < kParts; ++j) {
    if (!any_neg) {
      x[j] = y[j];
      continue;
    }
    vec_d v = x[j], one = vec_d{} + 1;
    // round to nearest by 1.5 * 2^52 (exact below 2^51); float32 values from 2^23 up are whole
    vec_d f = v - ((v + 6755399441055744.0) - 6755399441055744.0);
    auto pole = f == 0 || v <= -8388608.0;
    vec_d s = sinpi(pole ? one * 0.5 : f);
    vec_d refl = vlog(3.141592653589793 / (s < 0 ? -s : s)) - y[j];
    refl = pole ? one * __builtin_inf() : refl;
    x[j] = v < 0 ? refl : y[j];
  }
}

/// psi(x) for 0 < x < inf (Note [Vectorised float32 lgamma and digamma]): the sum of
/// 1/(x + k) over the steps to x >= 10 as fractions added pairwise (independent terms).
inline void digamma_positive(vec_d (&x)[kParts]) {
  for (int j = 0; j < kParts; ++j) {
    vec_d v = x[j], one = vec_d{} + 1, num[10], den[10], end = v;
#pragma GCC unroll 10
    for (int k = 0; k < 10; ++k) {
      vec_d xk = v + k;
      auto m = xk < 10;
      num[k] = m ? one : vec_d{};
      den[k] = m ? xk : one;
      end = m ? xk + 1 : end;
    }
    auto add = [&](int a, int b) {  // n/d + n'/d' = (n d' + n' d) / (d d')
      num[a] = num[a] * den[b] + num[b] * den[a];
      den[a] = den[a] * den[b];
    };
    add(0, 1), add(2, 3), add(4, 5), add(6, 7), add(8, 9);
    add(0, 2), add(4, 6), add(0, 4), add(0, 8);
    vec_d q = 1 / (end * den[0]), inv = den[0] * q, z = inv * inv;
    vec_d tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                 z * (691.0 / 32760 - z * (1.0 / 12)))))));
    x[j] = vlog(end) - 0.5 * inv - tail - num[0] * end * q;
  }
}

}  // namespace special_vec
#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
#endif  // TP_VEC_LANES
