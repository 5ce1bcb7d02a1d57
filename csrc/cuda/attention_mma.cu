// Fused scaled dot-product attention on mma.sync (float16 / bfloat16, head dims 64 and 128):
// the FlashAttention-2 scheme with S, P and the accumulators in registers, beside the WMMA kernels.
//
// Note [Flash attention on mma.sync]: the contract is Note [Flash attention]'s (attention_kernels.cu);
// flash_attention_forward / _backward come here when flash_mma_enabled() (on by default since
// its H200 run: fwd+bwd of b8 h16 s4096 d128 bf16 causal 10.2 ms against the WMMA kernels' 47.0). Written with inline PTX: mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32,
// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 and cp.async.cg (16 bytes, src-size 0 zero-fills
// rows past the end).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), for
// lane l with g = l / 4 (groupID) and t = l % 4 (threadID_in_group); a register of 16-bit pairs holds
// the lower column (or k) in its low half:
//   A (16 x 16, row-major), 4 regs: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..2t+1), a2 = (g, 2t+8..2t+9),
//     a3 = (g+8, 2t+8..2t+9)                                                   (row, cols)
//   B (16 x 8, k x n), 2 regs:  b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C/D (16 x 8), 4 floats:     c0, c1 = (g, 2t), (g, 2t+1); c2, c3 = (g+8, 2t), (g+8, 2t+1)
//   ldmatrix .x4: lanes 8i .. 8i+7 give the row addresses of 8x8 matrix i; register i of lane l gets
//     matrix i's (row g, cols 2t..2t+1), or with .trans its (rows 2t..2t+1, col g).
// So: an A operand stored row-major is ldmatrix.x4 with lane l pointing at (row l % 16, col 8 (l / 16));
// a B operand whose n index is the stored row (K for S = Q K^T) is ldmatrix.x4 with lane l at (row
// (l % 8) + 8 (l / 16), col 8 ((l / 8) % 2)), giving b0, b1 of n-block 0 then of n-block 1; a B operand
// whose k index is the stored row (V for O += P V) is ldmatrix.x4.trans with lane l at (row l % 16,
// col 8 (l / 16)), giving b0, b1 of n-block 0 then of n-block 1; an A operand stored transposed (dS
// read from dS^T, rows = k) is ldmatrix.x4.trans with lane l at (row (l % 8) + 8 (l / 16), col
// 8 ((l / 8) % 2)), giving a0 .. a3. An accumulator of two adjacent n-blocks 2j, 2j+1 converts to
// the A operand of k-step j in registers: a0 = pack(c0, c1) and a1 = pack(c2, c3) of n-block 2j,
// a2 and a3 the same of n-block 2j+1.
//
// Forward: one CTA of kFwdWarps = 4 warps per (batch * head, tile of 64 query rows), warp w owning
// rows 16w .. 16w+15; its Q fragments (D / 16 k-steps) are loaded once into registers. K and V tiles
// of kBc = 64 keys are double-buffered in shared memory with cp.async: tile n+1 loads while tile n
// is used. Per tile each warp forms its 16 x 64 block of S = Q K^T in registers, scales it by
// scale * log2(e), masks it (causal / tails, only on tiles that need it), updates the running row
// max m and the per-lane partial row sums l (max across the 4 lanes of a quad with __shfl_xor_sync;
// the sums are reduced once at the end), rescales its O accumulator (16 x D floats) by
// exp2(m_old - m_new) and adds P V with P converted in registers. Causal: the walk stops at the
// tile holding the diagonal. O / l is staged through the warp's own rows of the Q buffer and
// written 16 bytes at a time; lse = (m + log2 l) ln 2.
// Backward: the entry point's pre-pass (attention_kernels.cu) takes D_i = rowsum(dO_i * O_i).
// One CTA of 4 warps per (batch * head, tile of kBc = 64 keys), warp w owning keys 16w .. 16w+15,
// with K and V in shared memory and dK, dV (16 x D floats each) in registers; it walks the
// query tiles that see its keys (64 rows; Q, dO, lse and D double-buffered with cp.async). For
// each slice of 16 (D 128: at 32 the 128 accumulator floats of dK, dV leave too few registers
// and ptxas spills) or all 64 (D 64) queries, S^T = K Q^T
// and dP^T = V dO^T in registers give P^T = exp2(S^T scale log2(e) - lse log2(e)) and
// dS^T = P^T (dP^T - D); these convert in registers to A operands for dV += P^T dO and dK += dS^T Q
// (dO, Q via ldmatrix.trans); dS^T also goes to shared memory in the input dtype. After a barrier
// warp w takes query rows 16w .. 16w+15 of dQ = dS K (dS via ldmatrix.trans of dS^T, K via
// ldmatrix.trans) and adds them, times scale, into the float32 buffer with float2 atomicAdd. dK is
// scaled once at the end; dK and dV are staged through the warp's own K / V rows and written whole.
// Shared memory (rows padded by 8 elements, so the 8 rows an ldmatrix phase reads fall in distinct
// banks): forward 45 KB (D 64) / 85 KB (D 128); backward 64 KB / 110.5 KB, so two CTAs fit an SM.
// ptxas (sm_90, CUDA 13.0): forward 149 / 174 registers, backward 169 / 248, no spills.
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/attention_common.cuh"
#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

