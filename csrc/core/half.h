// 16-bit floating types stored as raw bits; arithmetic happens in float.
#pragma once
#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace tp {

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

/// IEEE binary16.
struct Half {
  uint16_t x;
  Half() = default;
  static Half from_bits(uint16_t b) { Half h; h.x = b; return h; }
  Half(float f) : x(from_float(f)) {}
  operator float() const { return to_float(x); }

  static uint16_t from_float(float f) {
#if defined(__F16C__)
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    uint32_t u = float_to_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    if (u >= 0x7f800000u) return sign | 0x7c00u | (u > 0x7f800000u ? 0x200u : 0u);
    if (u >= 0x477ff000u) return sign | 0x7c00u;  // overflows to inf after rounding
    if (u < 0x38800000u) {                          // subnormal or zero in half
      float a = bits_to_float(u) + 0.5f;            // shifts the mantissa into place, RNE
      return sign | (float_to_bits(a) - 0x3f000000u);
    }
    uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return sign | (u >> 13);
#endif
  }
  static float to_float(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u) return bits_to_float(sign | 0x7f800000u | (uint32_t(em & 0x3ffu) << 13));
    if (em < 0x0400u) {
      float v = float(em) * 5.9604644775390625e-08f;  // em * 2^-24
      return sign ? -v : v;
    }
    return bits_to_float(sign | ((em << 13) + 0x38000000u));
#endif
  }
};

/// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t x;
  BFloat16() = default;
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
  BFloat16(float f) : x(from_float(f)) {}
  operator float() const { return bits_to_float(uint32_t(x) << 16); }

  static uint16_t from_float(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

}  // namespace tp
