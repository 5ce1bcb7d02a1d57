// Rows streamed through shared memory with asynchronous copies, so a block computes on one
// row while the next ones are still arriving (Note [Row pipeline]).
#pragma once
#include <cuda_pipeline.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/runtime.h"

namespace tp::cuda {

// Note [Row pipeline]: the register-row kernels (nn_launch.cuh) load a row, reduce it,
// compute and store, one row per block; a block's loads are in flight only in its first
// phase, so at the register budget that fixes how many blocks an SM holds, DRAM idles
// while blocks reduce (ncu: 60% of DRAM bandwidth for float32 softmax rows of 4096, 37%
// for bfloat16). Pipelined kernels instead run kPipeThreads threads per block over rows
// blockIdx.x, blockIdx.x + gridDim.x, ... (a grid that fills the device once), with a ring
// of kPipeStages row buffers in shared memory: before computing row i the block issues
// cp.async copies of row i + kPipeStages - 1, so kPipeStages - 1 rows per block are always
// on their way. Rows must be whole 16-byte packs from 16-byte aligned pointers and at most
// kPipeMaxRowBytes (a ring of up to 48 KB per input; the launch raises the kernel's
// dynamic shared-memory limit, which the static reduction scratch also counts against).
// The default where it measured faster on the H200 (32768 rows of 4096, GB/s, register rows
// -> pipelined): softmax f32 3166 -> 3651, bf16 1965 -> 3046; layer-norm backward f32
// 2715 -> 3298, bf16 1998 -> 2632; layer-norm forward bf16 2092 -> 2785. The float32
// layer-norm forward stays in registers (3931 -> 3340). `tp._C._cuda_set_row_pipeline(False)`
// switches them off, which `benchmarks/bench_cuda_nn.py --row-pipeline` does to time the
// register rows beside them.
// Four stages for the half types (three rows in flight) measured the same on the H200
// (bfloat16 softmax 3064, layer-norm forward 2747, backward 2593 GB/s) and halved the warp
// rows' occupancy, so the ring stays at three.

constexpr int kPipeThreads = 256;
constexpr int kPipeStages = 3;
constexpr int64_t kPipeMaxRowBytes = 16384;

/// Whether rows of n elements of T at these pointers can take a pipelined kernel.
template <class T>
bool pipe_rows_fit(int64_t n, std::initializer_list<const void*> ptrs) {
  if (n <= 0 || n % kPackOf<T> != 0 || n * int64_t(sizeof(T)) > kPipeMaxRowBytes) return false;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

/// Packs per thread of a pipelined row of n elements over `threads` threads: 1, 2 or 4.
template <class T>
int pipe_packs_per_thread(int64_t n, int threads = kPipeThreads) {
  const int64_t packs = n / kPackOf<T>;
  return packs <= threads ? 1 : packs <= 2 * threads ? 2 : 4;
}

// Note [Lean half rows]: the block pipelines are instruction-bound on half types (ncu on
// the H200, bfloat16 rows of 4096: softmax 74% issue-slot use at 46% of DRAM bandwidth,
// against float32's 60% / 74%; layer norm forward 61% / 46%, backward 66% / 33%). A row's
// fixed cost (the ring's barriers, the reductions, its copies' issue) is paid per thread,
// and a half-type row carries half a float32 row's bytes for the same elements a thread.
// The lean kernels (tp._C._cuda_set_lean_half_rows, on by default; bench_cuda_nn.py
// --row-pipeline times the old kernels as the "256 threads" rows) are the forward softmax
// and layer / RMS norm on 128-thread blocks, four packs a thread for rows up to 4096
// (with_pipe_threads), their copies unrolled (pipe_fetch's KMAX); softmax's exp on
// the special-function unit and its max as one max.NaN (softmax_row's kLean), layer norm's
// output as one FMA (since dropped with its 128-thread blocks): 699 PTX instructions for 32
// elements a thread against the 256-thread bfloat16 softmax's 1057 for 16. On the H200 (2026-12-01, bfloat16
// 32768x4096): softmax 3584 against 3063 GB/s, layer norm forward 3043 against 2792, RMS
// norm forward 3339 against 3362. Two layer-norm backward variants measured slower and were
// dropped: both row sums in one paired reduction with unrolled copies (2599 against 2664
// GB/s), and 128-thread blocks with four packs a thread (2076 against 2649: the backward's
// per-thread column sums double, and occupancy halves). After Note [Barrier-free rows] the
// layer / RMS norm forward measured faster on 256-thread blocks again (bfloat16 layer norm
// 3528 / 3472 / 3499 GB/s in three H200 runs against 3319 / 3397 / 3457; RMS norm 3504 /
// 3489 / 3477 against 3313 / 3401 / 3441) and went back to them, and the paired reduction
// came back as part of Note [Lean norm rows] (cuda/norm_kernels.cu); softmax keeps 128.

/// Calls go(std::integral_constant<int, NT>) with the threads per block of a forward softmax
/// pipeline over rows of n elements of T: 128 for half-type rows of up to 4 packs a
/// thread under Note [Lean half rows] (lean_half_rows_enabled()), else kPipeThreads.
template <class T, class F>
void with_pipe_threads(int64_t n, F&& go) {
  if constexpr (sizeof(T) == 2)
    if (lean_half_rows_enabled() && n / kPackOf<T> <= 4 * 128) return go(std::integral_constant<int, 128>{});
  go(std::integral_constant<int, kPipeThreads>{});
}

/// Issues this thread's cp.async copies of one row of `packs` 16-byte packs from src into
/// the shared buffer dst, NT threads a block (the caller commits the group). KMAX > 0: at
/// most KMAX packs a thread (packs <= KMAX * NT), unrolled with the addresses' offsets fixed;
/// kFull: exactly KMAX (packs == KMAX * NT, Note [Full rows]), without bounds checks.
template <int NT, int KMAX, bool kFull = false, class T>
__device__ __forceinline__ void pipe_fetch(T* dst, const T* src, int packs) {
  static_assert(!kFull || KMAX > 0, "full rows take a fixed number of packs a thread");
  constexpr int V = kPackOf<T>;
  if constexpr (KMAX > 0) {
    dst += int(threadIdx.x) * V;
    src += int(threadIdx.x) * V;
#pragma unroll
    for (int k = 0; k < KMAX; ++k)
      if (kFull || int(threadIdx.x) + k * NT < packs) __pipeline_memcpy_async(dst + k * NT * V, src + k * NT * V, 16);
  } else {
    for (int j = int(threadIdx.x); j < packs; j += NT) __pipeline_memcpy_async(dst + j * V, src + j * V, 16);
  }
}

// Note [Barrier-free rows]: each thread of a pipelined block copies packs t, t + NT, ... of
// every row into the ring (pipe_fetch) and the row bodies read exactly those packs, so a
// thread's own cp.async wait is all a row needs before its body: no block barrier for the
// ring. (The copies into a buffer come after the same thread's reads of it, which the body
// has used by then.) And the bodies' reductions take a ReduceRing (block_reduce.cuh): one
// barrier a reduction instead of two. A layer-norm or softmax row went from six block
// barriers to two.

// Note [Full rows]: rows whose packs fill every thread of a pipelined block exactly (n = K *
// NT * pack; bfloat16 rows of 4096 on 256 threads, two packs each) need none of the per-pack
// bounds checks (each a compare, a branch and its reconvergence), and their copies unroll
// with fixed offsets: the layer / RMS norm backward and softmax take kernels instantiated for
// them (kFull). SASS row loops, bfloat16 rows of 4096: layer-norm backward 655 -> 567
// instructions at 79 registers instead of 90, softmax 372 a mode. On the H200 (2026-12-01,
// 32768x4096, GB/s, one run): layer-norm backward float32 3712 -> 3936, bfloat16 3316 -> 3378
// (with Note [Staged norm operands]); softmax float32 3649 -> 3664, bfloat16 3605 -> 3610. The
// layer-norm forward's full rows (its output as one FMA too; row loop 484 -> 337) measured
// slower, 3416 against 3491, and were dropped.

/// Whether rows of n elements of T fill `packs_each` packs of each of nt threads exactly
/// (Note [Full rows]).
template <class T>
bool pipe_rows_full(int64_t n, int nt, int packs_each) {
  return n == int64_t(nt) * packs_each * kPackOf<T>;
}

/// Runs body(row, buf) for rows blockIdx.x, blockIdx.x + gridDim.x, ... < rows of the NIN
/// (rows, n) inputs src[0..NIN), where buf + i * n is input i's row in shared memory (ring:
/// kPipeStages * NIN * n elements of T at ring). Every thread of the block calls it; body
/// may synchronise the block (it is called by all threads for the same row), must not
/// write buf, and reads only the packs its thread fetched, t + k * NT (Note [Barrier-free
/// rows]). NT: the block's threads; KMAX, kFull: as pipe_fetch's.
template <int NT = kPipeThreads, int KMAX = 0, bool kFull = false, int NIN, class T, class Body>
__device__ __forceinline__ void pipe_rows(const T* const (&src)[NIN], int64_t rows, int64_t n, T* ring, Body body) {
  const int packs = int(n / kPackOf<T>);
  const int64_t step = gridDim.x;
  auto fetch = [&](int stage, int64_t r) {
#pragma unroll
    for (int i = 0; i < NIN; ++i)
      pipe_fetch<NT, KMAX, kFull>(ring + (int64_t(stage) * NIN + i) * n, src[i] + r * n, packs);
  };
#pragma unroll
  for (int s = 0; s < kPipeStages - 1; ++s) {
    const int64_t r = int64_t(blockIdx.x) + s * step;
    if (r < rows) fetch(s, r);
    __pipeline_commit();
  }
  int stage = 0;
  for (int64_t row = blockIdx.x; row < rows; row += step) {
    const int64_t ahead = row + (kPipeStages - 1) * step;
    if (ahead < rows) fetch(stage == 0 ? kPipeStages - 1 : stage - 1, ahead);  // the buffer read last round
    __pipeline_commit();
    __pipeline_wait_prior(kPipeStages - 1);  // this thread's copies of `row` have landed
    body(row, static_cast<const T*>(ring + int64_t(stage) * NIN * n));
    stage = stage + 1 == kPipeStages ? 0 : stage + 1;
  }
}

/// The blocks of a pipelined launch on `device`: enough to fill every SM once at the
/// kernel's occupancy, at most one per row. The first launch of a (kernel, smem_bytes,
/// device) asks for the occupancy, which later ones read from a cache, after raising the
/// kernel's dynamic shared-memory limit to smem_bytes if it is below: always (the kernel's
/// static shared memory counts against the 48 KB default too, so a ring of exactly 48 KB
/// needs it), never lowering it (an earlier, larger launch of the kernel still needs it).
template <class K>
unsigned pipe_blocks(K kernel, size_t smem_bytes, int64_t rows, int device, int threads = kPipeThreads,
                     int rows_per_block = 1) {
  struct Key {
    const void* kernel;
    size_t smem;
    int device;
    bool operator==(const Key&) const = default;
  };
  static std::mutex mu;
  static std::vector<std::pair<Key, int64_t>> known;  // a handful of entries
  const Key key{reinterpret_cast<const void*>(kernel), smem_bytes, device};
  std::lock_guard<std::mutex> lock(mu);
  int64_t fill = 0;
  size_t limit = 0;  // the kernel's limit on this device: the largest smem it was given
  for (const auto& [k, v] : known) {
    if (k == key) fill = v;
    if (k.kernel == key.kernel && k.device == device && k.smem > limit) limit = k.smem;
  }
  if (fill == 0) {
    if (smem_bytes > limit)
      TP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes) != cudaSuccess ||
        per_sm < 1)
      per_sm = 1;
    fill = int64_t(per_sm) * device_properties(device).multi_processor_count;
    known.emplace_back(key, fill);
  }
  const int64_t wanted = (rows + rows_per_block - 1) / rows_per_block;
  return unsigned(wanted < fill ? wanted : fill);
}

