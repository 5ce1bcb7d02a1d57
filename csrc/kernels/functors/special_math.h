// Scalar special functions the C library lacks (erfinv) and lerp with PyTorch's formula.
#pragma once
#include <cmath>
#include <limits>

#include "core/complex.h"
#include "core/cpu_capability.h"
#include "core/macros.h"

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif

/// Inverse error function: a rational first guess refined by Newton steps on erf.
template <class T>
TP_HD inline T erfinv(T y) {
  if (y != y || y < T(-1) || y > T(1)) return std::numeric_limits<T>::quiet_NaN();
  if (y == T(1)) return std::numeric_limits<T>::infinity();
  if (y == T(-1)) return -std::numeric_limits<T>::infinity();
  double x = double(y);
  // Giles' single-precision approximation as the starting point.
  double w = -std::log((1.0 - x) * (1.0 + x)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double r = p * x;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) r -= (std::erf(r) - x) / (kTwoOverSqrtPi * std::exp(-r * r));
  return T(r);
}

/// PyTorch's lerp: exact at both ends, stable for weights on either side of 0.5.
template <class T>
TP_HD inline T lerp(T a, T b, T w) {
  T d = b - a;
  bool small;
  if constexpr (kComplex<T>) small = abs(w) < real_t<T>(0.5);  // the modulus, as PyTorch
  else small = std::abs(w) < T(0.5);
  return small ? a + w * d : b - d * (T(1) - w);
}

#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