constexpr int kFwdWarps = 4;
constexpr int kBwdWarps = 4;
constexpr int kBr = 16 * kFwdWarps;  // forward: query rows per tile
constexpr int kBc = 64;              // key rows per tile (the backward's queries per tile too)
constexpr int kBwdBr = 64;
constexpr int kPad = 8;  // 16-bit elements of padding per shared row
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kInf = INFINITY;
static_assert(kBc == 16 * kBwdWarps, "each backward warp owns 16 keys of a tile");

template <int D>
struct FwdSmem {
  static constexpr int ld = D + kPad;
  static constexpr size_t tile = size_t(kBc) * ld * 2;
  static constexpr size_t q = 0, k = q + size_t(kBr) * ld * 2, v = k + 2 * tile, bytes = v + 2 * tile;
};

template <int D>
struct BwdSmem {
  static constexpr int ld = D + kPad, ldt = kBwdBr + kPad;
  static constexpr size_t tile = size_t(kBwdBr) * ld * 2;
  static constexpr size_t k = 0, v = k + size_t(kBc) * ld * 2, q = v + size_t(kBc) * ld * 2, g = q + 2 * tile,
                          dst = g + 2 * tile, lse = dst + size_t(kBc) * ldt * 2, dsum = lse + 2 * kBwdBr * 4,
                          bytes = dsum + 2 * kBwdBr * 4;
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

/// 16 bytes global -> shared, bypassing L1; `valid` false writes zeros (src-size 0 reads nothing).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}

/// 4 bytes global -> shared (for the float rows lse and D, aligned only to 4 bytes).
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

/// c += a b for one m16n8k16 block (Note [Flash attention on mma.sync] has the layouts).
template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// Two floats rounded to T and packed, lo in the low 16 bits (the lower column of a fragment).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&r, &h, 4);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &h, 4);
  }
  return r;
}

/// Queues rows row0 .. row0 + rows - 1 of a (n, D) matrix into shared rows of ld elements (zeros at
/// or past n); all `threads` threads of the CTA take part.
template <class T, int D, int threads>
__device__ __forceinline__ void load_rows_async(T* dst, int ld, const T* src, int64_t row0, int64_t n, int rows) {
  constexpr int kChunks = D * int(sizeof(T)) / 16;
  for (int i = int(threadIdx.x); i < rows * kChunks; i += threads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < n;
    cp_async16(dst + r * ld + c * 8, src + (valid ? (row0 + r) * D + c * 8 : 0), valid);
  }
}

/// Writes a warp's 16 staged shared rows (ld elements apart) to rows row0 .. of a (n, D) matrix.
template <class T, int D>
__device__ __forceinline__ void store_rows(T* dst, const T* src, int ld, int64_t row0, int64_t n, int lane) {
  constexpr int kChunks = D * int(sizeof(T)) / 16;
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = i / kChunks, c = i % kChunks;
    if (row0 + r < n)
      *reinterpret_cast<uint4*>(dst + (row0 + r) * D + c * 8) = *reinterpret_cast<const uint4*>(src + r * ld + c * 8);
  }
}

