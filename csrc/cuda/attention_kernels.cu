// Fused scaled dot-product attention on tensor cores (WMMA, float16 / bfloat16, head dims 64
// and 128): a tiled forward with an online softmax and a recomputing backward.
//
// Note [Flash attention]: the (L, S) scores are never formed in global memory.
// Forward: one CTA of 4 warps per (batch * head, tile of kBr = 64 query rows); warp w owns
// query rows 16w .. 16w + 15 of the tile. The CTA walks key/value tiles of kBc = 64 rows,
// loaded into shared memory; each warp computes its 16 x kBc block of S = Q K^T with WMMA
// (16x16x16, float accumulators) and stores it to shared memory, where its lanes apply the
// mask and scale and update each row's running max m and sum l (online softmax: the
// float32 output accumulator O, also in shared memory, is rescaled by exp(m_old - m_new)),
// write P = exp(S * scale - m) in the input dtype and add P V into O with WMMA. Under the
// causal mask (top-left: query i sees keys j <= i, as PyTorch's is_causal) the walk stops
// at the last tile holding a key some row of the query tile sees. At the end O / l goes
// out and m + log(l) into the float32 log-sum-exp. Tails (L, S not multiples of 64) are
// zero-filled in shared memory and masked.
// Backward: a pre-pass takes D_i = rowsum(dO_i * O_i). Then one CTA per (batch * head,
// tile of kBc = 64 keys), warp w owning keys 16w .. 16w + 15, walks the query tiles that
// see its keys: with Q, dO of the tile in shared memory it recomputes S^T = K Q^T and
// dP^T = V dO^T, forms P^T = exp(S^T * scale - lse) and dS^T = P^T * (dP^T - D) (input
// dtype), and accumulates dV += P^T dO and dK += dS^T Q in float32 shared memory. dQ's
// share of the tile, dS K * scale, is staged in shared memory and added into a float32
// (B, H, L, D) buffer with atomicAdd (so dQ's summation order is not fixed); the caller
// rounds it to the input dtype. dK is scaled once at the end.
// Shared memory: forward 70 KB (D 64) / 110 KB (D 128), backward 122 KB / 186 KB, above
// the 48 KB default, so the launch raises the kernels' dynamic shared-memory limit.
#include <mma.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "cuda/attention_common.cuh"
#include "cuda/attention_kernels.h"
#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBr = 64;  // query rows per tile
constexpr int kBc = 64;  // key rows per tile
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kPadH = 8;  // 16-bit elements of padding per shared row (WMMA: ldm % 8 == 0)
constexpr int kPadF = 4;  // float elements of padding per shared row (WMMA: ldm % 4 == 0)
constexpr float kInf = INFINITY;
static_assert(kBr == kWarps * 16 && kBc == kWarps * 16, "each warp owns 16 rows of a tile");

/// Byte offsets of the forward kernel's shared arrays: Q, K, V (input dtype), S (float),
/// P (input dtype), O (float). Every array and every 16-row / 16-column block is 32-byte
/// aligned, as WMMA loads and stores need.
template <int D>
struct ForwardSmem {
  static constexpr int ldh = D + kPadH, lds = kBc + kPadF, ldp = kBc + kPadH, ldo = D + kPadF;
  static constexpr size_t q = 0, k = q + size_t(kBr) * ldh * 2, v = k + size_t(kBc) * ldh * 2,
                          s = v + size_t(kBc) * ldh * 2, p = s + size_t(kBr) * lds * 4,
                          o = p + size_t(kBr) * ldp * 2, bytes = o + size_t(kBr) * ldo * 4;
};

/// Byte offsets of the backward kernel's shared arrays: K, V, Q, dO (input dtype), S^T and
/// dP^T (float; their space stages dQ later), P^T and dS^T (input dtype), dK and dV (float).
template <int D>
struct BackwardSmem {
  static constexpr int ldh = D + kPadH, ldt = kBr + kPadF, ldth = kBr + kPadH, ldo = D + kPadF;
  static constexpr size_t k = 0, v = k + size_t(kBc) * ldh * 2, q = v + size_t(kBc) * ldh * 2,
                          g = q + size_t(kBr) * ldh * 2, st = g + size_t(kBr) * ldh * 2,
                          dpt = st + size_t(kBc) * ldt * 4, pt = dpt + size_t(kBc) * ldt * 4,
                          dst = pt + size_t(kBc) * ldth * 2, dk = dst + size_t(kBc) * ldth * 2,
                          dv = dk + size_t(kBc) * ldo * 4, bytes = dv + size_t(kBc) * ldo * 4;
  static_assert(size_t(kBr) * ldo * 4 <= pt - st, "the dQ staging fits in S^T and dP^T");
};

