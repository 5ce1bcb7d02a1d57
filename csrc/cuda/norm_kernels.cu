// CUDA layer norm and RMS norm (forward, backward), batch norm (forward, backward) and group
// norm (forward). Layer-norm rows that fill 16-byte packs and fit in registers are read once;
// others stream. Column sums (weight / bias gradients, per-channel statistics) are
// written as partial sums and added in a fixed order (no atomics: results are reproducible).
#include <algorithm>
#include <cmath>
#include <limits>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/copy.h"
#include "cuda/launch.cuh"
#include "cuda/nn_kernels.h"
#include "cuda/nn_launch.cuh"
#include "cuda/row_pipeline.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

/// 32-bit registers of values per thread in the layer-norm backward (x, g and two
/// column accumulators each).
constexpr int kMaxRegFloatsBackward = 16;

/// out[0..V) = p[0..V) as A, for V values of W (the accumulation type A itself, or a half
/// type: Note [Layer-norm weights in their dtype]) starting at a 16-byte aligned p.
template <class A, int V, class W>
__device__ __forceinline__ void load_accs(const W* p, A (&out)[V]) {
  constexpr int P = kPackOf<W>;
  static_assert(V % P == 0, "whole packs of the weight type");
#pragma unroll
  for (int i = 0; i < V; i += P) {
    const Pack<W, P> q = load_pack(p + i);
#pragma unroll
    for (int e = 0; e < P; ++e) out[i + e] = A(to_acc(q.v[e]));
  }
}

// Note [Affine in registers]: a pipelined row kernel's block runs rows blockIdx.x,
// blockIdx.x + gridDim.x, ..., and each thread owns the same packs of every row, so in the
// pipelined forward (layer and RMS norm) its packs of the weight and bias are loaded once,
// before the rows, and kept in registers: K * 8 floats each for bfloat16 rows. On the H200
// (2026-12-01, bfloat16 32768x4096, GB/s) layer norm 2915 -> 3247, RMS norm 3431 -> 3443.
// The backward's weight the same way measured slower (2649 -> 2495: its column sums already
// hold 2 * K * 8 floats a thread) and loads its packs each row.
//
// Note [Layer-norm weights in their dtype]: the kernels that read the weight and bias of a
// half-type input take them in the input's dtype (W = T) as well as in float32 (W = A), so a
// bfloat16 model's layer norm launches one kernel, not three (two casts of 4096 elements
// cost as much as 5% of the 32768x4096 forward's time). The others (register rows, warp
// rows, rows of any length) take A; the launchers cast for them (acc_vector).

// Note [Narrow norm rows]: Nsight Compute at the bench's clocks (H200, 2026-12-01) counts 3200
// warp instructions a bfloat16 layer-norm forward row of 4096 on 256-thread blocks (eight warps
// of 400; 72% issue-slot use; three blocks an SM) against 1430 for softmax's 128-thread blocks
// (four warps of 360; nine blocks an SM). Layer norm on 128-thread blocks measured slower while
// it held its weight and bias in registers (64 floats a thread: Note [Lean half rows]). Now
// (tp._C._cuda_set_narrow_norm_rows, on by default) half-type rows of exactly 4 * 128 packs
// (4096 elements) take kNarrowNormThreads-thread blocks, four packs a thread, as full rows
// (Note [Full rows]: no bounds checks, unrolled copies, the output as x * rstd - mean * rstd),
// reading w and b per row (L1 holds their 16 KB) with which of them are present fixed at
// compile time; kNarrowNormBlocks blocks an SM asked for (56-62 registers, no spills). SASS row
// loop with bfloat16 weight and bias: 561 instructions a warp for 32 values a thread, 2244 a
// row's four warps, against 484 a warp and 3872 a row for the 256-thread kernel (static counts;
// the executed 3200 above). On the H200 (2026-12-01, 32768x4096 bfloat16, GB/s, four runs):
// layer norm 3580 / 3545 / 3580 / 3526 against 3536 / 3520 / 3504 / 3517, RMS norm 3715 / 3656
// / 3710 / 3688 against 3460 / 3469 / 3504 / 3492; Nsight Compute at the bench's clocks:
// 145-148 against 149-150 us, 70 M warp instructions against 105 M, 50% issue-slot use against
// 72%, DRAM 72% for both (barrier stalls twice the 256-thread kernel's; long-scoreboard ones,
// the affine's loads at a 41% L1 hit rate, fifty times). Two variants measured no faster and
// were dropped (run 2): a row's mean and variance in one exchange, each thread's moments merged
// pairwise (Chan, Golub and LeVeque; 3529, ncu 147.6 us), and grids of the fewest blocks that
// run the same number of rows each (1024 blocks of 32 rows instead of 1056 of 31.03: layer norm
// 3508, softmax bfloat16 3537 against 3598, float32 3629 against 3653, layer-norm backward 3354
// against 3373). Nor did launching the pipelined row kernels with programmatic stream
// serialization, each waiting first for the kernel before it (griddepcontrol.wait), so its
// blocks are scheduled while that kernel drains (run 3: layer norm 3567 against 3580, RMS norm
// 3731 against 3710, softmax bfloat16 3621 against 3626, float32 3707 against 3694, layer-norm
// backward bfloat16 3382 against 3367): launch gaps are not what the bench's time a call holds
// beyond the kernel's (Nsight Compute counts 242 of the 268 MB written: the rest leaves L2
// during the next call). Nor did re-reading a narrow row from the ring in each of its three
// passes to hold the weight and bias in registers in their half type instead of loading them
// per row (run 4: 72 registers and seven blocks an SM with both; layer norm 3467 against 3526,
// RMS norm 3582 against 3688). Half-type rows of exactly 4096 now take the packed kernels
// first (Note [Packed half rows], 3938 GB/s); the narrow rows serve them with
// tp._C._cuda_set_packed_half_rows(0) or a weight or bias of another dtype (float32).
constexpr int kNarrowNormThreads = 128;
constexpr int kNarrowNormBlocks = 8;

/// This thread's packs k of a layer norm's weight and bias.
template <class A, int K, int V>
struct RowAffine {
  A w[K][V], b[K][V];
};

/// Loads the packs j = t + k * nt < npk of w and b; an absent w is ones and an absent b
/// negative zeros, so fma(r, w, b) is exactly r, r * w or r + b where they are absent (-0
/// keeps a -0 result's sign).
template <class A, int K, int V, class W>
__device__ __forceinline__ void load_row_affine(RowAffine<A, K, V>& aff, const W* w, const W* b, int t, int nt,
                                                int64_t npk) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * nt;
#pragma unroll
    for (int e = 0; e < V; ++e) aff.w[k][e] = A(1), aff.b[k][e] = -A(0);
    if (j < npk) {
      if (w) load_accs(w + j * V, aff.w[k]);
      if (b) load_accs(b + j * V, aff.b[k]);
    }
  }
}

/// 1 / sqrt(var + eps), formed in double as the CPU kernel does.
template <class A>
__device__ __forceinline__ A inv_std(A var, double eps) {
  return A(1.0 / sqrt(double(var > A(0) ? var : A(0)) + eps));
}

