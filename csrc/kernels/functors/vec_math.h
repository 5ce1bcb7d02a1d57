// Vectorised float32 exp, log, sin, cos, tanh and sigmoid at the width of the CPU level
// (Note [float32 math]). Included by pointwise.h once vec_f (the level's __m128 / __m256 /
// __m512) is defined; written once with GCC's generic vector operators, so every level runs
// the same operations in the same order.
#pragma once
#include <cmath>
#include <cstdint>
#include <immintrin.h>

// Note [float32 math]
// libmvec, which these replaced, was up to 2.6 ulp off the correctly rounded result for
// exp, 3.9 for log and 1.8 for sin/cos (PyTorch's Sleef: within ~0.6), and evaluating
// libmvec's double functions instead cost 2-4.5x the time. Here:
//  * exp and log are evaluated in float: Cody-Waite reduction with a 16-bit ln2 so n*ln2_hi
//    and x - n*ln2_hi are exact, a fitted polynomial for what is left after the leading
//    terms, and the leading terms added with an exact two-sum (Fast2Sum) so that only the
//    last addition rounds at full size.
//  * sin and cos are evaluated in float for |x| <= 800: k = round(x 2/pi), pi/2 in four
//    parts, the reduced argument carried as two floats (exact two-sum), polynomials for what
//    is left after r and 1 - r^2/2. Lanes past 800 take a double-lane path (pi/2 with a
//    33-bit head, k * head exact for |k| < 2^20), lanes past 1.5e6 and inf glibc's double
//    sin/cos one by one.
//  * tanh is evaluated in double lanes (half the width, two halves per vector) with an expm1
//    polynomial good to ~2^-37 and one double division, then rounded once: the float result
//    is the correctly rounded one unless the exact value lies within ~2^-13 ulp of a
//    rounding boundary. sigmoid keeps PyTorch's float formula (1 / (1 + exp(-x)), 1.5-2.5
//    ulp off) over our exp: see its note below.
// The polynomials come from scripts/fit_float32_math.py. No multiply-add is fused: the
// compiler would contract a * b + c only where the level has FMA, and results would then
// differ between levels; `nc` hides each product from the contraction (no instruction).
// Accuracy and speed figures: docs/architecture.md, "CPU kernels and capability levels".

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif
namespace vmath {

typedef int32_t vi32 __attribute__((vector_size(sizeof(vec_f))));
typedef uint32_t vu32 __attribute__((vector_size(sizeof(vec_f))));
typedef int64_t vi64 __attribute__((vector_size(sizeof(vec_f))));
typedef uint64_t vu64 __attribute__((vector_size(sizeof(vec_f))));

#if TP_VEC_LANES == 16
using vec_d = __m512d;
inline vec_d lo_d(vec_f x) { return _mm512_cvtps_pd(_mm512_castps512_ps256(x)); }
inline vec_d hi_d(vec_f x) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)); }
inline vec_f join_f(vec_d lo, vec_d hi) {
  return _mm512_insertf32x8(_mm512_zextps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}
inline bool any_gt(vec_f a, float b) { return _mm512_cmp_ps_mask(a, _mm512_set1_ps(b), _CMP_GT_OQ) != 0; }
#define TP_NC_REG "+v"
#elif TP_VEC_LANES == 8
using vec_d = __m256d;
inline vec_d lo_d(vec_f x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
inline vec_d hi_d(vec_f x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }
inline vec_f join_f(vec_d lo, vec_d hi) { return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)); }
inline bool any_gt(vec_f a, float b) { return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(b), _CMP_GT_OQ)) != 0; }
#define TP_NC_REG "+x"
#else
using vec_d = __m128d;
inline vec_d lo_d(vec_f x) { return _mm_cvtps_pd(x); }
inline vec_d hi_d(vec_f x) { return _mm_cvtps_pd(_mm_movehl_ps(x, x)); }
inline vec_f join_f(vec_d lo, vec_d hi) { return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi)); }
inline bool any_gt(vec_f a, float b) { return _mm_movemask_ps(_mm_cmpgt_ps(a, _mm_set1_ps(b))) != 0; }
#define TP_NC_REG "+x"
#endif

/// The value unchanged, opaque to the compiler: a product passed through nc is never fused
/// into a following addition (Note [float32 math]).
template <class V> inline V nc(V v) {
  asm("" : TP_NC_REG(v));
  return v;
}
#undef TP_NC_REG