template <class T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major>;
template <class T>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
template <class T>
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// Copies rows row0 .. row0 + rows - 1 of a (n, D) matrix into shared rows of ld elements,
/// zeros for rows at or past n; all threads of the CTA take part, 16 bytes at a time.
template <class T, int D>
__device__ void load_tile(T* dst, int ld, const T* src, int64_t row0, int64_t n, int rows) {
  constexpr int kChunks = D * int(sizeof(T)) / 16;
  for (int i = int(threadIdx.x); i < rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (row0 + r < n) x = reinterpret_cast<const uint4*>(src + (row0 + r) * D)[c];
    reinterpret_cast<uint4*>(dst + r * ld)[c] = x;
  }
}

/// acc += A B over kdim (a multiple of 16) for one 16x16 output block: A is 16 x kdim at a
/// (row-major, or column-major when A_T), B is kdim x 16 at b (row-major, or column-major
/// when B_T). Pointers step 16 along k by the layout's rules.
template <class T, bool A_T, bool B_T>
__device__ __forceinline__ void mma_block(FragC& acc, const T* a, int lda, const T* b, int ldb, int kdim) {
  using FA = std::conditional_t<A_T, FragAT<T>, FragA<T>>;
  using FB = std::conditional_t<B_T, FragBT<T>, FragB<T>>;
  for (int kk = 0; kk < kdim; kk += 16) {
    FA fa;
    FB fb;
    wmma::load_matrix_sync(fa, A_T ? a + kk * lda : a + kk, lda);
    wmma::load_matrix_sync(fb, B_T ? b + kk : b + kk * ldb, ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

template <class T, int D>
__global__ __launch_bounds__(kThreads) void flash_forward_kernel(const T* q, const T* k, const T* v, T* out,
                                                                 float* lse, int64_t L, int64_t S, int64_t n_qtiles,
                                                                 bool causal, float scale) {
  using Sm = ForwardSmem<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + Sm::q);
  T* ks = reinterpret_cast<T*>(smem + Sm::k);
  T* vs = reinterpret_cast<T*>(smem + Sm::v);
  float* ss = reinterpret_cast<float*>(smem + Sm::s);
  T* ps = reinterpret_cast<T*>(smem + Sm::p);
  float* os = reinterpret_cast<float*>(smem + Sm::o);
  __shared__ float m_s[kBr], l_s[kBr], alpha_s[kBr];

  const int64_t bh = blockIdx.x / n_qtiles;
  const int64_t q0 = (n_qtiles - 1 - blockIdx.x % n_qtiles) * kBr;  // causal: longest tiles first
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, r0 = warp * 16;
  q += bh * L * D;
  k += bh * S * D;
  v += bh * S * D;
  out += bh * L * D;
  lse += bh * L;

  load_tile<T, D>(qs, Sm::ldh, q, q0, L, kBr);
  // each warp initialises (and later reads) only its own rows
  for (int i = lane; i < 16 * Sm::ldo; i += 32) os[r0 * Sm::ldo + i] = 0.f;
  if (lane < 16) {
    m_s[r0 + lane] = -kInf;
    l_s[r0 + lane] = 0.f;
  }
  const int64_t kend = causal ? min(S, min(q0 + kBr, L)) : S;
  for (int64_t k0 = 0; k0 < kend; k0 += kBc) {
    __syncthreads();  // every warp is done with the previous K, V
    load_tile<T, D>(ks, Sm::ldh, k, k0, S, kBc);
    load_tile<T, D>(vs, Sm::ldh, v, k0, S, kBc);
    __syncthreads();
    for (int nb = 0; nb < kBc; nb += 16) {  // S = Q K^T: K's rows read as the columns of K^T
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
      mma_block<T, false, true>(acc, qs + r0 * Sm::ldh, Sm::ldh, ks + nb * Sm::ldh, Sm::ldh, D);
      wmma::store_matrix_sync(ss + r0 * Sm::lds + nb, acc, Sm::lds, wmma::mem_row_major);
    }
    __syncwarp();
    for (int r = r0; r < r0 + 16; ++r) {  // online softmax of row r, lanes over columns
      const int64_t i = q0 + r;
      float x[kBc / 32], mt = -kInf;
#pragma unroll
      for (int e = 0; e < kBc / 32; ++e) {
        const int c = lane + 32 * e;
        const int64_t j = k0 + c;
        x[e] = j < S && (!causal || j <= i) ? ss[r * Sm::lds + c] * scale : -kInf;
        mt = fmaxf(mt, x[e]);
      }
      mt = warp_reduce(mt, MaxFn{});
      const float m_old = m_s[r], m_new = fmaxf(m_old, mt);
      const float base = m_new == -kInf ? 0.f : m_new;  // a row with no key yet keeps l = 0
      float sum = 0.f;
#pragma unroll
      for (int e = 0; e < kBc / 32; ++e) {
        const float p = __expf(x[e] - base);
        sum += p;
        ps[r * Sm::ldp + lane + 32 * e] = from_acc<T>(p);
      }
      sum = warp_reduce(sum, SumFn{});
      __syncwarp();  // every lane has read m_s[r]
      if (lane == 0) {
        const float alpha = __expf(m_old - base);
        alpha_s[r] = alpha;
        l_s[r] = l_s[r] * alpha + sum;
        m_s[r] = m_new;
      }
    }
    __syncwarp();
    for (int i = lane; i < 16 * D; i += 32) {
      const int r = r0 + i / D;
      os[r * Sm::ldo + i % D] *= alpha_s[r];
    }
    __syncwarp();
    for (int nb = 0; nb < D; nb += 16) {  // O += P V
      FragC acc;
      wmma::load_matrix_sync(acc, os + r0 * Sm::ldo + nb, Sm::ldo, wmma::mem_row_major);
      mma_block<T, false, false>(acc, ps + r0 * Sm::ldp, Sm::ldp, vs + nb, Sm::ldh, kBc);
      wmma::store_matrix_sync(os + r0 * Sm::ldo + nb, acc, Sm::ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  __syncwarp();
  for (int i = lane; i < 16 * D; i += 32) {
    const int r = r0 + i / D, c = i % D;
    const float l = l_s[r];
    if (q0 + r < L) out[(q0 + r) * D + c] = from_acc<T>(l > 0.f ? os[r * Sm::ldo + c] / l : 0.f);
  }
  if (lane < 16 && q0 + r0 + lane < L) {
    const int r = r0 + lane;
    lse[q0 + r] = l_s[r] > 0.f ? m_s[r] + logf(l_s[r]) : -kInf;
  }
}

/// dsum[row] = sum over D of g[row] * o[row], one warp per row.
template <class T, int D>
__global__ void attention_row_dot_kernel(const T* g, const T* o, float* dsum, int64_t rows) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = int(threadIdx.x) % 32;
  float s = 0.f;
  for (int c = lane; c < D; c += 32) s += to_acc(g[row * D + c]) * to_acc(o[row * D + c]);
  s = warp_reduce(s, SumFn{});
  if (lane == 0) dsum[row] = s;
}

template <class T, int D>
__global__ __launch_bounds__(kThreads) void flash_backward_kernel(const T* g, const T* q, const T* k, const T* v,
                                                                  const float* lse, const float* dsum, float* dq,
                                                                  T* dk, T* dv, int64_t L, int64_t S,
                                                                  int64_t n_ktiles, bool causal, float scale) {
  using Sm = BackwardSmem<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem + Sm::k);
  T* vs = reinterpret_cast<T*>(smem + Sm::v);
  T* qs = reinterpret_cast<T*>(smem + Sm::q);
  T* gs = reinterpret_cast<T*>(smem + Sm::g);
  float* st = reinterpret_cast<float*>(smem + Sm::st);
  float* dpt = reinterpret_cast<float*>(smem + Sm::dpt);
  float* dqs = st;  // dQ staging, once S^T and dP^T are used up
  T* pt = reinterpret_cast<T*>(smem + Sm::pt);
  T* dst = reinterpret_cast<T*>(smem + Sm::dst);
  float* dks = reinterpret_cast<float*>(smem + Sm::dk);
  float* dvs = reinterpret_cast<float*>(smem + Sm::dv);
  __shared__ float lse_s[kBr], dsum_s[kBr];

  const int64_t bh = blockIdx.x / n_ktiles;
  const int64_t k0 = (blockIdx.x % n_ktiles) * kBc;  // causal: first key tiles see the most queries
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, r0 = warp * 16;
  g += bh * L * D;
  q += bh * L * D;
  dq += bh * L * D;
  k += bh * S * D;
  v += bh * S * D;
  dk += bh * S * D;
  dv += bh * S * D;
  lse += bh * L;
  dsum += bh * L;

  load_tile<T, D>(ks, Sm::ldh, k, k0, S, kBc);
  load_tile<T, D>(vs, Sm::ldh, v, k0, S, kBc);
  for (int i = lane; i < 16 * Sm::ldo; i += 32) {  // each warp's own rows of dK, dV
    dks[r0 * Sm::ldo + i] = 0.f;
    dvs[r0 * Sm::ldo + i] = 0.f;
  }
  // causal: query rows i < k0 see none of these keys
  for (int64_t q0 = causal ? k0 / kBr * kBr : 0; q0 < L; q0 += kBr) {
    __syncthreads();  // every warp is done with the previous Q, dO, dS^T and dQ staging
    load_tile<T, D>(qs, Sm::ldh, q, q0, L, kBr);
    load_tile<T, D>(gs, Sm::ldh, g, q0, L, kBr);
    if (threadIdx.x < kBr) {
      const int64_t i = q0 + threadIdx.x;
      lse_s[threadIdx.x] = i < L ? lse[i] : 0.f;
      dsum_s[threadIdx.x] = i < L ? dsum[i] : 0.f;
    }
    __syncthreads();
    for (int nb = 0; nb < kBr; nb += 16) {  // S^T = K Q^T, dP^T = V dO^T for this warp's keys
      FragC acc_s, acc_p;
      wmma::fill_fragment(acc_s, 0.f);
      wmma::fill_fragment(acc_p, 0.f);
      mma_block<T, false, true>(acc_s, ks + r0 * Sm::ldh, Sm::ldh, qs + nb * Sm::ldh, Sm::ldh, D);
      mma_block<T, false, true>(acc_p, vs + r0 * Sm::ldh, Sm::ldh, gs + nb * Sm::ldh, Sm::ldh, D);
      wmma::store_matrix_sync(st + r0 * Sm::ldt + nb, acc_s, Sm::ldt, wmma::mem_row_major);
      wmma::store_matrix_sync(dpt + r0 * Sm::ldt + nb, acc_p, Sm::ldt, wmma::mem_row_major);
    }
    __syncwarp();
    for (int e = lane; e < 16 * kBr; e += 32) {  // P^T, dS^T = P^T * (dP^T - D)
      const int r = r0 + e / kBr, c = e % kBr;
      const int64_t i = q0 + c, j = k0 + r;
      const bool seen = i < L && j < S && (!causal || j <= i);
      const float p = seen ? __expf(st[r * Sm::ldt + c] * scale - lse_s[c]) : 0.f;
      pt[r * Sm::ldth + c] = from_acc<T>(p);
      dst[r * Sm::ldth + c] = from_acc<T>(p * (dpt[r * Sm::ldt + c] - dsum_s[c]));
    }
    __syncwarp();
    for (int nb = 0; nb < D; nb += 16) {  // dV += P^T dO, dK += dS^T Q
      FragC acc_v, acc_k;
      wmma::load_matrix_sync(acc_v, dvs + r0 * Sm::ldo + nb, Sm::ldo, wmma::mem_row_major);
      wmma::load_matrix_sync(acc_k, dks + r0 * Sm::ldo + nb, Sm::ldo, wmma::mem_row_major);
      mma_block<T, false, false>(acc_v, pt + r0 * Sm::ldth, Sm::ldth, gs + nb, Sm::ldh, kBr);
      mma_block<T, false, false>(acc_k, dst + r0 * Sm::ldth, Sm::ldth, qs + nb, Sm::ldh, kBr);
      wmma::store_matrix_sync(dvs + r0 * Sm::ldo + nb, acc_v, Sm::ldo, wmma::mem_row_major);
      wmma::store_matrix_sync(dks + r0 * Sm::ldo + nb, acc_k, Sm::ldo, wmma::mem_row_major);
    }
    __syncthreads();  // all of dS^T is written; S^T and dP^T are free
    for (int nb = 0; nb < D; nb += 16) {  // dQ of this warp's 16 query rows: dS K, dS read from dS^T
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
      mma_block<T, true, false>(acc, dst + r0, Sm::ldth, ks + nb, Sm::ldh, kBc);
      wmma::store_matrix_sync(dqs + r0 * Sm::ldo + nb, acc, Sm::ldo, wmma::mem_row_major);
    }
    __syncwarp();
    for (int e = lane; e < 16 * D; e += 32) {
      const int r = r0 + e / D, c = e % D;
      if (q0 + r < L) atomicAdd(dq + (q0 + r) * D + c, dqs[r * Sm::ldo + c] * scale);
    }
  }
  __syncwarp();
  for (int e = lane; e < 16 * D; e += 32) {
    const int r = r0 + e / D, c = e % D;
    if (k0 + r < S) {
      dk[(k0 + r) * D + c] = from_acc<T>(dks[r * Sm::ldo + c] * scale);
      dv[(k0 + r) * D + c] = from_acc<T>(dvs[r * Sm::ldo + c]);
    }
  }
}

/// Raises the kernel's dynamic shared-memory limit to `bytes` (on the current device; cheap,
/// so before every launch).
template <class K>
void allow_smem(K kernel, size_t bytes) {
  TP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

}  // namespace

bool flash_attention_supported(DType dt, int64_t head_dim) {
  return (dt == DType::Float16 || dt == DType::BFloat16) && (head_dim == 64 || head_dim == 128);
}

void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, bool causal, float scale) {
  const int64_t bh = q.size(0) * q.size(1), L = q.size(2), S = k.size(2);
  if (bh == 0 || L == 0) return;
  DeviceGuard guard(q.device().index);
  cudaStream_t s = current_stream(q.device().index).handle;
  const int64_t n_qtiles = (L + kBr - 1) / kBr;
  TP_CHECK(bh * n_qtiles <= INT32_MAX, "_flash_attention_forward: ", bh, " x ", n_qtiles, " tiles exceed a CUDA grid");
  if (flash_mma_enabled()) return flash_forward_mma(q, k, v, out, lse, causal, scale, s);
  visit_flash(q.dtype(), q.size(3), [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    auto kernel = flash_forward_kernel<T, D>;
    allow_smem(kernel, ForwardSmem<D>::bytes);
    kernel<<<unsigned(bh * n_qtiles), kThreads, ForwardSmem<D>::bytes, s>>>(
        q.device_data<T>(), k.device_data<T>(), v.device_data<T>(), out.device_data<T>(), lse.device_data<float>(),
        L, S, n_qtiles, causal, scale);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void flash_attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                              const Tensor& dv, bool causal, float scale) {
  const int64_t bh = q.size(0) * q.size(1), L = q.size(2), S = k.size(2);
  if (bh == 0 || S == 0) return;
  DeviceGuard guard(q.device().index);
  cudaStream_t s = current_stream(q.device().index).handle;
  const int64_t rows = bh * L, n_ktiles = (S + kBc - 1) / kBc;
  const int64_t rows_shape[1] = {rows};
  TP_CHECK(bh * n_ktiles <= INT32_MAX, "_flash_attention_backward: ", bh, " x ", n_ktiles, " tiles exceed a CUDA grid");
  Tensor dsum = empty_tensor(IntArrayRef(rows_shape, 1), DType::Float32, q.device());
  visit_flash(q.dtype(), q.size(3), [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    if (rows > 0) {
      constexpr int kRowsPerBlock = 8;
      const unsigned blocks = unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock);
      attention_row_dot_kernel<T, D><<<blocks, kRowsPerBlock * 32, 0, s>>>(g.device_data<T>(), out.device_data<T>(),
                                                                          dsum.device_data<float>(), rows);
      TP_CUDA_CHECK(cudaGetLastError());
    }
    if (flash_mma_enabled()) return flash_backward_mma(g, q, k, v, lse, dsum, dq, dk, dv, causal, scale, s);
    auto kernel = flash_backward_kernel<T, D>;
    allow_smem(kernel, BackwardSmem<D>::bytes);
    kernel<<<unsigned(bh * n_ktiles), kThreads, BackwardSmem<D>::bytes, s>>>(
        g.device_data<T>(), q.device_data<T>(), k.device_data<T>(), v.device_data<T>(), lse.device_data<float>(),
        dsum.device_data<float>(), dq.device_data<float>(), dk.device_data<T>(), dv.device_data<T>(), L, S, n_ktiles,
        causal, scale);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