// Note [Lean norm rows]: the half-type layer-norm backward (pipelined, up to two packs a
// thread) runs lean rows. Its row loop was instruction-heavy (SASS, bfloat16 rows of 4096:
// 865 instructions for 16 values, a third of them address arithmetic, a sixth unpacking),
// and every row waited out its mean / rstd loads right after its first barrier (DRAM: the
// streamed rows evict the statistics from L2). A lean row takes its two row sums in one
// exchange (group_reduce2), unrolls its copies (pipe_fetch's KMAX), unpacks bfloat16 words
// whole (unpack_acc), forms xhat as one FMA and the input gradient as two, multiplies by
// 1 / n (655 SASS instructions), and loaded the block's next row's statistics a row early
// (since staged: Note [Staged norm operands]). 90 registers: two blocks an SM instead of
// three. On the H200 (2026-12-01, bfloat16 32768x4096, GB/s, after Note [Barrier-free rows]):
// 2801 -> 3164 (the statistics ahead alone 2777, the lean row alone 2931; asked for three
// blocks an SM with __launch_bounds__, 3126 with 24 bytes spilled). float32 keeps the plain
// rows (3722). Dropped after timing: the forward's moments in one exchange (Chan et al.'s
// pairwise update; 3196 against 3319), and the forward's affine held in the weight's half
// type at a higher occupancy (3017 / 3308 against 3457 / 3499 on 128 / 256 threads: the
// spills).

/// r = r * w + b (one FMA) for pack j of w and b (of type W), with which of them are present
/// fixed at compile time: kAffine 0 neither, 1 w, 2 both, 3 b (Note [Narrow norm rows]).
template <int kAffine, class A, int V, class W>
__device__ __forceinline__ void apply_affine(A (&r)[V], const W* w, const W* b, int64_t j) {
  A wv[V], bv[V];
  if constexpr (kAffine == 1 || kAffine == 2) load_accs(w + j * V, wv);
  if constexpr (kAffine >= 2) load_accs(b + j * V, bv);
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if constexpr (kAffine == 2) r[e] = fma(r[e], wv[e], bv[e]);
    else if constexpr (kAffine == 1) r[e] *= wv[e];
    else if constexpr (kAffine == 3) r[e] += bv[e];
  }
}

/// Calls go(std::integral_constant<int, kAffine>) for the affine case of apply_affine that the
/// present operands w and b make.
template <class F>
void with_affine(const void* w, const void* b, F&& go) {
  if (w && b) go(std::integral_constant<int, 2>{});
  else if (w) go(std::integral_constant<int, 1>{});
  else if (b) go(std::integral_constant<int, 3>{});
  else go(std::integral_constant<int, 0>{});
}

/// Layer norm of one row held in registers (threads as softmax_row): two passes over the
/// registers, the mean, then the centred sum of squares; thread 0 of the row writes *mean
/// and *rstd (when npk > 0). No `mean`: RMS norm (Note [RMS norm as an uncentred layer
/// norm], csrc/ops/nn_norm.cpp), as in all the layer-norm kernels here. aff (Note [Affine in
/// registers]): this thread's packs of w and b, loaded before the rows; else w and b (of type
/// W: Note [Layer-norm weights in their dtype]) are read per row. kFull, kAffine: Note
/// [Narrow norm rows]: every thread has K packs; w and b read per row, present as kAffine =
/// 0: neither, 1: w, 2: both, 3: b (-1: read at run time, or aff).
template <class T, int K, class W = acc_t<T>, bool kFull = false, int kAffine = -1>
__device__ __forceinline__ void layer_norm_row(const T* in, T* out, const W* w, const W* b,
                                               acc_t<T>* mean, acc_t<T>* rstd, int t, int nt, int64_t npk,
                                               int64_t n, double eps, ReduceRing<acc_t<T>>& red,
                                               const RowAffine<acc_t<T>, K, kPackOf<T>>* aff = nullptr) {
  using A = acc_t<T>;
  constexpr int V = kPackOf<T>;
  A v[K][V];
  A s = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * nt;
    if (kFull || j < npk) {
      const Pack<T, V> q = load_pack(in + j * V);
#pragma unroll
      for (int e = 0; e < V; ++e) s += (v[k][e] = to_acc(q.v[e]));
    }
  }
  const A m = mean ? group_reduce(s, nt, red, SumFn{}) / A(n) : A(0);
  A ss = 0;
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (kFull || t + int64_t(k) * nt < npk)
#pragma unroll
      for (int e = 0; e < V; ++e) ss += (v[k][e] - m) * (v[k][e] - m);
  const A rs = inv_std(group_reduce(ss, nt, red, SumFn{}) / A(n), eps);
  if (npk && t == 0) {
    if (mean) *mean = m;
    *rstd = rs;
  }
  [[maybe_unused]] const A nmrs = -m * rs;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * nt;
    if (kFull || j < npk) {
      A r[V];
#pragma unroll
      for (int e = 0; e < V; ++e) r[e] = kFull ? fma(v[k][e], rs, nmrs) : (v[k][e] - m) * rs;
      // the affine as one FMA (one rounding); with aff without a branch: an absent weight is 1
      // there and an absent bias -0, the same bits as the loads' path
      if constexpr (kAffine >= 0) {
        apply_affine<kAffine>(r, w, b, j);
      } else if (aff) {
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = fma(r[e], aff->w[k][e], aff->b[k][e]);
      } else if (w && b) {
        A wv[V], bv[V];
        load_accs(w + j * V, wv);
        load_accs(b + j * V, bv);
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = fma(r[e], wv[e], bv[e]);
      } else if (w || b) {
        A wb[V];
        load_accs(w ? w + j * V : b + j * V, wb);
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = w ? r[e] * wb[e] : r[e] + wb[e];
      }
      store_rounded(out + j * V, r);
    }
  }
}

/// Layer norm of half-type rows of kPackedRowLength, one a block of NT threads (Note [Packed
/// half rows]): a thread's K packs held as loaded and unpacked in each pass; the weight and
/// bias (of T) read per row, present as kAffine says (layer_norm_row's); no mean: RMS norm.
/// The output as the narrow rows form it (Note [Narrow norm rows]; on 128 threads bit for bit).
template <class T, int NT, int kAffine>
__global__ __launch_bounds__(NT, packed_row_blocks(NT)) void layer_norm_packed_kernel(
    const T* x, const T* w, const T* b, T* y, acc_t<T>* mean, acc_t<T>* rstd, double eps) {
  using A = acc_t<T>;
  using Row = PackedRow<T, NT>;
  constexpr int V = Row::V, K = Row::K;
  __shared__ A smem[2 * NT / 32];
  ReduceRing<A> red{smem, NT / 32};  // Note [Barrier-free rows]
  const Row p(x);
  A s = 0;
  p.each<false>([&](A v) { s += v; });
  const A m = mean ? group_reduce(s, NT, red, SumFn{}) / A(Row::n) : A(0);
  A ss = 0;
  p.each([&](A v) { ss += (v - m) * (v - m); });
  const A rs = inv_std(group_reduce(ss, NT, red, SumFn{}) / A(Row::n), eps);
  if (p.t == 0) {
    if (mean) mean[p.row] = m;
    rstd[p.row] = rs;
  }
  const A nmrs = -m * rs;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    A r[V];
    unpack_acc(opaque(p.q[k]), r);
#pragma unroll
    for (int e = 0; e < V; ++e) r[e] = fma(r[e], rs, nmrs);
    apply_affine<kAffine>(r, w, b, p.t + k * NT);
    store_rounded(p.at(y, k), r);
  }
}

/// Layer norm of rows held in registers (shape as softmax_reg_kernel).
template <class T, int K>
__global__ __launch_bounds__(kMaxRowThreads) void layer_norm_reg_kernel(const T* x, const acc_t<T>* w,
                                                                        const acc_t<T>* b, T* y, acc_t<T>* mean,
                                                                        acc_t<T>* rstd, int64_t rows, int64_t n,
                                                                        int tpr, double eps) {
  __shared__ acc_t<T> smem[2 * kMaxRowThreads / 32];
  ReduceRing<acc_t<T>> red{smem, kMaxRowThreads / 32};
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int64_t r = row < rows ? row : 0;
  layer_norm_row<T, K>(x + r * n, y + r * n, w, b, mean ? mean + r : nullptr, rstd + r, int(threadIdx.x) % tpr,
                       tpr, row < rows ? n / kPackOf<T> : 0, n, eps, red);
}