template <class T, int D>
__global__ __launch_bounds__(kFwdWarps * 32) void flash_forward_mma_kernel(const T* q, const T* k, const T* v,
                                                                           T* out, float* lse, int64_t L,
                                                                           int64_t S, int64_t n_qtiles,
                                                                           bool causal, float scale_log2) {
  using Sm = FwdSmem<D>;
  constexpr int ld = Sm::ld, kThreads = kFwdWarps * 32;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + Sm::q);
  T* ks = reinterpret_cast<T*>(smem + Sm::k);
  T* vs = reinterpret_cast<T*>(smem + Sm::v);

  const int64_t bh = blockIdx.x / n_qtiles;
  const int64_t q0 = (n_qtiles - 1 - blockIdx.x % n_qtiles) * kBr;  // causal: longest tiles first
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int r0 = warp * 16;
  q += bh * L * D;
  k += bh * S * D;
  v += bh * S * D;
  out += bh * L * D;
  lse += bh * L;

  const int64_t kend = causal ? min(S, q0 + kBr) : S;
  const int n_tiles = int((kend + kBc - 1) / kBc);
  load_rows_async<T, D, kThreads>(qs, ld, q, q0, L, kBr);
  cp_async_commit();
  if (n_tiles > 0) {
    load_rows_async<T, D, kThreads>(ks, ld, k, 0, S, kBc);
    load_rows_async<T, D, kThreads>(vs, ld, v, 0, S, kBc);
  }
  cp_async_commit();
  cp_async_wait<1>();  // Q is in
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) ldsm_x4(qf[kk], qs + (r0 + lane % 16) * ld + kk * 16 + (lane / 16) * 8);

  float o[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.f;
  float m[2] = {-kInf, -kInf}, l[2] = {0.f, 0.f};  // rows g and g+8: max (log2 units), this lane's sum
  const int64_t row_a = q0 + r0 + g, row_b = row_a + 8;

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int64_t k0 = int64_t(tile) * kBc;
    const T* kt = ks + (tile & 1) * (kBc * ld);
    const T* vt = vs + (tile & 1) * (kBc * ld);
    if (tile + 1 < n_tiles) {
      load_rows_async<T, D, kThreads>(ks + ((tile + 1) & 1) * (kBc * ld), ld, k, k0 + kBc, S, kBc);
      load_rows_async<T, D, kThreads>(vs + ((tile + 1) & 1) * (kBc * ld), ld, v, k0 + kBc, S, kBc);
    }
    cp_async_commit();
    cp_async_wait<1>();  // this tile is in
    __syncthreads();

    float s[kBc / 8][4];
#pragma unroll
    for (int nb = 0; nb < kBc / 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int nb = 0; nb < kBc / 8; nb += 2) {  // keys 8nb .. 8nb + 15
        uint32_t b[4];
        ldsm_x4(b, kt + (nb * 8 + lane % 8 + (lane / 16) * 8) * ld + kk * 16 + ((lane / 8) % 2) * 8);
        mma16816<T>(s[nb], qf[kk], b[0], b[1]);
        mma16816<T>(s[nb + 1], qf[kk], b[2], b[3]);
      }
    }

    const bool need_mask = k0 + kBc > S || (causal && k0 + kBc - 1 > q0);
    float mx[2] = {-kInf, -kInf};
#pragma unroll
    for (int nb = 0; nb < kBc / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nb][e] * scale_log2;
        if (need_mask) {
          const int64_t j = k0 + nb * 8 + 2 * t + (e & 1), i = e < 2 ? row_a : row_b;
          if (j >= S || (causal && j > i)) x = -kInf;
        }
        s[nb][e] = x;
        mx[e / 2] = fmaxf(mx[e / 2], x);
      }
    }
    float alpha[2], base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const float m_new = fmaxf(m[h], mx[h]);
      base[h] = m_new == -kInf ? 0.f : m_new;  // a row with no key yet keeps l = 0
      alpha[h] = exp2f(m[h] - base[h]);
      m[h] = m_new;
      l[h] *= alpha[h];
    }
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) {
      o[nb][0] *= alpha[0];
      o[nb][1] *= alpha[0];
      o[nb][2] *= alpha[1];
      o[nb][3] *= alpha[1];
    }
    uint32_t pf[kBc / 16][4];  // P as the A operand of O += P V, k-step kk = keys 16kk .. 16kk + 15