template <class V, class S> inline V bc(S s) { return V{} + s; }
inline vec_f fbits(vi32 i) { return (vec_f)i; }
inline vi32 ibits(vec_f f) { return (vi32)f; }

// ---------------------------------------------------------------- float exp
inline vec_f exp(vec_f x) {
  // Past the limits the result is 0 or inf whatever x is; clamping keeps n in range.
  // NaN compares false and goes through as NaN.
  x = x < -110.f ? bc<vec_f>(-110.f) : x;
  x = x > 100.f ? bc<vec_f>(100.f) : x;
  const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const vec_f t = nc(x * 1.44269502f) + magic;
  const vec_f n = t - magic;
  const vi32 ni = ibits(t) - 0x4B400000;
  // ln2 = kLn2Hi + kLn2Lo, kLn2Hi a multiple of 2^-16: n * kLn2Hi and x - n * kLn2Hi exact
  const float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860677e-06f;
  const vec_f r1 = x - nc(n * kLn2Hi);
  const vec_f rlo = -nc(n * kLn2Lo);
  const vec_f r = r1 + rlo;
  // e^r = 1 + r + r^2 P(r); q = rlo + r^2 P(r)
  vec_f p = bc<vec_f>(0.000197901347f);
  p = nc(p * r) + 0.00139448687f;
  p = nc(p * r) + 0.00833349861f;
  p = nc(p * r) + 0.0416662917f;
  p = nc(p * r) + 0.166666657f;
  p = nc(p * r) + 0.5f;
  const vec_f q = rlo + nc(nc(r * r) * p);
  const vec_f s = 1.f + r1;
  const vec_f e = (1.f - s) + r1;  // exact: 1 + r1 = s + e
  const vec_f m = s + (e + q);
  // 2^n in two factors, so that neither over/underflows and only the last product rounds
  // (once, into a subnormal or to inf/0 past the ends)
  const vi32 n1 = ni >> 1, n2 = ni - n1;
  const vec_f s1 = fbits((vi32)((vu32)(n1 + 127) << 23));
  const vec_f s2 = fbits((vi32)((vu32)(n2 + 127) << 23));
  return nc(m * s1) * s2;
}

// ---------------------------------------------------------------- float log
inline vec_f log(vec_f x) {
  // subnormals: scale into the normal range first
  const auto sub = x < 1.17549435e-38f;
  const vec_f xs = sub ? nc(x * 8388608.f) : x;
  vi32 ebias = sub ? bc<vi32>(23) : bc<vi32>(0);
  // x = 2^e * m, m in [sqrt(1/2), sqrt(2))
  const vi32 ix = ibits(xs) - 0x3F3504F3;
  const vi32 e = (ix >> 23) - ebias;
  const vec_f f = fbits((ix & 0x7FFFFF) + 0x3F3504F3) - 1.f;  // exact
  const vec_f ef = __builtin_convertvector(e, vec_f);
  // ln2 = kLn2Hi + kLn2Lo with kLn2Hi a multiple of 2^-16: e * kLn2Hi exact
  const float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860677e-06f;
  const vec_f hi = nc(ef * kLn2Hi);
  const vec_f lo = nc(ef * kLn2Lo);
  const vec_f s = hi + f;
  const vec_f err = (hi - s) + f;  // exact: |hi| >= |f| unless hi is 0
  // log(1 + f) = f - f^2/2 + f^3 R(f)
  vec_f p = bc<vec_f>(0.067466341f);
  p = nc(p * f) - 0.116760515f;
  p = nc(p * f) + 0.118883789f;
  p = nc(p * f) - 0.124055438f;
  p = nc(p * f) + 0.142195195f;
  p = nc(p * f) - 0.166679963f;
  p = nc(p * f) + 0.200021207f;
  p = nc(p * f) - 0.250000089f;
  p = nc(p * f) + 0.333333135f;
  const vec_f f2 = nc(f * f);
  const vec_f corr = nc(nc(f2 * f) * p) - nc(f2 * 0.5f);
  vec_f y = s + ((err + lo) + corr);
  // log(+inf) = inf, log(0) = -inf, log(x < 0) = NaN, NaN stays
  y = x == __builtin_inff() ? x : y;
  y = x == 0.f ? bc<vec_f>(-__builtin_inff()) : y;
  y = x < 0.f ? bc<vec_f>(__builtin_nanf("")) : y;
  y = x != x ? x : y;
  return y;
}