// Note [Warp rows]: the block pipeline above paid six block barriers per row then (the
// ring's two and two per reduction; two since Note [Barrier-free rows]). For half-type rows
// of 4096 that was what bounded it (bfloat16 softmax at 3070 GB/s against float32's 3637 on
// the H200: half the bytes per barrier). Here each warp of a kWarpPipeWarps-warp block
// streams its own rows (grid warp w takes rows w, w + warps in the grid, ...) through its own
// ring of kPipeStages buffers, lane l fetching packs l, l + 32, ...; the row body runs with 32
// threads, so its reductions are shuffles and the only synchronisation is __syncwarp. Rows
// of half types up to kWarpMaxRowBytes (up to 16 packs a lane in registers). Off until
// measured (`tp._C._cuda_set_warp_rows`, bench_cuda_nn.py --row-pipeline times it beside the
// block pipeline).
constexpr int kWarpPipeWarps = 4;
constexpr int kWarpPipeThreads = 32 * kWarpPipeWarps;
constexpr int64_t kWarpMaxRowBytes = 8192;

/// Whether rows of n elements of T at these pointers take the warp-row kernels (switched on,
/// a half type, whole packs of at most kWarpMaxRowBytes, 16-byte aligned pointers).
template <class T>
bool warp_rows_fit(int64_t n, std::initializer_list<const void*> ptrs) {
  if (sizeof(T) != 2 || !warp_rows_enabled()) return false;
  if (n <= 0 || n % kPackOf<T> != 0 || n * int64_t(sizeof(T)) > kWarpMaxRowBytes) return false;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

/// Packs per lane of a warp row of n elements: 1, 2, 4, 8 or 16.
template <class T>
int warp_packs_per_lane(int64_t n) {
  const int64_t packs = n / kPackOf<T>;
  int k = 1;
  while (int64_t(k) * 32 < packs) k *= 2;
  return k;
}

/// pipe_rows for one warp per row (Note [Warp rows]): runs body(row, buf) in every lane of
/// warp w of the grid for rows w, w + (warps in the grid), ...; ring holds kPipeStages * NIN
/// * n elements per warp of the block. body may synchronise the warp, not the block.
template <int NIN, class T, class Body>
__device__ __forceinline__ void pipe_rows_warp(const T* const (&src)[NIN], int64_t rows, int64_t n, T* ring,
                                               Body body) {
  constexpr int V = kPackOf<T>;
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int packs = int(n / V);
  const int64_t step = int64_t(gridDim.x) * kWarpPipeWarps;
  T* mine = ring + int64_t(warp) * kPipeStages * NIN * n;
  auto fetch = [&](int stage, int64_t r) {
#pragma unroll
    for (int i = 0; i < NIN; ++i) {
      T* dst = mine + (int64_t(stage) * NIN + i) * n;
      const T* from = src[i] + r * n;
      for (int j = lane; j < packs; j += 32) __pipeline_memcpy_async(dst + j * V, from + j * V, 16);
    }
  };
  const int64_t first = int64_t(blockIdx.x) * kWarpPipeWarps + warp;
#pragma unroll
  for (int s = 0; s < kPipeStages - 1; ++s) {
    const int64_t r = first + s * step;
    if (r < rows) fetch(s, r);
    __pipeline_commit();
  }
  int stage = 0;
  for (int64_t row = first; row < rows; row += step) {
    const int64_t ahead = row + (kPipeStages - 1) * step;
    if (ahead < rows) fetch(stage == 0 ? kPipeStages - 1 : stage - 1, ahead);
    __pipeline_commit();
    __pipeline_wait_prior(kPipeStages - 1);  // this lane's copies of `row` have landed
    __syncwarp();                            // ... and every other lane's
    body(row, static_cast<const T*>(mine + int64_t(stage) * NIN * n));
    __syncwarp();  // buf is refilled next round
    stage = stage + 1 == kPipeStages ? 0 : stage + 1;
  }
}

}  // namespace tp::cuda
