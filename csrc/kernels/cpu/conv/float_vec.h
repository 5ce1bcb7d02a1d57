#pragma once
// GCC vectors of floats for the convolution kernels (conv_*_kernel.cpp). For the per-level
// kernel files only: its templates live in TP_CPU_NS (Note [CPU capability]).
#include <cstring>
#include <utility>

#include "core/cpu_capability.h"

namespace tp::cpu::TP_CPU_NS {

/// FloatVec<W>::type: W floats in one register.
template <int W>
struct FloatVec {
  typedef float type __attribute__((vector_size(W * sizeof(float))));
};

/// The vector at p (any alignment).
template <class V>
inline V vload(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Stores v at p (any alignment).
template <class V>
inline void vstore(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

template <class V, size_t... I>
inline V vsplat_lanes(float x, std::index_sequence<I...>) {
  return V{((void)I, x)...};
}

/// x in every lane: a broadcast (`V{} + x` would add 0 first, for -0.0, and broadcast from a
/// register, on the port the multiply-adds need).
template <class V>
inline V vsplat(float x) {
  return vsplat_lanes<V>(x, std::make_index_sequence<sizeof(V) / sizeof(float)>{});
}

}  // namespace tp::cpu::TP_CPU_NS