/// Copies this thread's packs j = t + k * NT < npk of the n values of W at src to dst (shared
/// memory; Note [Staged norm operands]: only this thread reads them back).
template <int K, int NT, int V, class W>
__device__ __forceinline__ void stage_packs(W* dst, const W* src, int t, int npk) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = t + k * NT;
    if (j < npk)
#pragma unroll
      for (int i = 0; i < V; i += kPackOf<W>)
        *reinterpret_cast<Pack<W, kPackOf<W>>*>(dst + j * V + i) = load_pack(src + j * V + i);
  }
}

/// Layer norm of rows streamed through shared memory (Note [Row pipeline]); K packs a thread
/// of a kPipeThreads block; the weight and bias in registers (Note [Affine in registers]), of
/// type W (Note [Layer-norm weights in their dtype]). Three blocks an SM asked for up to two
/// packs a thread (bfloat16 rows of 4096: 77 registers instead of 90, which fit only two).
/// (The 128-thread blocks of Note [Lean half rows] measured slower here: bfloat16 rows of
/// 4096 on the H200, 3319 / 3397 / 3457 GB/s in three runs against 3528 / 3472 / 3499.)
/// Two variants measured no faster on the H200 (2026-12-01, bfloat16 32768x4096, one run,
/// GB/s: default 3458, RMS norm 3491) and were dropped: the mean and variance as sums times
/// 1 / n with rstd as rsqrtf in float, as PyTorch's kernel forms them (row loop 484 -> 412 SASS
/// instructions; 3433, RMS norm 3479; under Nsight Compute's base clocks 168 against 194 us),
/// and a five-stage ring, four rows in flight a block (3414, RMS norm 3484; with the float
/// statistics 3453). Nor did staging the weight and bias in shared memory (Note [Staged norm
/// operands]) or full rows (Note [Full rows]). NT = kNarrowNormThreads: Note [Narrow norm
/// rows] (full rows of K packs a thread, the affine kAffine as layer_norm_row's).
template <class T, int K, class W, int NT = kPipeThreads, int kAffine = -1>
__global__ __launch_bounds__(NT, NT == kPipeThreads ? (K <= 2 ? 3 : 1) : kNarrowNormBlocks) void layer_norm_pipe_kernel(
    const T* x, const W* w, const W* b, T* y, acc_t<T>* mean, acc_t<T>* rstd, int64_t rows, int64_t n, double eps) {
  constexpr int V = kPackOf<T>;
  constexpr bool kNarrow = NT != kPipeThreads;
  extern __shared__ __align__(16) unsigned char pipe_smem[];
  __shared__ acc_t<T> smem[2 * NT / 32];
  ReduceRing<acc_t<T>> red{smem, NT / 32};  // Note [Barrier-free rows]
  const T* const src[1] = {x};
  const int t = int(threadIdx.x), npk = int(n / V);
  RowAffine<acc_t<T>, K, V> aff;
  if constexpr (!kNarrow) load_row_affine(aff, w, b, t, NT, npk);
  pipe_rows<NT, (kNarrow ? K : 0), kNarrow>(src, rows, n, reinterpret_cast<T*>(pipe_smem),
                                             [&](int64_t row, const T* buf) {
    layer_norm_row<T, K, W, kNarrow, kAffine>(buf, y + row * n, w, b, mean ? mean + row : nullptr, rstd + row, t, NT,
                                              npk, n, eps, red, kNarrow ? nullptr : &aff);
  });
}

/// Layer norm of half-type rows, one warp a row (Note [Warp rows]); K packs a lane.
template <class T, int K>
__global__ __launch_bounds__(kWarpPipeThreads) void layer_norm_warp_kernel(const T* x, const acc_t<T>* w,
                                                                           const acc_t<T>* b, T* y, acc_t<T>* mean,
                                                                           acc_t<T>* rstd, int64_t rows, int64_t n,
                                                                           double eps) {
  extern __shared__ __align__(16) unsigned char pipe_smem[];
  const T* const src[1] = {x};
  ReduceRing<acc_t<T>> none{nullptr, 0};  // (a warp a row: its reductions are shuffles)
  pipe_rows_warp(src, rows, n, reinterpret_cast<T*>(pipe_smem), [&](int64_t row, const T* buf) {
    layer_norm_row<T, K>(buf, y + row * n, w, b, mean ? mean + row : nullptr, rstd + row, int(threadIdx.x & 31), 32,
                         n / kPackOf<T>, n, eps, none);
  });
}

/// Layer norm of rows of any length (shape as softmax_stream_kernel): the row read three
/// times (mean, centred squares, output; twice for RMS norm).
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void layer_norm_stream_kernel(const T* x, const acc_t<T>* w,
                                                                           const acc_t<T>* b, T* y, acc_t<T>* mean,
                                                                           acc_t<T>* rstd, int64_t rows, int64_t n,
                                                                           int tpr, double eps) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n;
  A m = 0;
  if (mean) {
    A s = 0;
    zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { s += to_acc(v); }, x + off);
    m = group_reduce(s, tpr, smem, SumFn{}) / A(n);
  }
  A ss = 0;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { ss += (to_acc(v) - m) * (to_acc(v) - m); }, x + off);
  const A rs = inv_std(group_reduce(ss, tpr, smem, SumFn{}) / A(n), eps);
  if (len && t == 0) {
    if (mean) mean[row] = m;
    rstd[row] = rs;
  }
  zip_row(len, t, tpr, y + off, [&](int64_t i, T v) {
    A r = (to_acc(v) - m) * rs;
    if (w) r *= w[i];
    if (b) r += b[i];
    return from_acc<T>(r);
  }, x + off);
}

/// Layer-norm backward of rows held in registers, each block looping over row groups
/// (gridDim.x * rows-per-block apart): gx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
/// with gw = g * w, and (when pw) each row slot's sums of g * xhat and g over its rows into
/// pw / pb[slot * n + column], slot = blockIdx.x * rows-per-block + the row's place in the block
/// (pb may be null). No `mean`: RMS norm, xhat = x * rstd and no mean(gw) term.
template <class T, int K>
__global__ __launch_bounds__(kMaxRowThreads) void layer_norm_backward_reg_kernel(
    const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd, const acc_t<T>* w, T* gx, acc_t<T>* pw,
    acc_t<T>* pb, int64_t rows, int64_t n, int tpr) {
  using A = acc_t<T>;
  constexpr int V = kPackOf<T>;
  __shared__ A smem[2 * kMaxRowThreads / 32];
  ReduceRing<A> red{smem, kMaxRowThreads / 32};
  const int rpb = int(blockDim.x) / tpr, sub = int(threadIdx.x) / tpr, t = int(threadIdx.x) % tpr;
  const int64_t npk_all = n / V;
  A dw[K][V], db[K][V];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) dw[k][e] = db[k][e] = A(0);
  for (int64_t first = int64_t(blockIdx.x) * rpb; first < rows; first += int64_t(gridDim.x) * rpb) {
    const int64_t row = first + sub;
    const int64_t npk = row < rows ? npk_all : 0;
    const int64_t off = (row < rows ? row : 0) * n;
    const A m = row < rows && mean ? mean[row] : A(0), rs = row < rows ? rstd[row] : A(0);
    A xh[K][V], gv[K][V];
    A sa = 0, sc = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = t + int64_t(k) * tpr;
      if (j < npk) {
        const Pack<T, V> qx = load_pack(x + off + j * V), qg = load_pack(g + off + j * V);
        A wv[V];
        if (w) load_accs(w + j * V, wv);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          xh[k][e] = (to_acc(qx.v[e]) - m) * rs;
          const A gg = to_acc(qg.v[e]);
          dw[k][e] += gg * xh[k][e];
          db[k][e] += gg;
          gv[k][e] = w ? gg * wv[e] : gg;
          sa += gv[k][e];
          sc += gv[k][e] * xh[k][e];
        }
      }
    }
    if (!gx) continue;
    const A a = mean ? group_reduce(sa, tpr, red, SumFn{}) / A(n) : A(0);
    const A c = group_reduce(sc, tpr, red, SumFn{}) / A(n);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = t + int64_t(k) * tpr;
      if (j < npk) {
        A r[V];
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = rs * (gv[k][e] - a - xh[k][e] * c);
        store_rounded(gx + off + j * V, r);
      }
    }
  }
  if (!pw) return;
  const int64_t slot = int64_t(blockIdx.x) * rpb + sub;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * tpr;
    if (j < npk_all)