// ---------------------------------------------------------------- double-lane helpers
/// e^r - 1 for |r| <= ln2/2 (a little over), relative error ~2^-37
inline vec_d expm1_reduced(vec_d r) {
  vec_d p = bc<vec_d>(2.4796363156865752e-05);
  p = nc(p * r) + 0.00019905100148038469;
  p = nc(p * r) + 0.0013888985859129696;
  p = nc(p * r) + 0.0083332887882049088;
  p = nc(p * r) + 0.041666665946412357;
  p = nc(p * r) + 0.16666666754922135;
  p = nc(p * r) + 0.5000000000106587;
  return r + nc(nc(r * r) * p);
}

/// y = n ln2 + r, |r| <= ln2/2 (a little over); returns r and sets *scale = 2^n. |y| < 900.
inline vec_d reduce_ln2(vec_d y, vec_d* scale) {
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  const vec_d t = nc(y * 1.4426950408889634) + magic;
  const vec_d n = t - magic;
  const vi64 ni = (vi64)t - (vi64)bc<vec_d>(magic);
  *scale = (vec_d)((vu64)(ni + 1023) << 52);
  // ln2's head has 42 bits: n * head exact for |n| < 2^11
  return (y - nc(n * 0.69314718055989033)) - nc(n * 5.4979230187083712e-14);
}

// ---------------------------------------------------------------- tanh, sigmoid
inline vec_d tanh_d(vec_d x) {
  // tanh|x| = e / (e + 2), e = expm1(2|x|); tanh|x| rounds to 1 from 9.02 on
  const vec_d sign = (vec_d)((vu64)x & 0x8000000000000000ull);
  vec_d a = (vec_d)((vu64)x & 0x7FFFFFFFFFFFFFFFull);
  a = a > 10.0 ? bc<vec_d>(10.0) : a;
  vec_d sc;
  const vec_d r = reduce_ln2(a + a, &sc);
  const vec_d em = expm1_reduced(r);
  const vec_d e = nc(sc * em) + (sc - 1.0);  // 2^n (1 + em) - 1; sc - 1 exact (n <= 29)
  const vec_d t = e / (e + 2.0);
  return (vec_d)((vu64)t | (vu64)sign);
}
inline vec_f tanh(vec_f x) { return join_f(tanh_d(lo_d(x)), tanh_d(hi_d(x))); }

// sigmoid: PyTorch's float formula 1 / (1 + e^-x) over the float exp above (within 3 ulp; 0
// from -88.7 down, where e^-x overflows, as PyTorch). The double-lane form (0.5 ulp, like
// tanh's) measured 2.06x PyTorch's time at 2 threads and 2.35x at 1 on 16M elements
// (2026-12-07), a loss on a hot activation, so it was dropped.
inline vec_f sigmoid(vec_f x) { return 1.f / (1.f + exp(-x)); }

// ---------------------------------------------------------------- sin, cos
/// sin (cos_shift 0) or cos (cos_shift 1) of |x| <= 1.5e6 in double lanes (vectors with a
/// lane past 800)
inline vec_d sincos_d(vec_d x, int64_t cos_shift) {
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  const vec_d t = nc(x * 0.63661977236758138) + magic;  // 2/pi
  const vec_d k = t - magic;
  const vi64 q = ((vi64)t - (vi64)bc<vec_d>(magic)) + cos_shift;
  // pi/2 = kHead + kTail, kHead with 33 significant bits: k * kHead exact for |k| < 2^20
  const vec_d r = (x - nc(k * 1.5707963267341256)) - nc(k * 6.0771005065061922e-11);
  const vec_d z = nc(r * r);
  vec_d sp = bc<vec_d>(2.7180464599071449e-06);
  sp = nc(sp * z) - 0.00019839304414111608;
  sp = nc(sp * z) + 0.0083333292805193339;
  sp = nc(sp * z) - 0.16666666640588157;
  const vec_d sn = r + nc(nc(z * r) * sp);
  vec_d cp = bc<vec_d>(-2.720504549414072e-07);
  cp = nc(cp * z) + 2.4799451539532362e-05;
  cp = nc(cp * z) - 0.0013888883467211368;
  cp = nc(cp * z) + 0.041666666619106257;
  const vec_d cs = (1.0 - nc(z * 0.5)) + nc(nc(z * z) * cp);
  // quadrant q: sin, cos, -sin, -cos
  const vec_d v = (q & 1) != 0 ? cs : sn;
  return (vec_d)((vu64)v ^ ((vu64)(q & 2) << 62));
}

