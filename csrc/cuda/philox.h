// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), callable from host C++ and from CUDA kernels, and the CUDA generators' scheme.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TP_HD __host__ __device__ __forceinline__
#else
#define TP_HD inline
#endif

// Note [Philox streams]
// A CUDA generator is (seed, offset), PyTorch's 16-byte state. `offset` counts 32-bit words
// and is always a multiple of 4, i.e. whole Philox blocks (PyTorch requires offset % 4 == 0
// in set_state too). One sampling launch of n elements reserves, on the host under the
// generator's mutex, ceil(n / K) blocks starting at counter c0 = offset / 4, and advances
// offset by 4 * ceil(n / K); K, the elements one block serves, is fixed per op and dtype.
// The kernel receives (seed, c0) by value. Element i (in the tensor's memory order: a
// contiguous tensor's i-th element) takes its values from block b = i / K, slot j = i % K:
//   words w0..w3 = Philox4x32-10(counter = (lo32(c0 + b), hi32(c0 + b), 0, 0),
//                                key = (lo32(seed), hi32(seed)))
// Nothing else enters: a value depends only on (seed, offset, i), never on the launch
// grid, the GPU model or the number of SMs, so a seed gives the same tensor everywhere,
// and `tp._C._philox_reference` recomputes any launch on the host bit for bit.
// 64-bit draws are x_j = w_{2j} | w_{2j+1} << 32. The transforms (random_samplers.h) use
// only correctly rounded operations (+ - * / sqrt fma, conversions) and their own
// log/exp/sincospi polynomials, never the device's approximate math, so host and device
// agree exactly. Per op, K and the value of slot j:
//   uniform_(a, b)    f32/f16/bf16: K=4, u = (w_j >> 8) 2^-24, fma(u, b - a, a) in float;
//                     f64: K=2, u = (x_j >> 11) 2^-53, fma in double. A value that equals
//                     b after rounding to the dtype becomes a (PyTorch's rule).
//   normal_(m, s)     Box-Muller on the pair (w_0, w_1) -> slots 0, 1 and (w_2, w_3) ->
//                     slots 2, 3 (float math, K=4): u1 = fl((w_even + 1) 2^-32) in (0, 1],
//                     u2 = (w_odd >> 8) 2^-24, r = sqrt(-2 log u1), slot 2k = fma(r
//                     cospi(2 u2), s, m), slot 2k+1 = fma(r sinpi(2 u2), s, m).
//                     f64: K=2, u1 = ((x_0 >> 11) + 1) 2^-53, u2 = (x_1 >> 11) 2^-53.
//   log_normal_(m, s) exp of normal_'s value.
//   exponential_(l)   K=4 (float): u = fl((w_j + 1) 2^-32), (0 - log u) / l; f64: K=2,
//                     u = ((x_j >> 11) + 1) 2^-53.
//   cauchy_(m, s)     K=4 (float): t = (2 (w_j >> 9) - 2^23 + 1) 2^-24 in (-1/2, 1/2),
//                     fma(s, sinpi(t) / cospi(t), m); f64: K=2, t = (2 (x_j >> 12) - 2^52
//                     + 1) 2^-53.
//   geometric_(p)     K=2, double math: u = (2 (x_j >> 12) + 1) 2^-53 in (0, 1),
//                     ceil(log u / log1p(-p)) (log1p(-p) computed on the host); integer
//                     dtypes saturate at their maximum.
//   random_(a, b)     range r = b - a <= 2^32: K=4, a + w_j % r; wider: K=2, a + x_j % r;
//                     the full int64 range: K=2, x_j as int64. random_() is random_(0,
//                     max + 1) (floats: 2^digits + 1).
//   bernoulli_(p)     K=4, w_j < p 2^32 (exact comparison in double); float64 outputs: K=2,
//                     (x_j >> 11) < p 2^53. p = 0 never and p = 1 always gives 1.
//   bernoulli_(P)     as bernoulli_(p) with p = P[i] (float64 outputs read P as double,
//                     others as float).
//   native_dropout    K=4, keep_i = w_j < (1 - p) 2^32; out = x * (keep_i ? s : 0) with
//                     s = 1 / (1 - p) rounded to the dtype (as PyTorch's CPU path scales).
//   randperm(n)       keys = random_'s over the whole int64 range (K=2, x_j); the result is
//                     their stable ascending argsort as uint64 (a CUB radix sort).
//   multinomial       without replacement or for one sample: over the row-major float32
//                     (float64 inputs: float64) probabilities, K=4, key_i = p_i / (0 - log u)
//                     with u = (2 (w_j >> 9) + 1) 2^-24 in (0, 1) (float64: K=2, u = (2 (x_j
//                     >> 12) + 1) 2^-53); the samples are each row's top keys (argmax for
//                     one). With replacement: K=2 over the row-major samples, u as for
//                     float64 keys, sample i of row r = the first c with cum[r, c] >= max(u
//                     cum[r, last], 2^-1074), cum = the rows' float64 cumsum.
//   poisson(rate)     K=1 with a stream per element: element i draws from the blocks with
//                     counter (lo32(c0 + i), hi32(c0 + i), t, 0), t = 0, 1, ... (all other
//                     launches use word 2 = 0 only, so streams never overlap), u = (2 (x >> 12)
//                     + 1) 2^-53 of x_0, then x_1, of each. Double math: rate 0 -> 0 (no
//                     draws); rate < 10: the count of running products of u above
//                     exp(-rate); from 10: Hoermann's PTRS (2 draws a try), log k! from a
//                     table below 16, else Stirling's series (poisson_value).

namespace tp::philox {

/// The four 32-bit words of one Philox block.
struct Block {
  uint32_t w[4];
};

/// The 64-bit product of two 32-bit words: one widening multiply on the GPU gives both
/// halves a Philox round needs (written in PTX: the compiler otherwise widens the round's
/// arithmetic to 64 bits).
TP_HD uint64_t mul_wide(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint64_t p;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
  return p;
#else
  return uint64_t(a) * b;
#endif
}

/// Philox4x32 with 10 rounds: the counter (c0..c3) encrypted under the key (k0, k1).
TP_HD Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                          uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule steps
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint64_t p0 = mul_wide(kMul0, c0), p1 = mul_wide(kMul1, c2);
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return Block{{c0, c1, c2, c3}};
}

/// Block `counter` of the stream keyed by `seed` (Note [Philox streams]).
TP_HD Block block_at(uint64_t seed, uint64_t counter) {
  return philox4x32_10(uint32_t(counter), uint32_t(counter >> 32), 0u, 0u, uint32_t(seed),
                       uint32_t(seed >> 32));
}

/// The 64-bit draw x_j of a block (j = 0, 1).
TP_HD uint64_t draw64(const Block& b, int j) {
  return uint64_t(b.w[2 * j]) | (uint64_t(b.w[2 * j + 1]) << 32);
}

/// What a launch passes to its kernel: the key and the first block's counter. A launch
/// captured into a CUDA graph passes `state` instead (Note [Philox in graphs], cuda/graphs/
/// graph.h): the key and the counter at the start of the replay, which the replay writes
/// there, and `counter` is then the launch's blocks past that start.
struct LaunchArgs {
  uint64_t seed;
  uint64_t counter;
  const uint64_t* state = nullptr;  // device memory: {seed, counter at replay start}
};

/// The key and counter a kernel draws with: `a` itself outside graphs.
TP_HD LaunchArgs resolve(LaunchArgs a) {
  if (a.state) return LaunchArgs{a.state[0], a.state[1] + a.counter, nullptr};
  return a;
}

}  // namespace tp::philox