#pragma unroll
      for (int e = 0; e < V; ++e) {
        pw[slot * n + j * V + e] = dw[k][e];
        if (pb) pb[slot * n + j * V + e] = db[k][e];
      }
  }
}

// Note [Staged norm operands]: the lean backward (Note [Lean norm rows]) read per row its
// weight packs from global memory (twice: L1 if the streamed rows left them there, else L2,
// right after the row's copies land and again after its exchange) and kept the next row's
// statistics in flight in registers (90 registers: two blocks an SM). Instead each thread
// copies its packs of w into shared memory once (only it reads them, so no barrier), and the
// block loads the statistics of its next kPipeThreads rows into shared memory at once (two
// barriers per kPipeThreads rows; the first chunk's loads overlap the ring's first copies).
// Shared memory a block: the ring's 48 KB and 10 KB for bfloat16 rows of 4096; 78 registers,
// three blocks an SM. On the H200 (2026-12-01, bfloat16 32768x4096, GB/s, one run): 3150 ->
// 3316, and 3378 with Note [Full rows]. The forward staged the same way (its weight and bias
// in shared memory instead of registers: 48 registers, four blocks an SM) measured slower
// (3383 against 3491; RMS norm 3434 against 3514) and was dropped, as was the forward's full
// rows (3416; 3369 with both).

/// The layer-norm backward over rows of x and g streamed through shared memory (Note [Row
/// pipeline]): gx as layer_norm_backward_reg_kernel, reading the rows from shared memory
/// twice; each thread keeps its columns' sums of g * xhat and g over the block's rows, and
/// (when pw) the block writes them to pw / pb[blockIdx.x * n + column] (pb may be null; no
/// mean: RMS norm); the weight of type W (Note [Layer-norm weights in their dtype]). (Keeping
/// xhat and g * w in registers between the passes took 101 registers for two packs a thread,
/// 170 for four; 128-thread blocks with four packs a thread and xhat / gx in fewer FMAs
/// measured 2076 against 2649 GB/s for bfloat16 rows of 4096 on the H200: twice the column
/// sums a thread.) kLean: Note [Lean norm rows] and Note [Staged norm operands]; kFull: Note
/// [Full rows]. (A minimum of blocks an SM in __launch_bounds__, even one, raised the plain
/// kernel's registers 73 -> 88.)
template <class T, int K, class W, bool kLean = false, bool kFull = false>
__global__ __launch_bounds__(kPipeThreads) void layer_norm_backward_pipe_kernel(
    const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd, const W* w, T* gx, acc_t<T>* pw,
    acc_t<T>* pb, int64_t rows, int64_t n) {
  using A = acc_t<T>;
  constexpr int V = kPackOf<T>;
  constexpr int NT = kPipeThreads;
  extern __shared__ __align__(16) unsigned char pipe_smem[];
  __shared__ A smem[2 * 2 * NT / 32];
  ReduceRing<A> red{smem, 2 * NT / 32};  // Note [Barrier-free rows] (group_reduce2: two values a warp)
  const int t = int(threadIdx.x), npk = int(n / V);
  A dw[K][V], db[K][V];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) dw[k][e] = db[k][e] = A(0);
  const T* const src[2] = {x, g};
  // kLean (Note [Staged norm operands]): after the ring, the statistics of NT of the block's
  // rows (mean, then rstd) and this thread's packs of w, which only it reads
  [[maybe_unused]] A* st = reinterpret_cast<A*>(pipe_smem + size_t(2 * kPipeStages) * size_t(n) * sizeof(T));
  [[maybe_unused]] int local = 0;  // kLean: the block's rows done, modulo NT (a power of two)
  static_assert((NT & (NT - 1)) == 0, "kPipeThreads is a power of two");
  const W* wr = w;
  if constexpr (kLean) {
    if (w) {
      W* ws = reinterpret_cast<W*>(st + 2 * NT);
      stage_packs<K, NT, V>(ws, w, t, npk);
      wr = ws;
    }
  }
  [[maybe_unused]] const A inv_n = A(1) / A(n);
  auto body = [&](int64_t row, const T* buf) {
    A m, rs;
    if constexpr (kLean) {
      const int slot = local;
      local = (local + 1) & (NT - 1);
      if (slot == 0) {  // the next NT rows' statistics, every thread one row's
        __syncthreads();  // the last chunk's readers are done
        const int64_t r = row + int64_t(t) * gridDim.x;
        if (r < rows) st[t] = mean ? mean[r] : A(0), st[NT + t] = rstd[r];
        __syncthreads();
      }
      m = st[slot], rs = st[NT + slot];
    } else {
      m = mean ? mean[row] : A(0), rs = rstd[row];
    }
    [[maybe_unused]] const A nmrs = -m * rs;
    // xhat and g * w of this thread's pack j, from the shared rows (x at buf, g at buf + n);
    // kLean (Note [Lean norm rows]): unpacked as words, xhat as one FMA
    auto load = [&](int j, A (&xh)[V], A (&gg)[V], A (&gv)[V]) {
      const Pack<T, V> qx = load_pack(buf + j * V), qg = load_pack(buf + n + j * V);
      A wv[V];
      if (w) load_accs(wr + j * V, wv);
      if constexpr (kLean) {
        unpack_acc(qx, xh);
        unpack_acc(qg, gg);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if constexpr (kLean) {
          xh[e] = fma(xh[e], rs, nmrs);
        } else {
          xh[e] = (to_acc(qx.v[e]) - m) * rs;
          gg[e] = to_acc(qg.v[e]);
        }
        gv[e] = w ? gg[e] * wv[e] : gg[e];
      }
    };
    A sa = 0, sc = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * NT;
      if (kFull || j < npk) {
        A xh[V], gg[V], gv[V];
        load(j, xh, gg, gv);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          dw[k][e] += gg[e] * xh[e];
          db[k][e] += gg[e];
          sa += gv[e];
          sc += gv[e] * xh[e];
        }
      }
    }
    if (!gx) return;
    A a, c;
    if constexpr (kLean) {
      group_reduce2(sa, sc, NT, red, SumFn{});
      a = mean ? sa * inv_n : A(0), c = sc * inv_n;
    } else {
      a = mean ? group_reduce(sa, NT, red, SumFn{}) / A(n) : A(0);
      c = group_reduce(sc, NT, red, SumFn{}) / A(n);
    }
    [[maybe_unused]] const A nrc = -rs * c, nra = -rs * a;  // kLean: gx = gv rs - a rs - xhat c rs
    T* out = gx + row * n;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = t + k * NT;
      if (kFull || j < npk) {
        A xh[V], gg[V], gv[V];
        load(j, xh, gg, gv);
        A r[V];
#pragma unroll
        for (int e = 0; e < V; ++e) {
          if constexpr (kLean) r[e] = fma(xh[e], nrc, fma(gv[e], rs, nra));
          else r[e] = rs * (gv[e] - a - xh[e] * c);
        }
        store_rounded(out + j * V, r);
      }
    }
  };
  pipe_rows<NT, (kLean || kFull ? K : 0), kFull>(src, rows, n, reinterpret_cast<T*>(pipe_smem), body);
  if (!pw) return;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = t + k * NT;
    if (kFull || j < npk)
