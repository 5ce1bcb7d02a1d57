// AVX2 kernels of the random ops (random/vec_avx2.cpp is compiled with -mavx2 -mfma);
// callers check random::vector_capability() first.
#pragma once
#include <cstdint>

namespace tp::random {

/// The Box-Muller transform of PyTorch's AVX2 build, in place on `nblocks` consecutive
/// blocks of 16 uniforms u: x[j] = r cos(t) * std + mean, x[j + 8] = r sin(t) * std + mean
/// with r = sqrt(-2 log(1 - u[j])), t = 2 pi u[j + 8] (8-wide cephes-style log and sincos).
void box_muller16_avx2(float* data, int64_t nblocks, float mean, float std);

/// out[i] = fma(float(w[i] & 0xffffff) * 2^-24, span, from): uniform_ on float32 words.
void uniform_float_fma_avx2(const uint32_t* w, float* out, int64_t n, float from, float span);

}  // namespace tp::random
