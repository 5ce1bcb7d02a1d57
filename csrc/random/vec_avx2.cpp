// AVX2 kernels of the random ops. Compiled with -mavx2 -mfma -ffp-contract=off: every
// fused multiply-add below is written out, placed where PyTorch's AVX2 build has one
// (its compiler fuses each polynomial step), so the results match it bit for bit.
//
// The log and sincos are the classic cephes single-precision approximations (range
// reduction, then minimax polynomials); the constants are cephes'.
#include "random/vec_avx2.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace tp::random {

namespace {

inline __m256 splat(float v) { return _mm256_set1_ps(v); }
inline __m256 bits(int32_t v) { return _mm256_castsi256_ps(_mm256_set1_epi32(v)); }

/// log(x) for x > 0 (NaN bits for x <= 0): x = m 2^e with m in [sqrt(1/2), sqrt(2)),
/// log(x) = e log(2) + log1p(m - 1) by a degree-9 polynomial.
__m256 log8(__m256 x) {
  const __m256 one = splat(1.0f);
  const __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
  x = _mm256_max_ps(x, bits(0x00800000));  // flush denormals to the smallest normal
  __m256i expo = _mm256_srli_epi32(_mm256_castps_si256(x), 23);
  x = _mm256_or_ps(_mm256_and_ps(x, bits(~0x7f800000)), splat(0.5f));  // mantissa in [0.5, 1)
  expo = _mm256_sub_epi32(expo, _mm256_set1_epi32(0x7f));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(expo), one);
  // below sqrt(1/2): use 2m - 1 and one less in the exponent
  const __m256 small = _mm256_cmp_ps(x, splat(0.707106781186547524f), _CMP_LT_OS);
  const __m256 extra = _mm256_and_ps(x, small);
  x = _mm256_sub_ps(x, one);
  e = _mm256_sub_ps(e, _mm256_and_ps(one, small));
  x = _mm256_add_ps(x, extra);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = splat(7.0376836292e-2f);
  y = _mm256_fmadd_ps(y, x, splat(-1.1514610310e-1f));
  y = _mm256_fmadd_ps(y, x, splat(1.1676998740e-1f));
  y = _mm256_fmadd_ps(y, x, splat(-1.2420140846e-1f));
  y = _mm256_fmadd_ps(y, x, splat(1.4249322787e-1f));
  y = _mm256_fmadd_ps(y, x, splat(-1.6668057665e-1f));
  y = _mm256_fmadd_ps(y, x, splat(2.0000714765e-1f));
  y = _mm256_fmadd_ps(y, x, splat(-2.4999993993e-1f));
  y = _mm256_fmadd_ps(y, x, splat(3.3333331174e-1f));
  y = _mm256_mul_ps(y, x);
  y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, splat(-2.12194440e-4f)));
  y = _mm256_fnmadd_ps(z, splat(0.5f), y);
  x = _mm256_add_ps(x, y);
  x = _mm256_fmadd_ps(e, splat(0.693359375f), x);
  return _mm256_or_ps(x, invalid);
}

/// sin(x) and cos(x): reduce by multiples of pi/4 in three parts (extended precision),
/// then a sine or cosine polynomial per octant.
void sincos8(__m256 x, __m256* s, __m256* c) {
  __m256 sign_sin = _mm256_and_ps(x, bits(int32_t(0x80000000u)));
  x = _mm256_and_ps(x, bits(0x7fffffff));
  __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(x, splat(1.27323954473516f)));  // |x| 4/pi
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
  const __m256 y0 = _mm256_cvtepi32_ps(j);
  const __m256 swap_sin = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_and_si256(j, _mm256_set1_epi32(4)), 29));
  const __m256 use_cos_poly = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
  x = _mm256_fmadd_ps(y0, splat(-0.78515625f), x);
  x = _mm256_fmadd_ps(y0, splat(-2.4187564849853515625e-4f), x);
  x = _mm256_fmadd_ps(y0, splat(-3.77489497744594108e-8f), x);
  const __m256 sign_cos = _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), _mm256_set1_epi32(4)), 29));
  sign_sin = _mm256_xor_ps(sign_sin, swap_sin);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 yc = splat(2.443315711809948e-5f);  // cos(x) = 1 - z/2 + z^2 P(z)
  yc = _mm256_fmadd_ps(yc, z, splat(-1.388731625493765e-3f));
  yc = _mm256_fmadd_ps(yc, z, splat(4.166664568298827e-2f));
  yc = _mm256_mul_ps(yc, z);
  yc = _mm256_fmsub_ps(yc, z, _mm256_mul_ps(z, splat(0.5f)));
  yc = _mm256_add_ps(yc, splat(1.0f));
  __m256 ys = splat(-1.9515295891e-4f);  // sin(x) = x + x z Q(z)
  ys = _mm256_fmadd_ps(ys, z, splat(8.3321608736e-3f));
  ys = _mm256_fmadd_ps(ys, z, splat(-1.6666654611e-1f));
  ys = _mm256_mul_ps(ys, z);
  ys = _mm256_fmadd_ps(ys, x, x);
  const __m256 sin_from_s = _mm256_and_ps(use_cos_poly, ys);
  const __m256 sin_from_c = _mm256_andnot_ps(use_cos_poly, yc);
  ys = _mm256_sub_ps(ys, sin_from_s);
  yc = _mm256_sub_ps(yc, sin_from_c);
  *s = _mm256_xor_ps(_mm256_add_ps(sin_from_c, sin_from_s), sign_sin);
  *c = _mm256_xor_ps(_mm256_add_ps(yc, ys), sign_cos);
}

}  // namespace

void box_muller16_avx2(float* data, int64_t nblocks, float mean, float std) {
  const __m256 one = splat(1.0f), minus_two = splat(-2.0f);
  const __m256 two_pi = splat(float(2.0 * 3.14159265358979323846));
  const __m256 vmean = splat(mean), vstd = splat(std);
  for (int64_t b = 0; b < nblocks; ++b, data += 16) {
    const __m256 u1 = _mm256_sub_ps(one, _mm256_loadu_ps(data));
    const __m256 u2 = _mm256_loadu_ps(data + 8);
    const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(minus_two, log8(u1)));
    __m256 s, c;
    sincos8(_mm256_mul_ps(two_pi, u2), &s, &c);
    _mm256_storeu_ps(data, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), vstd, vmean));
    _mm256_storeu_ps(data + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, s), vstd, vmean));
  }
}

void uniform_float_fma_avx2(const uint32_t* w, float* out, int64_t n, float from, float span) {
  const __m256i mask = _mm256_set1_epi32(0xffffff);
  const __m256 scale = splat(1.0f / 16777216.0f), vspan = splat(span), vfrom = splat(from);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)), mask);
    __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(v), scale);
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(x, vspan, vfrom));
  }
  for (; i < n; ++i) {
    __m128 x = _mm_set_ss(float(w[i] & 0xffffff) * (1.0f / 16777216.0f));
    out[i] = _mm_cvtss_f32(_mm_fmadd_ss(x, _mm_set_ss(span), _mm_set_ss(from)));
  }
}

}  // namespace tp::random

#else  // no x86: never called (vector_capability() is false)

namespace tp::random {
void box_muller16_avx2(float*, int64_t, float, float) {}
void uniform_float_fma_avx2(const uint32_t*, float*, int64_t, float, float) {}
}  // namespace tp::random

#endif