#pragma unroll
      for (int e = 0; e < V; ++e) {
        pw[int64_t(blockIdx.x) * n + j * V + e] = dw[k][e];
        if (pb) pb[int64_t(blockIdx.x) * n + j * V + e] = db[k][e];
      }
  }
}

/// gx of the layer-norm backward for rows of any length (shape as layer_norm_stream_kernel).
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void layer_norm_backward_stream_kernel(
    const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd, const acc_t<T>* w, T* gx, int64_t rows,
    int64_t n, int tpr) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n;
  const A m = len && mean ? mean[row] : A(0), rs = len ? rstd[row] : A(0);
  A sa = 0, sc = 0;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t i, T gg, T xx) {
    const A gw = w ? to_acc(gg) * w[i] : to_acc(gg);
    sa += gw;
    sc += gw * (to_acc(xx) - m) * rs;
  }, g + off, x + off);
  const A a = mean ? group_reduce(sa, tpr, smem, SumFn{}) / A(n) : A(0);
  const A c = group_reduce(sc, tpr, smem, SumFn{}) / A(n);
  zip_row(len, t, tpr, gx + off, [&](int64_t i, T gg, T xx) {
    const A gw = w ? to_acc(gg) * w[i] : to_acc(gg);
    return from_acc<T>(rs * (gw - a - (to_acc(xx) - m) * rs * c));
  }, g + off, x + off);
}

constexpr int kColsX = 32, kColsY = 8;

/// Partial column sums of g * xhat and g over row chunk blockIdx.y (`chunk` rows), columns
/// [blockIdx.x * 32, +32): into pw / pb[blockIdx.y * n + column] (pb may be null; no mean:
/// RMS norm's xhat).
template <class T>
__global__ void layer_norm_columns_kernel(const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd,
                                          acc_t<T>* pw, acc_t<T>* pb, int64_t rows, int64_t n, int64_t chunk) {
  using A = acc_t<T>;
  __shared__ A sw[kColsY][kColsX], sb[kColsY][kColsX];
  const int64_t col = int64_t(blockIdx.x) * kColsX + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunk, r1 = std::min(rows, r0 + chunk);
  A aw = 0, ab = 0;
  if (col < n)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColsY) {
      const A gg = to_acc(g[r * n + col]);
      aw += gg * (to_acc(x[r * n + col]) - (mean ? mean[r] : A(0))) * rstd[r];
      ab += gg;
    }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    for (int i = 1; i < kColsY; ++i) {
      aw += sw[i][threadIdx.x];
      ab += sb[i][threadIdx.x];
    }
    pw[int64_t(blockIdx.y) * n + col] = aw;
    if (pb) pb[int64_t(blockIdx.y) * n + col] = ab;
  }
}

/// out[c] = the sum of part[p * n + c] over p, in a fixed order: thread y of a 32 x 32
/// block adds parts y, y + 32, ..., then row 0 adds the 32 sums in order (and rounds them to
/// O: a layer-norm weight's gradient in the weight's dtype).
template <class A, class O = A>
__global__ void sum_partials_kernel(const A* part, int64_t parts, int64_t n, O* out) {
  __shared__ A sh[kColsX][kColsX + 1];
  const int64_t col = int64_t(blockIdx.x) * kColsX + threadIdx.x;
  A s = 0;
  if (col < n)
    for (int64_t p = threadIdx.y; p < parts; p += kColsX) s += part[p * n + col];
  sh[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    for (int i = 1; i < kColsX; ++i) s += sh[i][threadIdx.x];
    out[col] = O(s);
  }
}

// ---------------------------------------------------------------- batch norm and group norm

/// Offset of element e of channel c's plane in an (A, C, L) block.
__device__ __forceinline__ int64_t plane_offset(int64_t e, int64_t c, int64_t C, int64_t L) {
  const int64_t a = e / L;
  return (a * C + c) * L + (e - a * L);
}

/// A running count, mean and sum of squared deviations (Welford; Chan et al. to merge).
template <class A>
struct Welford {
  A n = 0, m = 0, m2 = 0;
  __device__ void add(A v) {
    n += A(1);
    const A d = v - m;
    m += d / n;
    m2 += d * (v - m);
  }
  __device__ void merge(const Welford& o) {
    if (o.n == A(0)) return;
    if (n == A(0)) {
      *this = o;
      return;
    }
    const A tot = n + o.n, d = o.m - m;
    m += d * (o.n / tot);
    m2 += o.m2 + d * d * (n * o.n / tot);
    n = tot;
  }
};

/// Channel blockIdx.x's statistics over elements [blockIdx.y * chunk, +chunk) of its plane
/// (`plane` elements): into part[(c * gridDim.y + split) * 3 + {0, 1, 2}] = (count, mean, m2).
template <class T>
__global__ void batch_norm_stats_kernel(const T* x, acc_t<T>* part, int64_t C, int64_t L, int64_t plane,
                                        int64_t chunk) {
  using A = acc_t<T>;
  __shared__ Welford<A> sh[256];
  const int64_t c = blockIdx.x, e0 = int64_t(blockIdx.y) * chunk, e1 = std::min(plane, e0 + chunk);
  Welford<A> w;
  for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) w.add(to_acc(x[plane_offset(e, c, C, L)]));
  sh[threadIdx.x] = w;
  __syncthreads();
  for (int half = int(blockDim.x) / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) sh[threadIdx.x].merge(sh[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    A* p = part + (c * gridDim.y + blockIdx.y) * 3;
    p[0] = sh[0].n;
    p[1] = sh[0].m;
    p[2] = sh[0].m2;
  }
}

/// Channels-last statistics: columns [blockIdx.x * 32, +32) of the (rows x C) matrix over
/// rows [blockIdx.y * chunk, +chunk), coalesced across channels; part as batch_norm_stats_kernel.
template <class T>
__global__ void batch_norm_stats_cl_kernel(const T* x, acc_t<T>* part, int64_t C, int64_t rows, int64_t chunk) {
  using A = acc_t<T>;
  __shared__ Welford<A> sh[kColsY][kColsX];
  const int64_t c = int64_t(blockIdx.x) * kColsX + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunk, r1 = std::min(rows, r0 + chunk);
  Welford<A> w;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColsY) w.add(to_acc(x[r * C + c]));
  sh[threadIdx.y][threadIdx.x] = w;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int i = 1; i < kColsY; ++i) w.merge(sh[i][threadIdx.x]);
    A* p = part + (c * gridDim.y + blockIdx.y) * 3;
    p[0] = w.n;
    p[1] = w.m;
    p[2] = w.m2;
  }
}

/// Per channel: merges the splits' statistics (training) or reads the running ones, writes
/// mean / invstd and updates the running statistics (training, when given).
template <class A>
__global__ void batch_norm_finish_kernel(const A* part, int64_t splits, int64_t C, bool training, double momentum,
                                         double eps, A* rm, A* rv, A* mean, A* invstd) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    if (!training) {
      mean[c] = rm[c];
      invstd[c] = A(1) / sqrt(rv[c] + A(eps));
      continue;
    }
    Welford<A> w;
    for (int64_t s = 0; s < splits; ++s) {
      const A* p = part + (c * splits + s) * 3;
      Welford<A> o;
      o.n = p[0];
      o.m = p[1];
      o.m2 = p[2];
      w.merge(o);
    }
    const A nan = std::numeric_limits<A>::quiet_NaN();
    const A m = w.n > A(0) ? w.m : nan;
    if (rm) rm[c] = A((1 - momentum) * rm[c] + momentum * m);
    if (rv) rv[c] = A((1 - momentum) * rv[c] + momentum * (w.n > A(1) ? w.m2 / (w.n - A(1)) : nan));
    mean[c] = m;
    invstd[c] = A(1) / sqrt((w.n > A(0) ? w.m2 / w.n : nan) + A(eps));
  }
}

