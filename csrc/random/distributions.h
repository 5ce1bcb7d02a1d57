// The transforms from generator words to samples, as PyTorch's CPU kernels apply them
// (DistributionsHelper / TransformationHelper there). `fused` is
// random::vector_capability(): whether PyTorch's build fuses `a * b + c` (capability.h).
#pragma once
#include <cmath>
#include <cstdint>

#include "random/cpu_generator.h"

namespace tp::random {

constexpr double kPi = 3.14159265358979323846;

/// A float in [0, 1) from the low 24 bits of a word (uniform_real_distribution<float>).
inline float uniform24(uint32_t w) { return float(w & 0xffffffu) * (1.0f / 16777216.0f); }
/// A double in [0, 1) from the low 53 bits of a 64-bit draw.
inline double uniform53(uint64_t w) {
  return double(w & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

inline double muladd(double a, double b, double c, bool fused) {
  return fused ? std::fma(a, b, c) : a * b + c;
}
inline float muladd(float a, float b, float c, bool fused) {
  return fused ? std::fmaf(a, b, c) : a * b + c;
}

/// One draw of normal_distribution<double>(mean, std): Box-Muller on two 53-bit
/// uniforms, returning r cos(theta) and keeping r sin(theta) for the next draw.
inline double normal_draw(CPUGenerator& g, double mean, double std, bool fused) {
  double z;
  if (g.next_double_normal) {
    z = *g.next_double_normal;
    g.next_double_normal.reset();
  } else {
    const double u1 = uniform53(g.random64());
    const double u2 = uniform53(g.random64());
    const double r = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * kPi * u1;
    g.next_double_normal = r * std::sin(theta);
    z = r * std::cos(theta);
  }
  return muladd(z, std, mean, fused);
}

/// sample_poisson: Knuth's product method below rate 10, Hormann's transformed
/// rejection (PTRS) from 10 on; every uniform is a 53-bit draw.
int64_t poisson_draw(CPUGenerator& g, double lambda);

}  // namespace tp::random