#pragma unroll
    for (int nb = 0; nb < kBc / 8; ++nb) {
      const float p0 = exp2f(s[nb][0] - base[0]), p1 = exp2f(s[nb][1] - base[0]);
      const float p2 = exp2f(s[nb][2] - base[1]), p3 = exp2f(s[nb][3] - base[1]);
      l[0] += p0 + p1;
      l[1] += p2 + p3;
      pf[nb / 2][(nb % 2) * 2] = pack2<T>(p0, p1);
      pf[nb / 2][(nb % 2) * 2 + 1] = pack2<T>(p2, p3);
    }
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
#pragma unroll
      for (int nb = 0; nb < D / 8; nb += 2) {  // head columns 8nb .. 8nb + 15
        uint32_t b[4];
        ldsm_x4_trans(b, vt + (kk * 16 + lane % 16) * ld + nb * 8 + (lane / 16) * 8);
        mma16816<T>(o[nb], pf[kk], b[0], b[1]);
        mma16816<T>(o[nb + 1], pf[kk], b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with this buffer before the next loads refill it
  }
  cp_async_wait<0>();

  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    inv[h] = l[h] > 0.f ? 1.f / l[h] : 0.f;
  }
  T* stage = qs + r0 * ld;  // the warp's own Q rows, read only by this warp
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) {
    *reinterpret_cast<uint32_t*>(stage + g * ld + nb * 8 + 2 * t) = pack2<T>(o[nb][0] * inv[0], o[nb][1] * inv[0]);
    *reinterpret_cast<uint32_t*>(stage + (g + 8) * ld + nb * 8 + 2 * t) =
        pack2<T>(o[nb][2] * inv[1], o[nb][3] * inv[1]);
  }
  __syncwarp();
  store_rows<T, D>(out, stage, ld, q0 + r0, L, lane);
  if (t == 0) {
    if (row_a < L) lse[row_a] = l[0] > 0.f ? (m[0] + log2f(l[0])) * kLn2 : -kInf;
    if (row_b < L) lse[row_b] = l[1] > 0.f ? (m[1] + log2f(l[1])) * kLn2 : -kInf;
  }
}