/// y = x * scale + shift per channel, scale = invstd * w, shift = b - mean * scale.
template <class T>
__global__ void batch_norm_apply_kernel(const T* x, T* y, const acc_t<T>* mean, const acc_t<T>* invstd,
                                        const acc_t<T>* w, const acc_t<T>* b, int64_t numel, int64_t C, int64_t L) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = L == 1 ? i % C : i / L % C;
    const A scale = w ? invstd[c] * w[c] : invstd[c];
    const A shift = (b ? b[c] : A(0)) - mean[c] * scale;
    y[i] = from_acc<T>(to_acc(x[i]) * scale + shift);
  }
}

/// Channel blockIdx.x's sums of g and g * (x - mean) over a split of its plane: into
/// part[(c * gridDim.y + split) * 2 + {0, 1}].
template <class T>
__global__ void batch_norm_grad_sums_kernel(const T* g, const T* x, const acc_t<T>* mean, acc_t<T>* part, int64_t C,
                                            int64_t L, int64_t plane, int64_t chunk) {
  using A = acc_t<T>;
  __shared__ A smem[32];
  const int64_t c = blockIdx.x, e0 = int64_t(blockIdx.y) * chunk, e1 = std::min(plane, e0 + chunk);
  const A mu = mean[c];
  A sg = 0, sgx = 0;
  for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
    const int64_t o = plane_offset(e, c, C, L);
    const A gg = to_acc(g[o]);
    sg += gg;
    sgx += gg * (to_acc(x[o]) - mu);
  }
  sg = group_reduce(sg, int(blockDim.x), smem, SumFn{});
  sgx = group_reduce(sgx, int(blockDim.x), smem, SumFn{});
  if (threadIdx.x == 0) {
    A* p = part + (c * gridDim.y + blockIdx.y) * 2;
    p[0] = sg;
    p[1] = sgx;
  }
}

/// Channels-last gradient sums (layout as batch_norm_stats_cl_kernel; part as
/// batch_norm_grad_sums_kernel).
template <class T>
__global__ void batch_norm_grad_sums_cl_kernel(const T* g, const T* x, const acc_t<T>* mean, acc_t<T>* part,
                                               int64_t C, int64_t rows, int64_t chunk) {
  using A = acc_t<T>;
  __shared__ A sg_sh[kColsY][kColsX], sgx_sh[kColsY][kColsX];
  const int64_t c = int64_t(blockIdx.x) * kColsX + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunk, r1 = std::min(rows, r0 + chunk);
  A sg = 0, sgx = 0;
  if (c < C) {
    const A mu = mean[c];
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColsY) {
      const A gg = to_acc(g[r * C + c]);
      sg += gg;
      sgx += gg * (to_acc(x[r * C + c]) - mu);
    }
  }
  sg_sh[threadIdx.y][threadIdx.x] = sg;
  sgx_sh[threadIdx.y][threadIdx.x] = sgx;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int i = 1; i < kColsY; ++i) {
      sg += sg_sh[i][threadIdx.x];
      sgx += sgx_sh[i][threadIdx.x];
    }
    A* p = part + (c * gridDim.y + blockIdx.y) * 2;
    p[0] = sg;
    p[1] = sgx;
  }
}

/// Per channel: gw, gb and the input-gradient coefficients coef[c * 3 + {0, 1, 2}] = (a, mg, k)
/// of gx = a * (g - mg - (x - mean) * k).
template <class A>
__global__ void batch_norm_grad_finish_kernel(const A* part, int64_t splits, int64_t C, int64_t count,
                                              const A* invstd, const A* w, bool training, A* gw, A* gb, A* coef) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    A sg = 0, sgx = 0;
    for (int64_t s = 0; s < splits; ++s) {
      sg += part[(c * splits + s) * 2];
      sgx += part[(c * splits + s) * 2 + 1];
    }
    const A is = invstd[c];
    if (gw) gw[c] = sgx * is;
    if (gb) gb[c] = sg;
    coef[c * 3] = (w ? w[c] : A(1)) * is;
    coef[c * 3 + 1] = training && count ? sg / A(count) : A(0);
    coef[c * 3 + 2] = training && count ? sgx * is * is / A(count) : A(0);
  }
}

template <class T>
__global__ void batch_norm_input_grad_kernel(const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* coef,
                                             T* gx, int64_t numel, int64_t C, int64_t L) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = L == 1 ? i % C : i / L % C;
    const A* k = coef + c * 3;
    gx[i] = from_acc<T>(k[0] * (to_acc(g[i]) - k[1] - (to_acc(x[i]) - mean[c]) * k[2]));
  }
}

/// Group norm: row (sample, group) of cpg * L elements, tpr threads per row (as
/// layer_norm_stream_kernel), channel of element i: group * cpg + i / L.
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void group_norm_kernel(const T* x, const acc_t<T>* w,
                                                                    const acc_t<T>* b, T* y, acc_t<T>* mean,
                                                                    acc_t<T>* rstd, int64_t rows, int64_t G,
                                                                    int64_t cpg, int64_t L, int tpr, double eps) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t n = cpg * L;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n, c0 = (row < rows ? row : 0) % G * cpg;
  A s = 0;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { s += to_acc(v); }, x + off);
  const A m = group_reduce(s, tpr, smem, SumFn{}) / A(n);
  A ss = 0;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { ss += (to_acc(v) - m) * (to_acc(v) - m); }, x + off);
  const A rs = A(1) / sqrt(group_reduce(ss, tpr, smem, SumFn{}) / A(n) + A(eps));
  if (row < rows && t == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
  zip_row(len, t, tpr, y + off, [&](int64_t i, T v) {
    const int64_t c = c0 + i / L;
    A r = (to_acc(v) - m) * rs;
    if (w) r *= w[c];
    if (b) r += b[c];
    return from_acc<T>(r);
  }, x + off);
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}
template <class T>
T* mut_ptr_or_null(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

/// Whether the optional weight t is absent or of x's dtype (Note [Layer-norm weights in their dtype]).
bool in_dtype(const Tensor& t, const Tensor& x) { return !t.defined() || t.dtype() == x.dtype(); }

/// The optional weight t in the accumulation dtype adt: itself, or a converted copy.
Tensor acc_vector(const Tensor& t, DType adt) {
  if (!t.defined() || t.dtype() == adt) return t;
  Tensor a = empty_tensor(t.sizes(), adt, t.device());
  copy_(a, t, false);
  return a;
}

int multiprocessors(int device) { return device_properties(device).multi_processor_count; }

/// Launches layer_norm_warp_kernel when warp rows are on and the rows fit them.
template <class T>
bool launch_layer_norm_warp(const T* x, const acc_t<T>* w, const acc_t<T>* b, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                            int64_t rows, int64_t n, double eps, int dev, cudaStream_t s) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    if (!warp_rows_fit<T>(n, {x, y, w, b})) return false;
    const size_t smem = size_t(kWarpPipeWarps) * kPipeStages * size_t(n) * sizeof(T);
    auto go = [&](auto kernel) {
      kernel<<<pipe_blocks(kernel, smem, rows, dev, kWarpPipeThreads, kWarpPipeWarps), kWarpPipeThreads, smem, s>>>(
          x, w, b, y, mean, rstd, rows, n, eps);
    };
    switch (warp_packs_per_lane<T>(n)) {
      case 1: go(layer_norm_warp_kernel<T, 1>); break;
      case 2: go(layer_norm_warp_kernel<T, 2>); break;
      case 4: go(layer_norm_warp_kernel<T, 4>); break;
      case 8: go(layer_norm_warp_kernel<T, 8>); break;
      default: go(layer_norm_warp_kernel<T, 16>); break;
    }
    return true;
  }
}