/// Lanes with |x| > 1.5e6 or inf: glibc's double function, rounded (rare)
template <class F>
inline vec_f fix_huge(vec_f x, vec_f ax, vec_f y, F fn) {
  if (__builtin_expect(any_gt(ax, 1.5e6f), 0)) {
    for (int i = 0; i < TP_VEC_LANES; ++i)
      if (!(ax[i] <= 1.5e6f)) y[i] = float(fn(double(x[i])));
  }
  return y;
}

/// sin (cos_shift 0) or cos (cos_shift 1) of |x| <= 800 in float lanes. pi/2 is four
/// parts, the first three of 15 bits (k < 2^9: k * part exact); x - k * kC1 is exact, and the
/// rest is carried as a two-float r + rl (an exact two-sum), so the reduced argument is
/// good to ~2^-40 relative and only the polynomial's last addition rounds at full size.
inline vec_f sincos_f(vec_f x, int32_t cos_shift) {
  const float magic = 12582912.f;  // 1.5 * 2^23
  const vec_f t = nc(x * 0.636619747f) + magic;
  const vec_f k = t - magic;
  const vi32 q = (ibits(t) - 0x4B400000) + cos_shift;
  const vec_f u = x - nc(k * 1.57080078125f);
  const vec_f b = -nc(k * -4.454515874385834e-06f);
  const vec_f s = u + b;  // two-sum: u + b = s + err exactly
  const vec_f bb = s - u;
  const vec_f err = (u - (s - bb)) + (b - bb);
  const vec_f lo = (err - nc(k * 6.077272018956137e-11f)) - nc(k * -1.7151245100058819e-15f);
  const vec_f r = s + lo;
  const vec_f rl = (s - r) + lo;
  const vec_f z = nc(r * r);
  const vec_f h = nc(z * 0.5f);
  vec_f sp = bc<vec_f>(2.71804652e-06f);
  sp = nc(sp * z) - 0.000198393042f;
  sp = nc(sp * z) + 0.00833332911f;
  sp = nc(sp * z) - 0.166666672f;
  // sin(r + rl) = r + rl (1 - r^2/2) + r^3 S(r^2)
  const vec_f sn = r + ((rl - nc(rl * h)) + nc(nc(z * r) * sp));
  vec_f cp = bc<vec_f>(-2.72050443e-07f);
  cp = nc(cp * z) + 2.47994521e-05f;
  cp = nc(cp * z) - 0.00138888834f;
  cp = nc(cp * z) + 0.0416666679f;
  // cos(r + rl) = 1 - r^2/2 + r^4 C(r^2) - r rl; 1 - h = w + e exactly
  const vec_f w = 1.f - h;
  const vec_f e = (1.f - w) - h;
  const vec_f cs = w + (e + (nc(nc(z * z) * cp) - nc(r * rl)));
  // quadrant q: sin, cos, -sin, -cos
  const vec_f v = (q & 1) != 0 ? cs : sn;
  return fbits(ibits(v) ^ ((q & 2) << 30));
}

// Lanes past 800 take the double path; the choice is per lane, so that a value gives the
// same bits whatever its neighbours (and so at every level's width).
inline vec_f sin(vec_f x) {
  const vec_f ax = (vec_f)((vu32)x & 0x7FFFFFFFu);
  vec_f y = sincos_f(x, 0);
  if (__builtin_expect(any_gt(ax, 800.f), 0)) {
    vec_f yd = join_f(sincos_d(lo_d(x), 0), sincos_d(hi_d(x), 0));
    yd = fix_huge(x, ax, yd, [](double v) { return std::sin(v); });
    y = ax > 800.f ? yd : y;
  }
  return x == 0.f ? x : y;  // sin(-0) = -0 (the polynomial's sum gives +0)
}
inline vec_f cos(vec_f x) {
  const vec_f ax = (vec_f)((vu32)x & 0x7FFFFFFFu);
  vec_f y = sincos_f(x, 1);
  if (__builtin_expect(any_gt(ax, 800.f), 0)) {
    vec_f yd = join_f(sincos_d(lo_d(x), 1), sincos_d(hi_d(x), 1));
    yd = fix_huge(x, ax, yd, [](double v) { return std::cos(v); });
    y = ax > 800.f ? yd : y;
  }
  return y;
}

}  // namespace vmath
#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