template <class T, int D>
__global__ __launch_bounds__(kBwdWarps * 32) void flash_backward_mma_kernel(
    const T* g, const T* q, const T* k, const T* v, const float* lse, const float* dsum, float* dq, T* dk, T* dv,
    int64_t L, int64_t S, int64_t n_ktiles, bool causal, float scale, float scale_log2) {
  using Sm = BwdSmem<D>;
  constexpr int ld = Sm::ld, ldt = Sm::ldt, kThreads = kBwdWarps * 32;
  constexpr int kSub = D == 128 ? 16 : 64;  // queries per register pass (D 128: 32 spills at 255)
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem + Sm::k);
  T* vs = reinterpret_cast<T*>(smem + Sm::v);
  T* qs = reinterpret_cast<T*>(smem + Sm::q);
  T* gs = reinterpret_cast<T*>(smem + Sm::g);
  T* dst = reinterpret_cast<T*>(smem + Sm::dst);
  float* lse_s = reinterpret_cast<float*>(smem + Sm::lse);
  float* dsum_s = reinterpret_cast<float*>(smem + Sm::dsum);

  const int64_t bh = blockIdx.x / n_ktiles;
  const int64_t k0 = (blockIdx.x % n_ktiles) * kBc;  // causal: first key tiles see the most queries
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, gi = lane / 4, t = lane % 4;
  const int r0 = warp * 16;
  g += bh * L * D;
  q += bh * L * D;
  dq += bh * L * D;
  k += bh * S * D;
  v += bh * S * D;
  dk += bh * S * D;
  dv += bh * S * D;
  lse += bh * L;
  dsum += bh * L;

  // causal: query rows i < k0 see none of these keys
  const int64_t qstart = causal ? k0 / kBwdBr * kBwdBr : 0;
  const int n_tiles = qstart < L ? int((L - qstart + kBwdBr - 1) / kBwdBr) : 0;
  auto load_q_tile = [&](int tile) {
    const int64_t q0 = qstart + int64_t(tile) * kBwdBr;
    const int buf = tile & 1;
    load_rows_async<T, D, kThreads>(qs + buf * (kBwdBr * ld), ld, q, q0, L, kBwdBr);
    load_rows_async<T, D, kThreads>(gs + buf * (kBwdBr * ld), ld, g, q0, L, kBwdBr);
    const int r = int(threadIdx.x) % kBwdBr;
    const bool valid = q0 + r < L;
    static_assert(kThreads == 2 * kBwdBr, "one lse or D element a thread");
    if (int(threadIdx.x) < kBwdBr) cp_async4(lse_s + buf * kBwdBr + r, lse + (valid ? q0 + r : 0), valid);
    else cp_async4(dsum_s + buf * kBwdBr + r, dsum + (valid ? q0 + r : 0), valid);
  };
  load_rows_async<T, D, kThreads>(ks, ld, k, k0, S, kBc);
  load_rows_async<T, D, kThreads>(vs, ld, v, k0, S, kBc);
  if (n_tiles > 0) load_q_tile(0);
  cp_async_commit();

  float dkacc[D / 8][4], dvacc[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) dkacc[nb][e] = dvacc[nb][e] = 0.f;
  }
  const int64_t key_a = k0 + r0 + gi, key_b = key_a + 8;

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int64_t q0 = qstart + int64_t(tile) * kBwdBr;
    const T* qt = qs + (tile & 1) * (kBwdBr * ld);
    const T* gt = gs + (tile & 1) * (kBwdBr * ld);
    const float* lt = lse_s + (tile & 1) * kBwdBr;
    const float* dt = dsum_s + (tile & 1) * kBwdBr;
    if (tile + 1 < n_tiles) load_q_tile(tile + 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    const bool need_mask = k0 + kBc > S || q0 + kBwdBr > L || (causal && k0 + kBc - 1 > q0);
#pragma unroll
    for (int c0 = 0; c0 < kBwdBr; c0 += kSub) {  // queries c0 .. c0 + kSub - 1 of the tile
      float s[kSub / 8][4], dp[kSub / 8][4];
#pragma unroll
      for (int nb = 0; nb < kSub / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nb][e] = dp[nb][e] = 0.f;
      }
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {  // S^T = K Q^T, dP^T = V dO^T over head columns
        uint32_t ka[4], va[4];
        ldsm_x4(ka, ks + (r0 + lane % 16) * ld + kk * 16 + (lane / 16) * 8);
        ldsm_x4(va, vs + (r0 + lane % 16) * ld + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int nb = 0; nb < kSub / 8; nb += 2) {
          const int off = (c0 + nb * 8 + lane % 8 + (lane / 16) * 8) * ld + kk * 16 + ((lane / 8) % 2) * 8;
          uint32_t b[4];
          ldsm_x4(b, qt + off);
          mma16816<T>(s[nb], ka, b[0], b[1]);
          mma16816<T>(s[nb + 1], ka, b[2], b[3]);
          ldsm_x4(b, gt + off);
          mma16816<T>(dp[nb], va, b[0], b[1]);
          mma16816<T>(dp[nb + 1], va, b[2], b[3]);
        }
      }
      uint32_t pa[kSub / 16][4], da[kSub / 16][4];  // P^T, dS^T as A operands (k = query)
#pragma unroll
      for (int nb = 0; nb < kSub / 8; ++nb) {
        float p[4], ds[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = c0 + nb * 8 + 2 * t + (e & 1);
          p[e] = exp2f(s[nb][e] * scale_log2 - lt[c] * kLog2e);
          if (need_mask) {
            const int64_t i = q0 + c, j = e < 2 ? key_a : key_b;
            if (i >= L || j >= S || (causal && j > i)) p[e] = 0.f;
          }
          ds[e] = p[e] * (dp[nb][e] - dt[c]);
        }
        pa[nb / 2][(nb % 2) * 2] = pack2<T>(p[0], p[1]);
        pa[nb / 2][(nb % 2) * 2 + 1] = pack2<T>(p[2], p[3]);
        da[nb / 2][(nb % 2) * 2] = pack2<T>(ds[0], ds[1]);
        da[nb / 2][(nb % 2) * 2 + 1] = pack2<T>(ds[2], ds[3]);
      }
#pragma unroll
      for (int kk = 0; kk < kSub / 16; ++kk) {  // dS^T to shared memory for dQ: (key, query) rows
        const int c = c0 + kk * 16 + 2 * t;
        *reinterpret_cast<uint32_t*>(dst + (r0 + gi) * ldt + c) = da[kk][0];
        *reinterpret_cast<uint32_t*>(dst + (r0 + gi + 8) * ldt + c) = da[kk][1];
        *reinterpret_cast<uint32_t*>(dst + (r0 + gi) * ldt + c + 8) = da[kk][2];
        *reinterpret_cast<uint32_t*>(dst + (r0 + gi + 8) * ldt + c + 8) = da[kk][3];
      }
#pragma unroll
      for (int kk = 0; kk < kSub / 16; ++kk) {  // dV += P^T dO, dK += dS^T Q
#pragma unroll
        for (int nb = 0; nb < D / 8; nb += 2) {
          const int off = (c0 + kk * 16 + lane % 16) * ld + nb * 8 + (lane / 16) * 8;
          uint32_t b[4];
          ldsm_x4_trans(b, gt + off);
          mma16816<T>(dvacc[nb], pa[kk], b[0], b[1]);
          mma16816<T>(dvacc[nb + 1], pa[kk], b[2], b[3]);
          ldsm_x4_trans(b, qt + off);
          mma16816<T>(dkacc[nb], da[kk], b[0], b[1]);
          mma16816<T>(dkacc[nb + 1], da[kk], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // all of dS^T is written

    // dQ rows q0 + r0 .. q0 + r0 + 15 += scale * dS K, dS read through dS^T (k = key)
    uint32_t sa[kBc / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      ldsm_x4_trans(sa[kk], dst + (kk * 16 + lane % 8 + (lane / 16) * 8) * ldt + r0 + ((lane / 8) % 2) * 8);
    const int64_t qrow_a = q0 + r0 + gi, qrow_b = qrow_a + 8;
#pragma unroll
    for (int nb = 0; nb < D / 8; nb += 2) {
      float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int kk = 0; kk < kBc / 16; ++kk) {
        uint32_t b[4];
        ldsm_x4_trans(b, ks + (kk * 16 + lane % 16) * ld + nb * 8 + (lane / 16) * 8);
        mma16816<T>(acc[0], sa[kk], b[0], b[1]);
        mma16816<T>(acc[1], sa[kk], b[2], b[3]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = (nb + h) * 8 + 2 * t;
        if (qrow_a < L) atomicAdd(reinterpret_cast<float2*>(dq + qrow_a * D + c),
                                  make_float2(acc[h][0] * scale, acc[h][1] * scale));
        if (qrow_b < L) atomicAdd(reinterpret_cast<float2*>(dq + qrow_b * D + c),
                                  make_float2(acc[h][2] * scale, acc[h][3] * scale));
      }
    }
    __syncthreads();  // every warp is done with this Q, dO buffer and with dS^T
  }
  cp_async_wait<0>();
  __syncthreads();  // K, V are in (no query tile) and no warp reads them any more

  T* kstage = ks + r0 * ld;  // the warp's own K, V rows
  T* vstage = vs + r0 * ld;
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) {
    const int c = nb * 8 + 2 * t;
    *reinterpret_cast<uint32_t*>(kstage + gi * ld + c) = pack2<T>(dkacc[nb][0] * scale, dkacc[nb][1] * scale);
    *reinterpret_cast<uint32_t*>(kstage + (gi + 8) * ld + c) = pack2<T>(dkacc[nb][2] * scale, dkacc[nb][3] * scale);
    *reinterpret_cast<uint32_t*>(vstage + gi * ld + c) = pack2<T>(dvacc[nb][0], dvacc[nb][1]);
    *reinterpret_cast<uint32_t*>(vstage + (gi + 8) * ld + c) = pack2<T>(dvacc[nb][2], dvacc[nb][3]);
  }
  __syncwarp();
  store_rows<T, D>(dk, kstage, ld, k0 + r0, S, lane);
  store_rows<T, D>(dv, vstage, ld, k0 + r0, S, lane);
}

}  // namespace

void flash_forward_mma(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                       bool causal, float scale, cudaStream_t s) {
  const int64_t bh = q.size(0) * q.size(1), L = q.size(2), S = k.size(2), n_qtiles = (L + kBr - 1) / kBr;
  visit_flash(q.dtype(), q.size(3), [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    auto kernel = flash_forward_mma_kernel<T, D>;
    TP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(FwdSmem<D>::bytes)));
    kernel<<<unsigned(bh * n_qtiles), kFwdWarps * 32, FwdSmem<D>::bytes, s>>>(
        q.device_data<T>(), k.device_data<T>(), v.device_data<T>(), out.device_data<T>(), lse.device_data<float>(),
        L, S, n_qtiles, causal, scale * kLog2e);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void flash_backward_mma(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse,
                        const Tensor& dsum, const Tensor& dq, const Tensor& dk, const Tensor& dv, bool causal,
                        float scale, cudaStream_t s) {
  const int64_t bh = q.size(0) * q.size(1), L = q.size(2), S = k.size(2), n_ktiles = (S + kBc - 1) / kBc;
  visit_flash(q.dtype(), q.size(3), [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    auto kernel = flash_backward_mma_kernel<T, D>;
    TP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(BwdSmem<D>::bytes)));
    kernel<<<unsigned(bh * n_ktiles), kBwdWarps * 32, BwdSmem<D>::bytes, s>>>(
        g.device_data<T>(), q.device_data<T>(), k.device_data<T>(), v.device_data<T>(), lse.device_data<float>(),
        dsum.device_data<float>(), dq.device_data<float>(), dk.device_data<T>(), dv.device_data<T>(), L, S,
        n_ktiles, causal, scale, scale * kLog2e);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