/// Calls go(std::integral_constant<int, K>) for K = k (1, 2, 4 or 8; 8 only where the
/// kernel's shape allows it: kmax).
template <int Kmax, class F>
void with_k(int k, F&& go) {
  switch (k) {
    case 1: return go(std::integral_constant<int, 1>{});
    case 2: return go(std::integral_constant<int, 2>{});
    case 4:
      if constexpr (Kmax >= 4) return go(std::integral_constant<int, 4>{});
      break;
    default:
      if constexpr (Kmax >= 8) return go(std::integral_constant<int, 8>{});
      break;
  }
  TP_FAIL("nn kernels: unexpected registers per row");
}

/// (splits, chunk) of a per-channel plane of `plane` elements over C channels: enough
/// blocks to fill the device, each at least 4096 elements. Channels last (L == 1) blocks
/// take 32 channels each.
std::pair<int64_t, int64_t> plane_splits(int64_t plane, int64_t C, int64_t L, int device) {
  const int64_t blocks_per_split = L == 1 ? (C + kColsX - 1) / kColsX : C;
  const int64_t want = std::max<int64_t>(1, int64_t(multiprocessors(device)) * 4 / std::max<int64_t>(blocks_per_split, 1));
  int64_t splits = std::max<int64_t>(1, std::min<int64_t>(want, (plane + 4095) / 4096));
  splits = std::min<int64_t>(splits, 65535);
  const int64_t chunk = std::max<int64_t>(1, (plane + splits - 1) / splits);
  return {std::max<int64_t>(1, (plane + chunk - 1) / chunk), chunk};
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, int64_t rows, int64_t len,
                        const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const DType adt = std::is_same_v<A, double> ? DType::Float64 : DType::Float32;
    const T* xp = x.device_data<T>();
    T* yp = y.device_data<T>();
    A *mp = mut_ptr_or_null<A>(mean), *rp = rstd.device_data<A>();
    const void *wraw = w.defined() ? w.data_ptr() : nullptr, *braw = b.defined() ? b.data_ptr() : nullptr;
    if constexpr (sizeof(T) == 2) {  // Note [Packed half rows]
      const int nt = in_dtype(w, x) && in_dtype(b, x) ? packed_row_threads<T>(len, rows, {xp, yp, wraw, braw}) : 0;
      if (nt) {
        const T *wp = ptr_or_null<T>(w), *bp = ptr_or_null<T>(b);
        with_packed_threads(nt, [&](auto threads) {
          with_affine(wp, bp, [&](auto affine) {
            constexpr int NT = decltype(threads)::value;
            layer_norm_packed_kernel<T, NT, decltype(affine)::value>
                <<<unsigned(rows), NT, 0, s>>>(xp, wp, bp, yp, mp, rp, eps);
          });
        });
        return;
      }
    }
    // the pipelined forward only for the half types: float32 rows of 4096 ran at 3931 GB/s in
    // registers and 3340 pipelined on the H200 (bfloat16: 2092 and 2785; Note [Row pipeline])
    if (sizeof(T) < 4 && row_pipeline_enabled() && !warp_rows_fit<T>(len, {xp, yp}) &&
        pipe_rows_fit<T>(len, {xp, yp, wraw, braw})) {
      if constexpr (sizeof(T) < 4) {  // (no float / double instances of the pipelined kernel)
        auto go = [&](auto* wp, auto* bp) {
          using W = std::remove_const_t<std::remove_pointer_t<decltype(wp)>>;
          const size_t smem = size_t(kPipeStages) * size_t(len) * sizeof(T);
          if (narrow_norm_rows_enabled() && pipe_rows_full<T>(len, kNarrowNormThreads, 4)) {  // Note [Narrow norm rows]
            with_affine(wp, bp, [&](auto affine) {
              constexpr int NT = kNarrowNormThreads;
              auto kernel = layer_norm_pipe_kernel<T, 4, W, NT, decltype(affine)::value>;
              kernel<<<pipe_blocks(kernel, smem, rows, x.device().index, NT), NT, smem, s>>>(xp, wp, bp, yp, mp, rp,
                                                                                          rows, len, eps);
            });
            return;
          }
          with_k<4>(pipe_packs_per_thread<T>(len), [&](auto k) {
            constexpr int K = decltype(k)::value;
            auto kernel = layer_norm_pipe_kernel<T, K, W>;
            kernel<<<pipe_blocks(kernel, smem, rows, x.device().index), kPipeThreads, smem, s>>>(xp, wp, bp, yp, mp, rp,
                                                                                              rows, len, eps);
          });
        };
        if (in_dtype(w, x) && in_dtype(b, x)) {  // Note [Layer-norm weights in their dtype]
          go(ptr_or_null<T>(w), ptr_or_null<T>(b));
        } else {
          const Tensor wa = acc_vector(w, adt), ba = acc_vector(b, adt);
          go(ptr_or_null<A>(wa), ptr_or_null<A>(ba));
        }
      }
      return;
    }
    const Tensor wa = acc_vector(w, adt), ba = acc_vector(b, adt);
    const A *wp = ptr_or_null<A>(wa), *bp = ptr_or_null<A>(ba);
    if (launch_layer_norm_warp(xp, wp, bp, yp, mp, rp, rows, len, eps, x.device().index, s)) return;
    RegRowConfig c;
    if (reg_row_config<T>(len, kMaxRegFloats, rows, {xp, yp, wp, bp}, c)) {
      with_k<(kPackOf<T> <= 4 ? 8 : 4)>(c.k, [&](auto k) {
        layer_norm_reg_kernel<T, decltype(k)::value>
            <<<c.blocks, c.threads, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, len, c.tpr, eps);
      });
    } else {
      const StreamRowConfig sc = stream_row_config(rows, len);
      layer_norm_stream_kernel<T><<<sc.blocks, sc.threads, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, len, sc.tpr, eps);
    }
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w,
                         int64_t rows, int64_t len, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const bool columns = gw.defined() || gb.defined();
  if (rows == 0 || len == 0 || (!columns && !gx.defined())) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  cudaStream_t s = current_stream(dev).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const DType adt = std::is_same_v<A, double> ? DType::Float64 : DType::Float32;
    const T *gp = g.device_data<T>(), *xp = x.device_data<T>();
    const A *mp = ptr_or_null<A>(mean), *rp = rstd.device_data<A>();
    T* gxp = mut_ptr_or_null<T>(gx);
    const int64_t sums = gb.defined() ? 2 : 1;  // partial rows of g * xhat, and of g for a bias gradient
    Tensor part;
    int64_t parts = 0;
    RegRowConfig c;
    auto partials = [&](int64_t n_parts, A*& pw, A*& pb) {  // the scratch rows of the column sums
      parts = n_parts;
      part = scratch(sums * parts * len, adt, x.device());
      pw = part.device_data<A>();
      pb = gb.defined() ? pw + parts * len : nullptr;
    };
    if (row_pipeline_enabled() && pipe_rows_fit<T>(len, {gp, xp, gxp, w.defined() ? w.data_ptr() : nullptr})) {
      const size_t smem = size_t(2 * kPipeStages) * size_t(len) * sizeof(T);
      auto go = [&](auto* wv) {  // Note [Layer-norm weights in their dtype]
        using W = std::remove_const_t<std::remove_pointer_t<decltype(wv)>>;
        with_k<4>(pipe_packs_per_thread<T>(len), [&](auto k) {
          constexpr int K = decltype(k)::value;
          constexpr bool kLean = sizeof(T) == 2 && K <= 2;  // Note [Lean norm rows]
          const bool full = pipe_rows_full<T>(len, kPipeThreads, K);  // Note [Full rows]
          auto kernel = full ? layer_norm_backward_pipe_kernel<T, K, W, kLean, true>
                             : layer_norm_backward_pipe_kernel<T, K, W, kLean>;
          size_t bytes = smem;  // Note [Staged norm operands]: the lean rows' statistics and weight
          if constexpr (kLean) bytes += 2 * kPipeThreads * sizeof(A) + (wv ? size_t(len) * sizeof(W) : 0);
          const unsigned blocks = pipe_blocks(kernel, bytes, rows, dev);
          A *pw = nullptr, *pb = nullptr;
          if (columns) partials(int64_t(blocks), pw, pb);
          kernel<<<blocks, kPipeThreads, bytes, s>>>(gp, xp, mp, rp, wv, gxp, pw, pb, rows, len);
        });
      };
      if (in_dtype(w, x)) {
        go(ptr_or_null<T>(w));
      } else {
        const Tensor wacc = acc_vector(w, adt);
        go(ptr_or_null<A>(wacc));
      }
    } else {
      const Tensor wa = acc_vector(w, adt);  // the other kernels read the weight as A
      const A* wp = ptr_or_null<A>(wa);
      if (reg_row_config<T>(len, kMaxRegFloatsBackward, rows, {gp, xp, wp, gxp}, c)) {
        with_k<(kPackOf<T> <= 4 ? 4 : 2)>(c.k, [&](auto k) {
          auto kernel = layer_norm_backward_reg_kernel<T, decltype(k)::value>;
          int per_sm = 0;
          TP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, c.threads, 0));
          const unsigned blocks =
              unsigned(std::min<int64_t>(c.blocks, int64_t(std::max(per_sm, 1)) * multiprocessors(dev)));
          A *pw = nullptr, *pb = nullptr;
          if (columns) partials(int64_t(blocks) * (c.threads / c.tpr), pw, pb);
          kernel<<<blocks, c.threads, 0, s>>>(gp, xp, mp, rp, wp, gxp, pw, pb, rows, len, c.tpr);
        });
      } else {
        if (gxp) {
          const StreamRowConfig sc = stream_row_config(rows, len);
          layer_norm_backward_stream_kernel<T><<<sc.blocks, sc.threads, 0, s>>>(gp, xp, mp, rp, wp, gxp, rows, len,
                                                                                 sc.tpr);
        }
        if (columns) {
          const int64_t col_blocks = (len + kColsX - 1) / kColsX;
          const int64_t want = std::max<int64_t>(1, int64_t(multiprocessors(dev)) * 8 / col_blocks);
          const int64_t most = std::min<int64_t>({want, (rows + 63) / 64, 65535});
          const int64_t chunk = (rows + most - 1) / most;
          A *pw = nullptr, *pb = nullptr;
          partials((rows + chunk - 1) / chunk, pw, pb);
          layer_norm_columns_kernel<T><<<dim3(unsigned(col_blocks), unsigned(parts)), dim3(kColsX, kColsY), 0, s>>>(
              gp, xp, mp, rp, pw, pb, rows, len, chunk);
        }
      }
    }
    // the column sums in gw's / gb's dtype: the accumulation dtype, or x's (the weight's)
    const unsigned col_blocks = unsigned((len + kColsX - 1) / kColsX);
    auto sum_columns = [&](const A* from, const Tensor& to) {
      if (to.dtype() == adt)
        sum_partials_kernel<A><<<col_blocks, dim3(kColsX, kColsX), 0, s>>>(from, parts, len, to.device_data<A>());
      else
        sum_partials_kernel<A, T><<<col_blocks, dim3(kColsX, kColsX), 0, s>>>(from, parts, len, to.device_data<T>());
    };
    const A* pw = columns ? part.device_data<A>() : nullptr;
    if (gw.defined()) sum_columns(pw, gw);
    if (gb.defined()) sum_columns(pw + parts * len, gb);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, int64_t A_, int64_t C,
                        int64_t L, const Tensor& y, const Tensor& mean, const Tensor& invstd) {
  if (C == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  cudaStream_t s = current_stream(dev).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const DType adt = std::is_same_v<A, double> ? DType::Float64 : DType::Float32;
    const T* xp = x.device_data<T>();
    A *mp = mean.device_data<A>(), *ip = invstd.device_data<A>();
    A *rm = mut_ptr_or_null<A>(running_mean), *rv = mut_ptr_or_null<A>(running_var);
    const int64_t plane = A_ * L;
    Tensor part;
    int64_t splits = 1;
    if (training) {
      auto [sp, chunk] = plane_splits(plane, C, L, dev);
      splits = sp;
      part = scratch(C * splits * 3, adt, x.device());
      if (L == 1)
        batch_norm_stats_cl_kernel<T><<<dim3(unsigned((C + kColsX - 1) / kColsX), unsigned(splits)),
                                        dim3(kColsX, kColsY), 0, s>>>(xp, part.device_data<A>(), C, plane, chunk);
      else
        batch_norm_stats_kernel<T><<<dim3(unsigned(C), unsigned(splits)), 256, 0, s>>>(xp, part.device_data<A>(), C,
                                                                                     L, plane, chunk);
    }
    batch_norm_finish_kernel<A><<<loop_blocks(C), kLoopThreads, 0, s>>>(
        training ? part.device_data<A>() : nullptr, splits, C, training, momentum, eps, rm, rv, mp, ip);
    if (plane)
      batch_norm_apply_kernel<T><<<loop_blocks(x.numel()), kLoopThreads, 0, s>>>(
          xp, y.device_data<T>(), mp, ip, ptr_or_null<A>(w), ptr_or_null<A>(b), x.numel(), C, L);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& w,
                         bool training, int64_t A_, int64_t C, int64_t L, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb) {
  if (C == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  cudaStream_t s = current_stream(dev).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const DType adt = std::is_same_v<A, double> ? DType::Float64 : DType::Float32;
    const T *gp = g.device_data<T>(), *xp = x.device_data<T>();
    const A *mp = mean.device_data<A>(), *ip = invstd.device_data<A>();
    const int64_t plane = A_ * L;
    auto [splits, chunk] = plane_splits(plane, C, L, dev);
    Tensor part = scratch(C * splits * 2 + C * 3, adt, x.device());
    A* pp = part.device_data<A>();
    A* coef = pp + C * splits * 2;
    if (L == 1)
      batch_norm_grad_sums_cl_kernel<T><<<dim3(unsigned((C + kColsX - 1) / kColsX), unsigned(splits)),
                                          dim3(kColsX, kColsY), 0, s>>>(gp, xp, mp, pp, C, plane, chunk);
    else
      batch_norm_grad_sums_kernel<T><<<dim3(unsigned(C), unsigned(splits)), 256, 0, s>>>(gp, xp, mp, pp, C, L, plane,
                                                                                       chunk);
    batch_norm_grad_finish_kernel<A><<<loop_blocks(C), kLoopThreads, 0, s>>>(
        pp, splits, C, plane, ip, ptr_or_null<A>(w), training, mut_ptr_or_null<A>(gw), mut_ptr_or_null<A>(gb), coef);
    if (gx.defined() && plane)
      batch_norm_input_grad_kernel<T><<<loop_blocks(x.numel()), kLoopThreads, 0, s>>>(
          gp, xp, mp, coef, gx.device_data<T>(), x.numel(), C, L);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void group_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, int64_t N, int64_t C, int64_t L,
                        int64_t G, const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const int64_t rows = N * G, cpg = C / G;
  if (rows == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const StreamRowConfig c = stream_row_config(rows, cpg * L);
    group_norm_kernel<T><<<c.blocks, c.threads, 0, s>>>(x.device_data<T>(), ptr_or_null<A>(w), ptr_or_null<A>(b),
                                                        y.device_data<T>(), mean.device_data<A>(),
                                                        rstd.device_data<A>(), rows, G, cpg, L, c.tpr, eps);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
