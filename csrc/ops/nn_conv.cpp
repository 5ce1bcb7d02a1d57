// Convolutions: the `convolution` op (plain and transposed, 1-3 spatial dims), its weight
// gradient `_convolution_weight_backward`, and the conv1d/2d/3d, conv_transpose1d/2d/3d
// entry points (unbatched inputs, padding='same'/'valid').
//
// Note [Convolution as GEMM]
// Every convolution is one of three products on a plain convolution's geometry
// (x: N x Cin x in, w: Cout x Cin/G x k, y: N x Cout x out):
//   forward   y = w @ im2col(x)                  (per sample, per group: one GEMM)
//   input     x' = col2im(w^T @ y')               (the transposed convolution's forward)
//   weight    w' = sum_n y'_n @ im2col(x_n)^T
// A 1x1 kernel with stride 1 and no padding needs no im2col (the input is the matrix).
// Depthwise convolutions (G == Cin == Cout) and small ones (direct_conv) run direct loops
// instead (Note [Direct convolution taps]). Channels-last inputs (Note [Channels-last
// results]) run the same products over rows of pixels. The loops over the data (im2col,
// col2im, the direct convolutions, the bias) are kernels/cpu/conv/conv_kernel.cpp's.
// Spatial dims are padded in front to three (size 1), so one code path serves 1-3d.
//
// Note [Convolution algorithms]
// Which loop runs a CPU convolution's pass (forward, input gradient = the transposed
// convolution's forward, weight gradient), decided from the shape alone (no timing per call):
//   1. Winograd F(4x4, 3x3) (kernels/cpu/conv/conv_winograd_kernel.cpp, Note [Winograd
//      convolution]) for the forward and the input gradient of float32 (and float16 /
//      bfloat16, computed in float32) 2-D 3x3 convolutions with stride 1, no dilation, one
//      group, at least 16 channels in and out (kWinogradMinChannels), and at least
//      cin * cout / 512 output tiles (kWinogradWeightsPerTile): the 36 x cin x cout
//      transformed weights are built per call, and with fewer tiles to share them (ResNet's
//      512-channel 7x7 stage at batch 8: 32 tiles) they cost more than they save (2.9x
//      PyTorch's time there, vs 0.5-0.8x on the 56x56, 28x28 and 14x14 stages). Channels-last
//      tensors take it too, through a row-major copy of the input and the output (1.27x vs
//      1.73x PyTorch's for 8x64x56x56 with the channels-last GEMM below). The weight gradient
//      of the same row-major convolutions takes Winograd too (Note [Winograd weight
//      gradient]) for output planes up to 32x32 while its transforms fit kWinogradWeightMaxBytes. Float64 never
//      takes it (its rounding is float32-sized).
//   2. The register-tiled direct convolution (kernels/cpu/conv/conv_tiled_kernel.cpp, Note
//      [Register-tiled convolution]) for the forward of float32 (float16 / bfloat16 computed
//      in it) 1-D and 2-D convolutions not taken by 1, depthwise ones excepted, and for the
//      input gradient of such convolutions with stride 1 (no output padding, padding within
//      the kernel's reach): every stride, dilation and group count, on output planes of 256+
//      pixels or a single sample (smaller planes of a batch run the batch-folded GEMM of 4,
//      whose one product over the batch beats a kernel that pads each small plane: ResNet-18's
//      training step at 64x64 went from 0.9 to 1.8x PyTorch's time with it). Forward, 1
//      thread, 8x64x56x56 unless stated, before (im2col + GEMM or direct loops) -> after:
//      1x1 2.36 -> 1.36 ms, 3x3 stride 2 -> 128 9.9 -> 7.4, 1x1 stride 2 -> 128 1.17 -> 1.05,
//      dilation 2: 21 -> 13, groups 8: 4.5 -> 2.1, 7x7/2 stem 8x3x224x224: 28 -> 17, 5x5 stem
//      16x3x64x64: 4.3 -> 2.6, 3x3 64x1x28x28 -> 32 (direct loops): 0.95 -> 0.69 ms.
//      Ungrouped channels-last convolutions run its channels-last form natively (1x1: 2.0 ->
//      1.33 ms; 3x3 stride 2 -> 128: 7.4-8.2 -> 7.2 ms, PyTorch 5.2), grouped ones through a
//      row-major copy.
//   3. Direct loops (Note [Direct convolution taps]): depthwise convolutions, and small
//      stride-1 ones (kDirectMaxMacs).
//   4. im2col + GEMM (Note [Convolution as GEMM]), per sample, or batch-folded for output
//      planes under 256 pixels (kFoldMaxPixels): per-sample products then have under 256
//      columns and OpenBLAS runs them far below its speed (16x512x2x2 3x3 forward: 16.7 ->
//      6.8 ms folded; 16x256x4x4: 5.1 -> 3.6 ms; 1 thread).
//   Channels-last ungrouped convolutions not taken by 1 run the channels-last GEMM paths.
//   The weight gradient: 1 (planes up to 32x32), else 2's weight gradient for at most 16
//   input channels per group (kTiledWeightMaxChannels), else 3 or 4. The tiled weight
//   gradient's products are sums along the output columns (a vector accumulator per output
//   channel and tap), which run at about 100 GFLOP/s where OpenBLAS's GEMM after im2col runs
//   at 150: with few input channels, im2col's GEMM is small and slow, and the tiled kernel
//   wins (1 thread, before -> after, PyTorch: 7x7/2 stem 8x3x224x224 24.4 -> 19.4 ms, 15.5;
//   5x5 stem 16x3x64x64 5.5 -> 3.5 ms, 2.6; groups 8 of 8 channels on 8x64x56x56 4.5 -> 3.0
//   ms, 3.8; 64x1x28x28 -> 32 0.88 -> 0.71 ms, 0.79), with 64 it loses (1x1 2.1 vs 3.1 ms,
//   3x3 stride 2 -> 128 8.6 vs 9.8 ms).
// float16/bfloat16 compute in float32; integer dtypes go through blas::gemm's int64 loop.
#include <omp.h>

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "linalg/blas.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/nn_conv.h"
#include "ops/shape_utils.h"
#include "ops/vol_cols.h"
#include "kernels/tensor_iterator.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/nn_spatial.h"
#endif
#ifdef TP_USE_CUDNN
#include "core/matmul_settings.h"
#include "cuda/cudnn_conv.h"
#endif

namespace tp {

namespace {

using conv::ConvShape;

/// `v` as `nsp` values (one value repeats), PyTorch's message otherwise.
DimVector expand_param(IntArrayRef v, int64_t nsp, const char* name) {
  TP_CHECK(int64_t(v.size()) == nsp || v.size() == 1, "expected ", name,
           " to be a single integer value or a list of ", nsp,
           " values to match the convolution dimensions, but got ", name, "=", shape_str(v));
  DimVector r;
  for (int64_t i = 0; i < nsp; ++i) r.push_back(v.size() == 1 ? v[0] : v[i]);
  return r;
}

/// The most multiply-adds per output position (output channels x input channels x kernel
/// positions, per group) of a convolution that is not depthwise and runs directly. Measured
/// against im2col + GEMM on the 2-core dev machine (AVX2): the direct loops win below (LeNet's
/// 6->16 5x5 forward 0.85 vs 1.18 ms), GEMM above (16->32 3x3 on 28x28: 4.5 vs 4.2 ms).
constexpr int64_t kDirectMaxMacs = 2400;
/// The fewest input and output channels for which Winograd runs, and the most weight pairs
/// (input x output channels) per output tile (Note [Convolution algorithms]).
constexpr int64_t kWinogradMinChannels = 16, kWinogradWeightsPerTile = 512;
/// Output planes of fewer pixels run the GEMM paths batch-folded (Note [Convolution algorithms]).
constexpr int64_t kFoldMaxPixels = 256;
/// The most input channels per group for which the register-tiled weight gradient runs (Note
/// [Convolution algorithms]).
constexpr int64_t kTiledWeightMaxChannels = 16;
// ------------------------------------------------------------------ GEMM paths

Tensor flat_buffer(int64_t n, DType dt) { return empty_tensor(IntArrayRef(&n, 1), dt); }

/// Runs f(sample, scratch, thread) for each of n samples, scratch being `scratch_elems`
/// elements private to the caller. With at least as many samples as threads the samples are
/// spread over the threads, each calling single-threaded BLAS (one parallel region for the
/// whole op: no per-GEMM thread hand-offs); otherwise samples run in turn with threaded BLAS.
template <class T, class F>
void for_each_sample(int64_t n, int64_t scratch_elems, DType dt, F f) {
  const int threads = get_num_threads();
  const int64_t per = std::max<int64_t>(scratch_elems, 1);
  if (threads > 1 && n >= threads && !omp_in_parallel()) {
    Tensor buf = flat_buffer(per * threads, dt);
    BlasSingleThreaded single;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i, buf.data<T>() + omp_get_thread_num() * per, omp_get_thread_num());
    return;
  }
  Tensor buf = flat_buffer(per, dt);
  for (int64_t i = 0; i < n; ++i) f(i, buf.data<T>(), 0);
}

/// How many threads for_each_sample uses for n samples.
int sample_threads(int64_t n) {
  const int threads = get_num_threads();
  return threads > 1 && n >= threads && !omp_in_parallel() ? threads : 1;
}

template <class T>
void gemm_forward(const ConvShape& g, DType dt, const T* x, const T* w, T* y, bool accumulate) {
  const int64_t K = g.k_numel(), L = g.out_numel(), cig = g.cin / g.groups, cog = g.cout / g.groups;
  const bool direct = g.pointwise();
  for_each_sample<T>(g.n, direct ? 0 : g.cin * K * L, dt, [&](int64_t n, T* col_buf, int) {
    const T* xn = x + n * g.cin * g.in_numel();
    const T* col = xn;
    if (!direct) {
      cpu::im2col_stub(g, dt, false, xn, col_buf);
      col = col_buf;
    }
    blas::gemm_batched(dt, g.groups, cog, L, cig * K, 1.0, {w, cig * K, 1}, cog * cig * K,
                       {col, L, 1}, cig * K * L, accumulate ? 1.0 : 0.0, y + n * g.cout * L, L, cog * L);
  });
}

template <class T>
void gemm_input(const ConvShape& g, DType dt, const T* gy, const T* w, T* gx) {
  const int64_t K = g.k_numel(), L = g.out_numel(), cig = g.cin / g.groups, cog = g.cout / g.groups;
  const bool direct = g.pointwise();
  for_each_sample<T>(g.n, direct ? 0 : g.cin * K * L, dt, [&](int64_t n, T* col_buf, int) {
    T* gxn = gx + n * g.cin * g.in_numel();
    T* col = direct ? gxn : col_buf;
    blas::gemm_batched(dt, g.groups, cig * K, L, cog, 1.0, {w, 1, cig * K}, cog * cig * K,
                       {gy + n * g.cout * L, L, 1}, cog * L, 0.0, col, L, cig * K * L);
    if (!direct) cpu::col2im_stub(g, dt, false, col, gxn);
  });
}

template <class T>
void gemm_weight(const ConvShape& g, DType dt, const T* gy, const T* x, T* gw) {
  const int64_t K = g.k_numel(), L = g.out_numel(), cig = g.cin / g.groups, cog = g.cout / g.groups;
  const int64_t wn = g.cout * cig * K, col_elems = g.pointwise() ? 0 : g.cin * K * L;
  // Each thread sums its samples' products into its own slice of `partial`; slices add up.
  const int threads = sample_threads(g.n);
  Tensor partial = flat_buffer(wn * threads, dt);
  std::fill_n(partial.data<T>(), wn * threads, T(0));
  for_each_sample<T>(g.n, col_elems, dt, [&](int64_t n, T* col_buf, int thread) {
    const T* xn = x + n * g.cin * g.in_numel();
    const T* col = xn;
    if (col_elems) {
      cpu::im2col_stub(g, dt, false, xn, col_buf);
      col = col_buf;
    }
    blas::gemm_batched(dt, g.groups, cog, cig * K, L, 1.0, {gy + n * g.cout * L, L, 1}, cog * L,
                       {col, 1, L}, cig * K * L, 1.0, partial.data<T>() + thread * wn, cig * K, cog * cig * K);
  });
  const T* p = partial.data<T>();
  for (int64_t i = 0; i < wn; ++i) {
    T acc = p[i];
    for (int t = 1; t < threads; ++t) acc += p[t * wn + i];
    gw[i] = acc;
  }
}

// ------------------------------------------------------------------ batch-folded GEMM paths
// With small output planes a product per sample has too few columns for BLAS to run near its
// speed (a 7x7 plane: 49); these run the three products once over the columns of every sample
// side by side, (Cin*K, N*L), at the cost of copying the columns (and gy / the output) into
// and out of that order: 1/Cout of the product's work (Note [Convolution algorithms]).

/// Whether the GEMM paths fold the batch into one product (Note [Convolution algorithms]).
bool fold_batch(const ConvShape& g) { return g.n > 1 && g.out_numel() < kFoldMaxPixels; }

/// cols (Cin*K, N*L): sample n's im2col at columns [n*L, (n+1)*L).
template <class T>
Tensor folded_columns(const ConvShape& g, DType dt, const T* x) {
  const int64_t R = g.cin * g.k_numel(), L = g.out_numel(), NL = g.n * L;
  Tensor cols = flat_buffer(R * NL, dt);
  T* c = cols.data<T>();
  for_each_sample<T>(g.n, R * L, dt, [&](int64_t n, T* tmp, int) {
    cpu::im2col_stub(g, dt, false, x + n * g.cin * g.in_numel(), tmp);
    for (int64_t r = 0; r < R; ++r) std::copy_n(tmp + r * L, L, c + r * NL + n * L);
  });
  return cols;
}

/// (C, N*L) from (N, C, L), or back with `to_batch`.
template <class T>
void fold_planes(const T* src, T* dst, int64_t n, int64_t c, int64_t l, bool to_batch) {
  parallel_for(0, n * c, std::max<int64_t>(1, 4096 / std::max<int64_t>(l, 1)), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t i = u / c, ch = u % c;
      if (to_batch) std::copy_n(src + ch * n * l + i * l, l, dst + u * l);
      else std::copy_n(src + u * l, l, dst + ch * n * l + i * l);
    }
  });
}

template <class T>
void folded_forward(const ConvShape& g, DType dt, const T* x, const T* w, T* y) {
  const int64_t K = g.k_numel(), NL = g.n * g.out_numel(), cig = g.cin / g.groups, cog = g.cout / g.groups;
  Tensor cols = folded_columns(g, dt, x), out = flat_buffer(g.cout * NL, dt);
  blas::gemm_batched(dt, g.groups, cog, NL, cig * K, 1.0, {w, cig * K, 1}, cog * cig * K, {cols.data<T>(), NL, 1},
                     cig * K * NL, 0.0, out.data<T>(), NL, cog * NL);
  fold_planes(out.data<T>(), y, g.n, g.cout, g.out_numel(), true);
}

template <class T>
void folded_input(const ConvShape& g, DType dt, const T* gy, const T* w, T* gx) {
  const int64_t K = g.k_numel(), L = g.out_numel(), NL = g.n * L, cig = g.cin / g.groups, cog = g.cout / g.groups;
  const int64_t R = g.cin * K;
  Tensor gyf = flat_buffer(g.cout * NL, dt), cols = flat_buffer(R * NL, dt);
  fold_planes(gy, gyf.data<T>(), g.n, g.cout, L, false);
  blas::gemm_batched(dt, g.groups, cig * K, NL, cog, 1.0, {w, 1, cig * K}, cog * cig * K, {gyf.data<T>(), NL, 1},
                     cog * NL, 0.0, cols.data<T>(), NL, cig * K * NL);
  const T* c = cols.data<T>();
  for_each_sample<T>(g.n, R * L, dt, [&](int64_t n, T* tmp, int) {
    for (int64_t r = 0; r < R; ++r) std::copy_n(c + r * NL + n * L, L, tmp + r * L);
    cpu::col2im_stub(g, dt, false, tmp, gx + n * g.cin * g.in_numel());
  });
}

template <class T>
void folded_weight(const ConvShape& g, DType dt, const T* gy, const T* x, T* gw) {
  const int64_t K = g.k_numel(), L = g.out_numel(), NL = g.n * L, cig = g.cin / g.groups, cog = g.cout / g.groups;
  Tensor cols = folded_columns(g, dt, x), gyf = flat_buffer(g.cout * NL, dt);
  fold_planes(gy, gyf.data<T>(), g.n, g.cout, L, false);
  blas::gemm_batched(dt, g.groups, cog, cig * K, NL, 1.0, {gyf.data<T>(), NL, 1}, cog * NL, {cols.data<T>(), 1, NL},
                     cig * K * NL, 0.0, gw, cig * K, cog * cig * K);
}

// ------------------------------------------------------------------ channels-last GEMM paths
// (Note [Channels-last results]) One sample's pixels are rows of Cin channels: its im2col
// has a row per output pixel, (kernel position, channel) columns, each a copy of a whole
// input pixel, and the weight laid out channels last is the (Cout, K * Cin) matrix of the
// same columns. groups == 1.

template <class T>
void gemm_forward_nhwc(const ConvShape& g, DType dt, const T* x, const T* w, T* y) {
  const int64_t C = g.cin, KC = g.k_numel() * C, L = g.out_numel();
  for_each_sample<T>(g.n, L * KC, dt, [&](int64_t n, T* col, int) {
    cpu::im2col_stub(g, dt, true, x + n * g.in_numel() * C, col);
    blas::gemm(dt, L, g.cout, KC, 1.0, {col, KC, 1}, {w, 1, KC}, 0.0, y + n * L * g.cout, g.cout);
  });
}

/// The transposed convolution (gy: the plain one's output, gx its input), channels last.
template <class T>
void gemm_input_nhwc(const ConvShape& g, DType dt, const T* gy, const T* w, T* gx) {
  const int64_t C = g.cin, KC = g.k_numel() * C, L = g.out_numel();
  for_each_sample<T>(g.n, L * KC, dt, [&](int64_t n, T* col, int) {
    blas::gemm(dt, L, KC, g.cout, 1.0, {gy + n * L * g.cout, g.cout, 1}, {w, KC, 1}, 0.0, col, KC);
    cpu::col2im_stub(g, dt, true, col, gx + n * g.in_numel() * C);
  });
}

/// The weight gradient as (Cout, K * Cin): the memory of a channels-last weight.
template <class T>
void gemm_weight_nhwc(const ConvShape& g, DType dt, const T* gy, const T* x, T* gw) {
  const int64_t C = g.cin, KC = g.k_numel() * C, L = g.out_numel(), wn = g.cout * KC;
  const int threads = sample_threads(g.n);
  Tensor partial = flat_buffer(wn * threads, dt);  // a slice per thread, added up after
  std::fill_n(partial.data<T>(), wn * threads, T(0));
  for_each_sample<T>(g.n, L * KC, dt, [&](int64_t n, T* col, int thread) {
    cpu::im2col_stub(g, dt, true, x + n * g.in_numel() * C, col);
    blas::gemm(dt, g.cout, KC, L, 1.0, {gy + n * L * g.cout, 1, g.cout}, {col, KC, 1}, 1.0,
               partial.data<T>() + thread * wn, KC);
  });
  const T* p = partial.data<T>();
  for (int64_t i = 0; i < wn; ++i) {
    T acc = p[i];
    for (int t = 1; t < threads; ++t) acc += p[t * wn + i];
    gw[i] = acc;
  }
}

// ------------------------------------------------------------------ direct convolutions

/// The three products of a convolution (Note [Convolution as GEMM]).
enum class Pass { forward, input, weight };

/// Whether the direct loops (Note [Direct convolution taps]) run this pass of a convolution:
/// depthwise ones, and small ones with stride 1 (for the input gradient, padded at least half
/// the kernel's reach).
bool direct_conv(const ConvShape& g, Pass pass) {
  if (g.depthwise()) return true;
  for (int i = 0; i < 3; ++i)
    if (g.s[i] != 1) return false;
  if (g.cout / g.groups * (g.cin / g.groups) * g.k_numel() > kDirectMaxMacs) return false;
  // the input gradient reads gy padded by (k - 1) * d - p on either side: where that is more
  // than half the kernel's reach, most reads are of zeros and im2col + GEMM is faster
  for (int i = 0; pass == Pass::input && i < 3; ++i)
    if (2 * ((g.k[i] - 1) * g.d[i] - g.p[i]) > (g.k[i] - 1) * g.d[i]) return false;
  return true;
}

/// Whether Winograd F(4x4, 3x3) (Note [Winograd convolution]) runs the forward of this
/// convolution, or with `transposed` its input gradient (a transposed convolution's forward):
/// float32 (float16 / bfloat16 compute in it), 2-D, 3x3, stride 1, undilated, ungrouped, at
/// least kWinogradMinChannels channels in and out, and enough 4x4 output tiles to share the
/// transformed weights (Note [Convolution algorithms]).
bool winograd_conv(const ConvShape& g, DType dt, bool transposed) {
  if (dt != DType::Float32 || g.groups != 1 || g.nsp != 2 || g.k[1] != 3 || g.k[2] != 3) return false;
  for (int i = 1; i < 3; ++i)
    if (g.s[i] != 1 || g.d[i] != 1) return false;
  if (g.cin < kWinogradMinChannels || g.cout < kWinogradMinChannels) return false;
  const int64_t* out = transposed ? g.in : g.out;  // the computed convolution's output
  const int64_t tiles = g.n * ((out[1] + 3) / 4) * ((out[2] + 3) / 4);
  return g.cin * g.cout <= kWinogradWeightsPerTile * tiles;
}

/// Whether the register-tiled direct convolution (kernels/cpu/conv/conv_tiled_kernel.cpp, Note
/// [Register-tiled convolution]) runs the forward of this convolution, or with `transposed`
/// its input gradient (stride 1, no output padding, padding within the kernel's reach): 1-D
/// and 2-D float32, not depthwise, and not batch-folded (Note [Convolution algorithms]).
bool tiled_conv(const ConvShape& g, DType dt, bool transposed) {
  if (dt != DType::Float32 || g.nsp > 2 || g.depthwise()) return false;
  if (transposed)
    for (int i = 1; i < 3; ++i)
      if (g.s[i] != 1 || g.d[i] * (g.k[i] - 1) < g.p[i] || g.in[i] != g.out[i] + g.d[i] * (g.k[i] - 1) - 2 * g.p[i])
        return false;
  return !fold_batch(g);
}

/// Whether the register-tiled kernel's weight gradient runs (Note [Convolution algorithms]):
/// convolutions it runs the forward of, with at most kTiledWeightMaxChannels input channels per
/// group.
bool tiled_weight(const ConvShape& g, DType dt) {
  return tiled_conv(g, dt, false) && g.cin / g.groups <= kTiledWeightMaxChannels;
}

// Note [Winograd weight gradient]
// With Y = A^T [U * V] A per output tile (Note [Winograd convolution]), the gradient of the
// transformed weights is dU[k][c] = sum over tiles of (A dy_k A^T) * (B^T d_c B), and the
// kernel's dW = G^T dU G. So for blocks of TB tiles the kernels transform the input patches
// (V: 36 x C x TB) and the output gradient's 4x4 blocks (Y: 36 x K x TB), and 36 GEMMs
// dU[xi] += Y[xi] V[xi]^T (K x TB times TB x C, one batched blas call per block, on all
// threads) sum them; G^T dU G ends it. 36 multiply-adds per tile and channel pair instead of
// 144 (16 outputs x 9 taps); the transforms are linear in the channels. It wins where the
// GEMM paths' products are small, i.e. small planes, and loses on large ones, whose per-sample
// im2col products run near OpenBLAS's speed while the gathers of the transforms here are
// scalar (weight gradient alone, 1 thread, before -> with it: 64x32x8x8 -> 64: 3.2 -> 1.6 ms,
// PyTorch 1.2; 16x128x28x28: 33 -> 31.5 ms, PyTorch 27; 32x64x32x32: 28.5 -> 27 ms,
// PyTorch 21; 8x64x56x56: 20 -> 26 ms, PyTorch 15): so output planes up to
// kWinogradWeightMaxPixels only.
constexpr int64_t kWinogradWeightMaxBytes = int64_t(256) << 20, kWinogradWeightMaxPixels = 32 * 32;

bool winograd_weight(const ConvShape& g, DType dt) {
  if (!winograd_conv(g, dt, false) || g.out[1] * g.out[2] > kWinogradWeightMaxPixels) return false;
  const int64_t T = g.n * ((g.out[1] + 3) / 4) * ((g.out[2] + 3) / 4);
  const int64_t tb = std::min<int64_t>((T + 15) / 16 * 16, 512);
  return 4 * 36 * ((g.cin + g.cout) * tb + g.cin * g.cout) <= kWinogradWeightMaxBytes;
}

void winograd_weight_grad(const ConvShape& g, const float* gy, const float* x, float* gw) {
  const int64_t C = g.cin, K = g.cout;
  const int64_t T = g.n * ((g.out[1] + 3) / 4) * ((g.out[2] + 3) / 4);
  const int64_t TB = std::min<int64_t>((T + 15) / 16 * 16, 512);
  // the transforms write every lane of V and Y: buffers from the block cache, not zeroed (as
  // std::vectors, 3.5 MB of fresh pages zeroed per call: a third of the main job step's page
  // faults)
  Tensor Vb = flat_buffer(36 * C * TB, DType::Float32), Yb = flat_buffer(36 * K * TB, DType::Float32);
  float *V = Vb.data<float>(), *Y = Yb.data<float>();
  std::vector<float> dU(size_t(36 * K * C), 0.0f);
  for (int64_t t0 = 0; t0 < T; t0 += TB) {
    const int64_t nt = std::min(TB, T - t0);
    cpu::conv_winograd_weight_transforms_stub(g, x, gy, t0, nt, TB, V, Y);
    blas::gemm_batched(DType::Float32, 36, K, C, TB, 1.0, {Y, TB, 1}, K * TB, {V, 1, TB},
                       C * TB, 1.0, dU.data(), C, K * C);
  }
  // dW = G^T dU G (G: Lavin's 6 x 3 weight transform, transform_weights' rows)
  static constexpr double Gm[6][3] = {{0.25, 0, 0},
                                      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                      {0, 0, 1}};
  parallel_for(0, K * C, 64, [&](int64_t b, int64_t e) {
    for (int64_t kc = b; kc < e; ++kc) {
      double t[6][3] = {};
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          const double u = dU[size_t((i * 6 + j) * K * C + kc)];
          for (int s2 = 0; s2 < 3; ++s2) t[i][s2] += u * Gm[j][s2];
        }
      float* out = gw + kc * 9;
      for (int r = 0; r < 3; ++r)
        for (int s2 = 0; s2 < 3; ++s2) {
          double v = 0;
          for (int i = 0; i < 6; ++i) v += Gm[i][r] * t[i][s2];
          out[r * 3 + s2] = float(v);
        }
    }
  });
}

// ------------------------------------------------------------------ drivers

/// Calls f(T{}) for the dtypes the kernels compute in (float16/bfloat16 are widened first).
template <class F>
void visit_compute(DType dt, F&& f) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, dt != DType::Bool, "\"slow_conv2d_cpu\" not implemented for 'Bool'");
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>)
      f(T{});
  });
}

/// Sizes "(a x b)" as PyTorch prints them in convolution errors.
std::string paren_list(const int64_t* v, int64_t n) {
  std::string s = "(";
  for (int64_t i = 0; i < n; ++i) {
    detail::append(s, i ? " x " : "");
    detail::append(s, v[i]);
  }
  return s + ")";
}

// Note [Convolution of an empty batch]
// PyTorch's convolution picks its "empty" backend for an input with no samples (and channels):
// after the shape checks it multiplies the input by the weight's first element and adds the
// bias' first element in place, so no kernel's dtype check runs: the result's dtype is the
// input's promoted with that 0-d element (an int32 input and a float64 weight give float64, a
// float32 input and a bool weight float32), a bias of a higher kind (float into an integer
// result) cannot be added in place ("result type Float can't be cast to the desired output type
// Int"), and an empty weight has no first element (IndexError from select()). The kernel-size
// and empty-weight checks of the kernels do not run either. (An input with zero channels but
// samples keeps D9 of docs/fuzz_findings.md.)
bool empty_batch_conv(const Tensor& input) {
  return !is_meta(input) && input.dim() > 1 && input.size(0) == 0 && input.size(1) != 0;
}

/// 0 bool, 1 integer, 2 floating, 3 complex: a 0-d operand promotes only into a higher kind.
int kind_rank(DType dt) { return dt == DType::Bool ? 0 : is_complex(dt) ? 3 : is_floating(dt) ? 2 : 1; }

DType empty_batch_conv_dtype(const Tensor& input, const Tensor& weight) {
  return kind_rank(weight.dtype()) > kind_rank(input.dtype()) ? weight.dtype() : input.dtype();
}

/// Whether PyTorch's CPU convolution picks oneDNN (its use_mkldnn heuristic) for a float32
/// input: not for a transposed one whose output_padding reaches its stride; else where strided,
/// dilated, batched by 16 or more, with a kernel other than 1x1 in its last two dims, or
/// threaded, and grouped, with a kernel over 3x3, batched, or more than 20480 elements in the
/// input's first four dims (a 1-D convolution is viewed as (N, C, 1, L) first). bfloat16 and
/// float16 take oneDNN only where the CPU runs them natively: not at the AVX2 level the tests
/// pin (tests/python/conftest.py), so not here.
bool torch_picks_onednn(const Tensor& input, const ConvShape& g, IntArrayRef output_padding, bool transposed) {
  if (input.dtype() != DType::Float32) return false;
  const int64_t off = 3 - g.nsp;
  bool strided = false, dilated = false;
  for (int64_t i = 0; i < g.nsp; ++i) {
    if (transposed && output_padding[size_t(i)] >= g.s[off + i]) return false;
    strided = strided || g.s[off + i] != 1;
    dilated = dilated || g.d[off + i] != 1;
  }
  const int64_t kw = g.k[2], kh = g.nsp >= 2 ? g.k[1] : 1;
  const int64_t n = input.size(0), first4 = n * input.size(1) * input.size(2) * (g.nsp >= 2 ? input.size(3) : 1);
  return (strided || dilated || n >= 16 || kw != 1 || kh != 1 || get_num_threads() > 1) &&
         (g.groups > 1 || (kw > 3 && kh > 3) || n > 1 || first4 > 20480);
}

/// A bias of another dtype than a CPU convolution's input (and weight), past conv1d/2d/3d's own
/// check (conv_nd). PyTorch's oneDNN convolutions refuse it (torch_picks_onednn);
/// slow_conv_transpose3d compares it as the weight; slow_conv_transpose2d (1-D and 2-D
/// transposed) adds it in place to its result, which takes a bias of the same or a lower kind;
/// the plain slow kernels (slow_conv2d / 3d / dilated) copy it into the result first, casting any
/// dtype. Ours casts the bias to the compute dtype where PyTorch accepts it.
void check_bias_dtype(const Tensor& input, const Tensor& bias, bool transposed, bool onednn, int64_t nsp) {
  const DType in_dt = input.dtype(), b_dt = bias.dtype();
  TP_CHECK(!onednn && input.device().is_cpu(), "Input type (", dtype_name(in_dt), ") and bias type (",
           dtype_name(b_dt), ") should be the same");
  if (!transposed) return;
  TP_CHECK(nsp != 3, "expected scalar type ", dtype_scalar_name(in_dt), " but found ", dtype_scalar_name(b_dt));
  TP_CHECK(kind_rank(b_dt) <= kind_rank(in_dt), "result type ", dtype_scalar_name(b_dt),
           " can't be cast to the desired output type ", dtype_scalar_name(in_dt));
}

/// Fills the plain-convolution geometry of convolution(input, weight, ...) after PyTorch's
/// checks. For a transposed convolution the plain one runs backwards: its input is the
/// transposed convolution's output.
ConvShape conv_shape(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                     IntArrayRef output_padding, int64_t groups) {
  TP_CHECK(weight.dim() >= 3 && weight.dim() <= 5, "weight should have at least three dimensions");
  TP_CHECK(input.dim() == weight.dim(), "Expected ", weight.dim(), "-dimensional input for ", weight.dim(),
           "-dimensional weight ", shape_str(weight.sizes()), ", but got ", input.dim(),
           "-dimensional input of size ", shape_str(input.sizes()), " instead");
  TP_CHECK(input.device().is_cpu() || input.device().is_cuda() || is_meta(input), "no ", input.device().str(),
           " kernel");
  TP_CHECK(weight.device() == input.device() && (!bias || bias->device() == input.device()),
           "Expected all tensors to be on the same device, but found at least two devices, ",
           input.device().str(), " and ", (weight.device() != input.device() ? weight : *bias).device().str(), "!");
  ConvShape g;
  g.nsp = input.dim() - 2;
  DimVector s = expand_param(stride, g.nsp, "stride"), p = expand_param(padding, g.nsp, "padding"),
            d = expand_param(dilation, g.nsp, "dilation"),
            op = expand_param(output_padding, g.nsp, "output_padding");
  TP_CHECK(groups > 0, "non-positive groups is not supported");
  for (int64_t i = 0; i < g.nsp; ++i) {
    TP_CHECK(s[i] > 0, "non-positive stride is not supported");
    TP_CHECK(p[i] >= 0, "negative padding is not supported");
    TP_CHECK(d[i] > 0, "dilation should be greater than zero");
    TP_CHECK(op[i] >= 0, "negative output_padding is not supported");
  }
  const int64_t off = 3 - g.nsp;
  g.groups = groups;
  g.n = input.size(0);
  for (int64_t i = 0; i < g.nsp; ++i) {
    g.k[off + i] = weight.size(2 + i);
    g.s[off + i] = s[i];
    g.p[off + i] = p[i];
    g.d[off + i] = d[i];
  }
  int64_t out_channels;
  // weight's dim 0 against groups: the same check for the transposed convolution (whose dim 0
  // is the input's channels), before the channel counts
  TP_CHECK(weight.size(0) >= groups || is_meta(input), "Given groups=", groups, ", expected weight to be at least ",
           groups, " at dimension 0, but got weight of size ", shape_str(weight.sizes()), " instead");
  TP_CHECK(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
           " at dimension 0, but got weight of size ", shape_str(weight.sizes()), " instead");
  if (!transposed) {
    TP_CHECK(input.size(1) == weight.size(1) * groups, "Given groups=", groups, ", weight of size ",
             shape_str(weight.sizes()), ", expected input", shape_str(input.sizes()), " to have ",
             weight.size(1) * groups, " channels, but got ", input.size(1), " channels instead");
    g.cin = input.size(1);
    g.cout = weight.size(0);
    out_channels = g.cout;
    int64_t padded[3], kext[3];
    bool too_big = false;
    for (int64_t i = 0; i < g.nsp; ++i) {
      g.in[off + i] = input.size(2 + i);
      padded[i] = input.size(2 + i) + 2 * p[i];
      kext[i] = d[i] * (weight.size(2 + i) - 1) + 1;
      too_big = too_big || kext[i] > padded[i];
    }
    TP_CHECK(!too_big, "Calculated padded input size per channel: ", paren_list(padded, g.nsp),
             ". Kernel size: ", paren_list(kext, g.nsp), ". Kernel size can't be greater than actual input size");
    for (int64_t i = 0; i < g.nsp; ++i) g.out[off + i] = (padded[i] - kext[i]) / s[i] + 1;
  } else {
    TP_CHECK(input.size(1) == weight.size(0), "Given transposed=1, weight of size ", shape_str(weight.sizes()),
             ", expected input", shape_str(input.sizes()), " to have ", weight.size(0),
             " channels, but got ", input.size(1), " channels instead");
    for (int64_t i = 0; i < g.nsp; ++i)
      TP_CHECK(op[i] < s[i] || op[i] < d[i], "output padding must be smaller than either stride or dilation,"
               " but got output_padding=", shape_str(op), " stride=", shape_str(s), " dilation=", shape_str(d));
    g.cout = input.size(1);
    g.cin = weight.size(1) * groups;
    out_channels = g.cin;
    int64_t in_sp[3], out_sp[3];
    bool bad = false;
    for (int64_t i = 0; i < g.nsp; ++i) {
      g.out[off + i] = in_sp[i] = input.size(2 + i);
      g.in[off + i] = out_sp[i] = (in_sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (weight.size(2 + i) - 1) + op[i] + 1;
      bad = bad || out_sp[i] <= 0;
    }
    TP_CHECK(!bad, "Given input size per channel: ", paren_list(in_sp, g.nsp),
             ". Calculated output size per channel: ", paren_list(out_sp, g.nsp), ". Output size is too small");
  }
  TP_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == out_channels), "Given weight of size ",
           shape_str(weight.sizes()), ", expected bias to be 1-dimensional with ", out_channels,
           " elements, but got bias of size ", shape_str(bias->sizes()), " instead");
  // An empty batch of channels: PyTorch's "empty" backend (Note [Convolution of an empty batch])
  if (empty_batch_conv(input)) {
    TP_CHECK_KIND(ErrorKind::Index, weight.numel() != 0, "select(): index 0 out of range for tensor of size [0] at "
                  "dimension 0");
    const DType out_dt = empty_batch_conv_dtype(input, weight);
    TP_CHECK(!bias || kind_rank(bias->dtype()) <= kind_rank(out_dt), "result type ",
             dtype_scalar_name(bias->dtype()), " can't be cast to the desired output type ", dtype_scalar_name(out_dt));
    return g;
  }
  // PyTorch's convolution takes empty inputs only where the batch or channels are empty, and
  // its transposed kernels want a non-empty weight
  if (!is_meta(input)) {
    bool empty_spatial = false;
    for (int64_t i = 2; i < input.dim(); ++i) empty_spatial = empty_spatial || input.size(i) == 0;
    TP_CHECK(!empty_spatial, "Only zero batch or zero channel inputs are supported, but got input shape: ",
             shape_str(input.sizes()));
    if (transposed && weight.numel() == 0 && input.numel() != 0) {
      TP_CHECK(g.nsp != 3, "non-empty 5D (n_output_plane x n_input_plane x kernel_depth x kernel_height x "
               "kernel_width) tensor expected for weight, but got: ", shape_str(weight.sizes()));
      TP_FAIL("non-empty 2D or 4D weight tensor expected, but got: ", shape_str(weight.sizes()));
    }
  }
  // PyTorch's CPU kernel is picked by the input's dtype after the shape checks: a dtype it lacks
  // raises NotImplementedError before the weight's dtype is compared (an empty input returns)
  const DType in_dt = input.dtype();
  if (input.device().is_cpu() && input.numel() != 0 && !is_floating(in_dt)) {
    const bool dilated = g.d[0] > 1 || g.d[1] > 1 || g.d[2] > 1;
    const char* kernel = transposed ? (g.nsp == 3 ? "slow_conv_transpose3d_out_cpu" : "slow_conv_transpose2d_out_cpu")
                         : dilated  ? "slow_conv_dilated<>"
                         : g.nsp == 3 ? "compute_columns3d"
                                      : "slow_conv2d_cpu";
    const bool ok = in_dt != DType::Bool && (in_dt == DType::Int64 || (!transposed && !dilated));
    TP_CHECK_KIND(ErrorKind::NotImplemented, ok, "\"", kernel, "\" not implemented for '", dtype_scalar_name(in_dt),
                  "'");
  }
  TP_CHECK(in_dt == weight.dtype(), "expected scalar type ", dtype_scalar_name(in_dt), " but found ",
           dtype_scalar_name(weight.dtype()));
  if (bias && bias->dtype() != in_dt)
    check_bias_dtype(input, *bias, transposed, torch_picks_onednn(input, g, IntArrayRef(op.data(), op.size()), transposed),
                     g.nsp);
  // An empty kernel: PyTorch's kernels refuse it (ours would read and write out of bounds).
  bool empty_kernel = false;
  for (int64_t i = 0; i < g.nsp; ++i) empty_kernel = empty_kernel || weight.size(2 + i) == 0;
  if (empty_kernel && !is_meta(input)) {
    TP_CHECK(!(transposed && g.nsp == 3), "non-empty 5D (n_output_plane x n_input_plane x kernel_depth x "
             "kernel_height x kernel_width) tensor expected for weight, but got: ", shape_str(weight.sizes()));
    if (g.nsp == 3)
      TP_FAIL("kernel size should be greater than zero, but got: ", weight.size(2), " x ", weight.size(3), " x ",
              weight.size(4), " (TxHxW)");
    TP_FAIL("kernel size should be greater than zero, but got kernel_height: ", g.nsp == 2 ? weight.size(2) : 1,
            " kernel_width: ", weight.size(weight.dim() - 1));
  }
  return g;
}

DimVector sizes_of(int64_t n, int64_t c, const ConvShape& g, bool in) {
  DimVector r{n, c};
  for (int64_t i = 3 - g.nsp; i < 3; ++i) r.push_back(in ? g.in[i] : g.out[i]);
  return r;
}

/// Runs `f` on float32 copies of float16/bfloat16 tensors and converts the result back.
template <class F>
Tensor widened(DType dt, F&& f) {
  if (!is_float16_or_bfloat16(dt)) return f(dt);
  return _to_dtype(f(DType::Float32), dt);
}

/// Whether t is a complex CPU tensor (the ones Note [Complex convolution] computes).
bool complex_cpu(const Tensor& t) { return is_complex(t.dtype()) && t.device().is_cpu(); }

/// `t` in dtype dt (itself when it already is).
Tensor to_compute(const Tensor& t, DType dt) { return t.dtype() == dt ? t : _to_dtype(t, dt); }
/// `t` in dtype dt, row-major.
Tensor as_compute(const Tensor& t, DType dt) { return contiguous(to_compute(t, dt)); }

/// Whether a convolution's results and gradients are channels last (Note [Channels-last
/// results]): its input's or its weight's strides say so. 3-D ones on the CPU only in
/// float32 (PyTorch's only channels-last 3-D CPU convolution is oneDNN's float32 one); on
/// CUDA in every dtype but float64, as cuDNN's.
bool conv_channels_last(IntArrayRef in_sizes, IntArrayRef in_strides, IntArrayRef w_sizes, IntArrayRef w_strides,
                        DType dt, bool cuda = false) {
  if (in_sizes.size() == 5 && dt != DType::Float32 && !cuda) return false;
  if (cuda && dt == DType::Float64) return false;  // PyTorch's cuDNN convolutions keep float64 row-major
  return suggests_channels_last(in_sizes, in_strides) ||
         (!w_sizes.empty() && suggests_channels_last(w_sizes, w_strides));
}

/// The layout of convolution's gradients on meta (PyTorch's meta convolution_backward): channels
/// last when the input's or the weight's strides say so, whatever the dtype and dims.
bool conv_grad_channels_last_meta(IntArrayRef in_sizes, IntArrayRef in_strides, IntArrayRef w_sizes,
                                  IntArrayRef w_strides) {
  return suggests_channels_last(in_sizes, in_strides) || suggests_channels_last(w_sizes, w_strides);
}

/// A 1x1 convolution (stride 1, unpadded) or its transpose on channels-last tensors: per
/// group one GEMM over the (N*L, C) rows (Note [Channels-last results]). x is dense
/// channels last, w contiguous, both in dtype dt; the result is channels last.
Tensor pointwise_channels_last(const ConvShape& g, const Tensor& x, const Tensor& w, const Tensor& bias,
                               bool transposed, DType dt) {
  const int64_t cig = g.cin / g.groups, cog = g.cout / g.groups, M = g.n * g.out_numel();
  const int64_t in_c = transposed ? g.cout : g.cin, out_c = transposed ? g.cin : g.cout;
  const DimVector sizes = sizes_of(g.n, out_c, g, false);
  Tensor y = empty_strided_tensor(sizes, channels_last_strides(sizes), dt, x.device());
  if (y.numel() == 0) return y;
  if (!transposed)  // y[m, co] = sum_ci x[m, ci] w[co, ci]
    blas::gemm_batched(dt, g.groups, M, cog, cig, 1.0, {x.data_ptr(), in_c, 1}, cig, {w.data_ptr(), 1, cig},
                       cog * cig, 0.0, y.data_ptr(), out_c, cog);
  else  // y[m, ci] = sum_co x[m, co] w[co, ci]
    blas::gemm_batched(dt, g.groups, M, cig, cog, 1.0, {x.data_ptr(), in_c, 1}, cog, {w.data_ptr(), cig, 1},
                       cog * cig, 0.0, y.data_ptr(), out_c, cig);
  if (bias.defined()) cpu::conv_add_bias_stub(dt, y.data_ptr(), bias.data_ptr(), g.n, out_c, g.out_numel(), true);
  return y;
}

/// The weight gradient of a 1x1 convolution on channels-last gy and x (dense, dtype dt):
/// gw[co, ci] = sum over the rows m of gy[m, co] x[m, ci], one GEMM per group.
Tensor pointwise_weight_channels_last(const ConvShape& g, const Tensor& gy, const Tensor& x, IntArrayRef w_sizes,
                                      DType dt) {
  const int64_t cig = g.cin / g.groups, cog = g.cout / g.groups, M = g.n * g.out_numel();
  Tensor gw = empty_strided_tensor(w_sizes, channels_last_strides(w_sizes), dt, x.device());
  if (M == 0) {
    visit_compute(dt, [&](auto t) { std::fill_n(gw.data<decltype(t)>(), gw.numel(), decltype(t)(0)); });
    return gw;
  }
  blas::gemm_batched(dt, g.groups, cog, cig, M, 1.0, {gy.data_ptr(), 1, g.cout}, cog, {x.data_ptr(), g.cin, 1}, cig,
                     0.0, gw.data_ptr(), cig, cog * cig);
  return gw;
}

// ------------------------------------------------------------------ unfold + matrix products
// Note [Convolution by unfold]: a convolution as im2col and one batched matrix product per
// group (col2im for the transposed one), written with tp ops, so it runs on any backend. CUDA
// convolutions take it when the build has no cuDNN (TP_USE_CUDNN), when
// tp.backends.cudnn.enabled is False, or when cuDNN refuses one (cuda/cudnn_conv.h). A 1-D
// convolution is a 2-D one of height 1 (the ConvShape slots 1 and 2 are its plane); a 3-D one
// unfolds with vol2col / col2vol (ops/vol_cols.h: the same per-entry code in host loops and in
// the CUDA kernels). Its gradients are convolutions again (transposed for the input, the
// weight gradient below), so they take this path too.

std::array<int64_t, 2> plane(const int64_t (&v)[3]) { return {v[1], v[2]}; }

Tensor as_plane(const Tensor& t, const ConvShape& g) { return g.nsp == 1 ? unsqueeze(t, 2) : t; }

void check_unfold(const ConvShape& g, DType dt, bool cuda) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(dt), "\"slow_conv", g.nsp == 3 ? "3d_" : "2d_",
                cuda ? "cuda" : "cpu", "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// The 3-D sliding blocks of g over `volumes` volumes of g.in (plain) voxels.
conv::VolGeom vol_geom(const ConvShape& g, int64_t volumes) {
  conv::VolGeom v;
  v.c = volumes;
  for (int i = 0; i < 3; ++i) {
    v.in[i] = g.in[i];
    v.out[i] = g.out[i];
    v.k[i] = g.k[i];
    v.s[i] = g.s[i];
    v.p[i] = g.p[i];
    v.d[i] = g.d[i];
  }
  return v;
}

/// Calls f(T{}) for float32 / float64, the dtypes of the host vol2col / col2vol loops.
template <class F>
void visit_volume(DType dt, F&& f) {
  if (dt == DType::Float64) return f(double{});
  TP_CHECK(dt == DType::Float32, "vol2col: unsupported dtype ", dtype_name(dt));
  f(float{});
}

/// The columns (N, C * K, L) of a 3-D convolution's input (N, C, D, H, W) of g.cin channels.
Tensor volume_columns(const ConvShape& g, const Tensor& input) {
  return widened(input.dtype(), [&](DType dt) {
    Tensor x = as_compute(input, dt);
    const conv::VolGeom v = vol_geom(g, g.n * g.cin);
    Tensor cols = empty_tensor(DimVector{g.n, g.cin * v.k_numel(), v.out_numel()}, dt, x.device());
    if (x.device().is_cuda()) {
#ifdef TP_USE_CUDA
      cuda::vol2col(v, x, cols);
#endif
      return cols;
    }
    visit_volume(dt, [&](auto t) {
      using T = decltype(t);
      const T* src = x.data<T>();
      T* dst = cols.data<T>();
      parallel_for(0, cols.numel(), 4096, [&](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) dst[u] = conv::vol2col_entry(v, src, u);
      });
    });
    return cols;
  });
}

/// The volumes (N, g.cin, *g.in) summed back from columns (N, g.cin * K, L): volume_columns' adjoint.
Tensor columns_to_volume(const ConvShape& g, const Tensor& columns) {
  return widened(columns.dtype(), [&](DType dt) {
    Tensor cols = as_compute(columns, dt);
    const conv::VolGeom v = vol_geom(g, g.n * g.cin);
    Tensor vol = empty_tensor(sizes_of(g.n, g.cin, g, true), dt, cols.device());
    if (cols.device().is_cuda()) {
#ifdef TP_USE_CUDA
      cuda::col2vol(v, cols, vol);
#endif
      return vol;
    }
    visit_volume(dt, [&](auto t) {
      using T = decltype(t);
      const T* src = cols.data<T>();
      T* dst = vol.data<T>();
      parallel_for(0, vol.numel(), 1024, [&](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) dst[u] = conv::col2vol_voxel<T>(v, src, u);
      });
    });
    return vol;
  });
}

/// Columns of the input as (N, groups, C/groups * K, L).
Tensor grouped_columns(const ConvShape& g, const Tensor& input) {
  const auto k = plane(g.k), d = plane(g.d), p = plane(g.p), s = plane(g.s);
  Tensor cols = g.nsp == 3 ? volume_columns(g, input) : im2col(as_plane(input, g), k, d, p, s);
  return reshape(cols, std::vector<int64_t>{g.n, g.groups, cols.size(1) / g.groups, cols.size(2)});
}

Tensor unfold_convolution(const ConvShape& g, const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias, bool transposed) {
  check_unfold(g, input.dtype(), input.device().is_cuda());
  const int64_t G = g.groups, K = g.k_numel();
  const int64_t out_c = transposed ? g.cin : g.cout;
  Tensor y;
  if (!transposed) {
    Tensor w = reshape(weight, std::vector<int64_t>{G, g.cout / G, g.cin / G * K});
    y = reshape(matmul(w, grouped_columns(g, input)), sizes_of(g.n, out_c, g, false));
  } else {  // input (N, cout, *g.out), weight (cout, cin / G, *k): columns w^T x, then col2im
    Tensor w = reshape(weight, std::vector<int64_t>{G, g.cout / G, g.cin / G * K});
    Tensor x = reshape(input, std::vector<int64_t>{g.n, G, g.cout / G, g.out_numel()});
    Tensor cols = reshape(matmul(transpose(w, 1, 2), x), std::vector<int64_t>{g.n, g.cin * K, g.out_numel()});
    // col2im, unpadded, onto the whole extent the blocks cover, then crop `padding` off the
    // front and what is past the output off the back. (With the padding inside col2im, an
    // output_padding past the stride, allowed below the dilation, would make the blocks no
    // longer tile the output; the rows it adds are the ones the back padding would crop,
    // and zeros past the extent.)
    ConvShape reach = g;
    std::vector<int64_t> crop;  // constant_pad_nd's (front, back) pairs, last dim first
    for (int i = 2; i >= 3 - g.nsp; --i) {
      reach.in[i] = (g.out[i] - 1) * g.s[i] + g.d[i] * (g.k[i] - 1) + 1;
      reach.p[i] = 0;
      crop.insert(crop.end(), {-g.p[i], g.in[i] + g.p[i] - reach.in[i]});
    }
    y = g.nsp == 3 ? columns_to_volume(reach, cols)
                   : reshape(col2im(cols, plane(reach.in), plane(g.k), plane(g.d), plane(reach.p), plane(g.s)),
                             sizes_of(g.n, out_c, reach, true));
    if (std::any_of(crop.begin(), crop.end(), [](int64_t v) { return v != 0; })) y = constant_pad_nd(y, crop, 0);
  }
  if (bias) {
    std::vector<int64_t> b_shape(size_t(y.dim()), 1);
    b_shape[1] = out_c;
    y = add(y, reshape(to_compute(*bias, y.dtype()), b_shape));  // a bias of another dtype: check_bias_dtype
  }
  return contiguous(y);
}

Tensor unfold_weight_grad(const ConvShape& g, const Tensor& grad_output, const Tensor& input,
                          IntArrayRef weight_size) {
  check_unfold(g, input.dtype(), input.device().is_cuda());
  const int64_t G = g.groups;
  Tensor gy = reshape(grad_output, std::vector<int64_t>{g.n, G, g.cout / G, g.out_numel()});
  Tensor gw = sum(matmul(gy, transpose(grouped_columns(g, input), 2, 3)), std::vector<int64_t>{0});
  return contiguous(reshape(gw, weight_size));
}

ConvShape weight_grad_shape(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  TP_CHECK(int64_t(weight_size.size()) == input.dim(), "expected weight_size of ", input.dim(), " dims");
  // a stand-in weight: only its sizes, dtype and device are read (zero strides: one element)
  const DimVector no_strides(weight_size.size(), 0);
  Tensor shape_only = empty_strided_tensor(weight_size, no_strides, input.dtype(), input.device());
  const int64_t zero = 0;
  ConvShape g = conv_shape(input, shape_only, std::nullopt, stride, padding, dilation, false,
                           IntArrayRef(&zero, 1), groups);
  TP_CHECK(grad_output.dim() == input.dim() && grad_output.size(0) == g.n && grad_output.size(1) == g.cout,
           "grad_output of size ", shape_str(grad_output.sizes()), " does not match the convolution");
  for (int64_t i = 0; i < g.nsp; ++i)
    TP_CHECK(grad_output.size(2 + i) == g.out[3 - g.nsp + i], "grad_output of size ",
             shape_str(grad_output.sizes()), " does not match the convolution");
  return g;
}

#ifdef TP_USE_CUDNN
// ------------------------------------------------------------------ cuDNN (Note [cuDNN convolutions])

cuda::cudnn::ConvParams cudnn_params(const ConvShape& g) {
  cuda::cudnn::ConvParams p;
  for (int64_t i = 3 - g.nsp; i < 3; ++i) {
    p.stride.push_back(g.s[i]);
    p.padding.push_back(g.p[i]);
    p.dilation.push_back(g.d[i]);
  }
  p.groups = g.groups;
  return p;
}

/// convolution on CUDA through cuDNN (bias added after), laid out as PyTorch's cuDNN
/// convolutions: channels last when the input's or the weight's strides say so. Undefined
/// when cuDNN is switched off or refuses the convolution.
Tensor cudnn_convolution(const ConvShape& g, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, bool transposed) {
  if (!cudnn_flags().enabled) return Tensor();
  const bool cl = conv_channels_last(input.sizes(), input.strides(), weight.sizes(), weight.strides(), input.dtype(),
                                     true);
  Tensor y = transposed
                 ? cuda::cudnn::convolution_backward_data(input, weight, sizes_of(g.n, g.cin, g, true), cudnn_params(g), cl)
                 : cuda::cudnn::convolution_forward(input, weight, sizes_of(g.n, g.cout, g, false), cudnn_params(g), cl);
  if (y.defined() && bias) {
    std::vector<int64_t> b_shape(size_t(y.dim()), 1);
    b_shape[1] = y.size(1);
    add_(y, reshape(*bias, b_shape));
  }
  return y;
}

/// _convolution_weight_backward through cuDNN, channels last when grad_output's or the
/// input's strides say so; undefined as cudnn_convolution.
Tensor cudnn_weight_grad(const ConvShape& g, const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size) {
  if (!cudnn_flags().enabled) return Tensor();
  const bool cl = conv_channels_last(input.sizes(), input.strides(), grad_output.sizes(), grad_output.strides(),
                                     input.dtype(), true);
  return cuda::cudnn::convolution_backward_filter(grad_output, input, weight_size, cudnn_params(g), cl);
}
#endif

}  // namespace

Tensor convolution_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                        IntArrayRef output_padding, int64_t groups, OutArg) {
  ConvShape g = conv_shape(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const int64_t out_c = transposed ? g.cin : g.cout;
  const DimVector sizes = sizes_of(g.n, out_c, g, transposed);
  // row-major whatever the layouts (PyTorch's meta convolution; no dtype checks: they are its kernels')
  if (is_meta(input)) return empty_tensor(sizes, input.dtype(), input.device());
  if (empty_batch_conv(input)) return empty_tensor(sizes, empty_batch_conv_dtype(input, weight), input.device());
  if (input.device().is_cuda()) {
#ifdef TP_USE_CUDNN
    if (Tensor y = cudnn_convolution(g, input, weight, bias, transposed); y.defined()) return y;
#endif
    return unfold_convolution(g, input, weight, bias, transposed);
  }
  const DType in_dt = input.dtype();
  // PyTorch's integer kernels: int64 everywhere, the narrower ints only plain undilated
  if (is_integral(in_dt, false) && in_dt != DType::Int64) {
    const bool dilated = g.d[0] > 1 || g.d[1] > 1 || g.d[2] > 1;
    TP_CHECK_KIND(ErrorKind::NotImplemented, !transposed && !dilated, "\"",
                  transposed ? "slow_conv_transpose2d_out_cpu" : "slow_conv_dilated<>", "\" not implemented for '",
                  dtype_scalar_name(in_dt), "'");
  }
  const bool cl = conv_channels_last(input.sizes(), input.strides(), weight.sizes(), weight.strides(), input.dtype());
  return widened(input.dtype(), [&](DType dt) {
    // a channels-last 1x1 convolution: one GEMM over the batch's pixels, unless the tiled
    // kernel runs it (8x64x56x56, 1 thread: 2.0 -> 1.33 ms; PyTorch 1.6)
    if (cl && g.pointwise() && !(g.groups == 1 && tiled_conv(g, dt, transposed))) {
      Tensor b = bias ? as_compute(*bias, dt) : Tensor();
      return pointwise_channels_last(g, with_layout(to_compute(input, dt), true), as_compute(weight, dt), b,
                                     transposed, dt);
    }
    const bool wino = winograd_conv(g, dt, transposed);
    const bool tiled = !wino && tiled_conv(g, dt, transposed);
    // channels last natively: the tiled kernel (ungrouped), depthwise (direct loops) and
    // ungrouped (GEMM) unless Winograd runs; else row-major, then laid out
    const bool native_cl = cl && !wino && (g.depthwise() || g.groups == 1);
    Tensor x = native_cl ? with_layout(to_compute(input, dt), true) : as_compute(input, dt);
    // (Cout, K * Cin) for the channels-last GEMM; row-major for the tiled kernel either way
    Tensor w = with_layout(to_compute(weight, dt), native_cl && !tiled && !g.depthwise());
    Tensor y = native_cl ? empty_strided_tensor(sizes, channels_last_strides(sizes), dt, input.device())
                         : empty_tensor(sizes, dt);
    Tensor b = bias ? as_compute(*bias, dt) : Tensor();
    if (y.numel() == 0) return y;
    if (wino) {  // adds the bias
      cpu::conv_winograd_stub(g, transposed, x.data<float>(), w.data<float>(),
                              b.defined() ? b.data<float>() : nullptr, y.data<float>());
      return cl ? with_layout(y, true) : y;
    }
    if (tiled) {  // adds the bias
      cpu::conv_tiled_stub(g, transposed, native_cl, x.data<float>(), w.data<float>(),
                           b.defined() ? b.data<float>() : nullptr, y.data<float>());
      return cl && !native_cl ? with_layout(y, true) : y;
    }
    visit_compute(dt, [&](auto t) {
      using T = decltype(t);
      const int64_t L = transposed ? g.in_numel() : g.out_numel();
      const bool nhwc_gemm = native_cl && !g.depthwise();
      if (!transposed && nhwc_gemm) gemm_forward_nhwc(g, dt, x.data<T>(), w.data<T>(), y.data<T>());
      else if (transposed && nhwc_gemm) gemm_input_nhwc(g, dt, x.data<T>(), w.data<T>(), y.data<T>());
      else if (!transposed && direct_conv(g, Pass::forward))  // adds the bias
        return cpu::conv_direct_forward_stub(g, dt, native_cl, x.data_ptr(), w.data_ptr(),
                                             b.defined() ? b.data_ptr() : nullptr, y.data_ptr());
      else if (!transposed && fold_batch(g)) folded_forward(g, dt, x.data<T>(), w.data<T>(), y.data<T>());
      else if (!transposed) gemm_forward(g, dt, x.data<T>(), w.data<T>(), y.data<T>(), false);
      else if (direct_conv(g, Pass::input))
        cpu::conv_direct_input_stub(g, dt, native_cl, x.data_ptr(), w.data_ptr(), y.data_ptr());
      else if (fold_batch(g)) folded_input(g, dt, x.data<T>(), w.data<T>(), y.data<T>());
      else gemm_input(g, dt, x.data<T>(), w.data<T>(), y.data<T>());
      if (b.defined()) cpu::conv_add_bias_stub(dt, y.data_ptr(), b.data_ptr(), g.n, out_c, L, native_cl);
    });
    return cl && !native_cl ? with_layout(y, true) : y;
  });
}

Tensor convolution_weight_backward_impl(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                        int64_t groups, OutArg) {
  ConvShape g = weight_grad_shape(grad_output, input, weight_size, stride, padding, dilation, groups);
  TP_CHECK(grad_output.device() == input.device(), "Expected all tensors to be on the same device, but "
           "found at least two devices, ", input.device().str(), " and ", grad_output.device().str(), "!");
  if (is_meta(input)) return empty_tensor(weight_size, input.dtype(), input.device());  // row-major, as PyTorch's
  if (input.device().is_cuda()) {
#ifdef TP_USE_CUDNN
    if (Tensor gw = cudnn_weight_grad(g, grad_output, input, weight_size); gw.defined()) return gw;
#endif
    return unfold_weight_grad(g, grad_output, input, weight_size);
  }
  const bool cl = conv_channels_last(input.sizes(), input.strides(), {}, {}, input.dtype());
  return widened(input.dtype(), [&](DType dt) {
    if (cl && g.pointwise())
      return pointwise_weight_channels_last(g, with_layout(to_compute(grad_output, dt), true),
                                            with_layout(to_compute(input, dt), true), weight_size, dt);
    const bool native_cl = cl && (g.depthwise() || g.groups == 1), nhwc_gemm = native_cl && !g.depthwise();
    Tensor gy = with_layout(to_compute(grad_output, dt), native_cl), x = with_layout(to_compute(input, dt), native_cl);
    Tensor gw = nhwc_gemm ? empty_strided_tensor(weight_size, channels_last_strides(weight_size), dt, input.device())
                          : empty_tensor(weight_size, dt);
    if (gw.numel() == 0) return gw;
    visit_compute(dt, [&](auto t) {
      using T = decltype(t);
      if (g.out_numel() == 0) std::fill_n(gw.data<T>(), gw.numel(), T(0));
      else if (nhwc_gemm) gemm_weight_nhwc(g, dt, gy.data<T>(), x.data<T>(), gw.data<T>());
      else if constexpr (std::is_same_v<T, float>) {
        if (!native_cl && winograd_weight(g, dt))
          winograd_weight_grad(g, gy.data<float>(), x.data<float>(), gw.data<float>());
        else if (!native_cl && tiled_weight(g, dt))
          cpu::conv_tiled_weight_stub(g, x.data<float>(), gy.data<float>(), gw.data<float>());
        else if (direct_conv(g, Pass::weight))
          cpu::conv_direct_weight_stub(g, dt, native_cl, gy.data_ptr(), x.data_ptr(), gw.data_ptr());
        else if (fold_batch(g)) folded_weight(g, dt, gy.data<T>(), x.data<T>(), gw.data<T>());
        else gemm_weight(g, dt, gy.data<T>(), x.data<T>(), gw.data<T>());
      } else if (direct_conv(g, Pass::weight))
        cpu::conv_direct_weight_stub(g, dt, native_cl, gy.data_ptr(), x.data_ptr(), gw.data_ptr());
      else if (fold_batch(g)) folded_weight(g, dt, gy.data<T>(), x.data<T>(), gw.data<T>());
      else gemm_weight(g, dt, gy.data<T>(), x.data<T>(), gw.data<T>());
    });
    return cl ? with_layout(gw, true) : gw;
  });
}

Tensor convolution_unfold_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                               IntArrayRef output_padding, int64_t groups, OutArg) {
  ConvShape g = conv_shape(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  if (is_meta(input)) {
    check_unfold(g, input.dtype(), false);
    return empty_tensor(sizes_of(g.n, transposed ? g.cin : g.cout, g, transposed), input.dtype(), input.device());
  }
  if (empty_batch_conv(input))
    return empty_tensor(sizes_of(g.n, transposed ? g.cin : g.cout, g, transposed),
                        empty_batch_conv_dtype(input, weight), input.device());
  return unfold_convolution(g, input, weight, bias, transposed);
}

Tensor convolution_unfold_weight_backward_impl(const Tensor& grad_output, const Tensor& input,
                                               IntArrayRef weight_size, IntArrayRef stride, IntArrayRef padding,
                                               IntArrayRef dilation, int64_t groups, OutArg) {
  ConvShape g = weight_grad_shape(grad_output, input, weight_size, stride, padding, dilation, groups);
  if (is_meta(input)) {
    check_unfold(g, input.dtype(), false);
    return empty_tensor(weight_size, input.dtype(), input.device());
  }
  return unfold_weight_grad(g, grad_output, input, weight_size);
}

// ------------------------------------------------------------------ backward helpers

namespace {

/// A convolution without bias: `convolution`, or with `unfold` its unfold form
/// `_convolution_unfold` (Note [Convolution by unfold]), whose gradients are its own kind.
Tensor convolution_of(bool unfold, const Tensor& input, const Tensor& weight, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                      int64_t groups) {
  return unfold ? _convolution_unfold(input, weight, std::nullopt, stride, padding, dilation, transposed,
                                      output_padding, groups)
                : convolution(input, weight, std::nullopt, stride, padding, dilation, transposed, output_padding,
                              groups);
}

}  // namespace

Tensor conv_input_grad(const Tensor& grad, const Tensor& weight, IntArrayRef in_sizes, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, int64_t groups, bool unfold) {
  const int64_t nsp = int64_t(in_sizes.size()) - 2;
  DimVector s = expand_param(stride, nsp, "stride"), p = expand_param(padding, nsp, "padding"),
            d = expand_param(dilation, nsp, "dilation"), op;
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t natural = (grad.size(2 + i) - 1) * s[i] - 2 * p[i] + d[i] * (weight.size(2 + i) - 1) + 1;
    op.push_back(in_sizes[2 + i] - natural);
  }
  return convolution_of(unfold, grad, weight, s, p, d, true, op, groups);
}

Tensor plain_convolution(const Tensor& input, const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                         IntArrayRef dilation, int64_t groups, bool unfold) {
  const int64_t zero = 0;
  return convolution_of(unfold, input, weight, stride, padding, dilation, false, IntArrayRef(&zero, 1), groups);
}

namespace {

/// A transposed convolution's output gradient as the input of the plain convolutions that
/// give its gradients, with the padding they take: itself and `padding`, unless its
/// output_padding reaches the stride (allowed below the dilation). A padded plain
/// convolution over it would then see more blocks than the transposed input (of spatial
/// sizes in_sizes[2:]) has, so it is padded and cropped to exactly the extent those blocks
/// read, with zero padding left.
std::pair<Tensor, DimVector> transposed_grad_extent(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef w_sizes,
                                                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation) {
  const int64_t nsp = int64_t(in_sizes.size()) - 2;
  DimVector s = expand_param(stride, nsp, "stride"), p = expand_param(padding, nsp, "padding"),
            d = expand_param(dilation, nsp, "dilation");
  std::vector<int64_t> pads;  // constant_pad_nd's (front, back) pairs, last dim first
  bool exact = true;
  for (int64_t i = nsp - 1; i >= 0; --i) {
    const int64_t reach = d[i] * (w_sizes[2 + i] - 1) + 1, y = grad.size(2 + i);
    exact = exact && (y + 2 * p[i] - reach) / s[i] + 1 == in_sizes[2 + i];
    pads.insert(pads.end(), {p[i], (in_sizes[2 + i] - 1) * s[i] + reach - p[i] - y});
  }
  if (exact) return {grad, p};
  return {constant_pad_nd(grad, pads, 0), DimVector(size_t(nsp), 0)};
}

}  // namespace

Tensor convolution_input_backward(const Tensor& grad, const Tensor& weight, IntArrayRef in_sizes,
                                  IntArrayRef in_strides, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, bool transposed, int64_t groups, bool unfold) {
  Tensor gx;
  if (transposed) {
    auto [gy, p] = transposed_grad_extent(grad, in_sizes, weight.sizes(), stride, padding, dilation);
    gx = plain_convolution(gy, weight, stride, p, dilation, groups, unfold);
  } else {
    gx = conv_input_grad(grad, weight, in_sizes, stride, padding, dilation, groups, unfold);
  }
  return with_layout(gx, is_meta(weight) ? conv_grad_channels_last_meta(in_sizes, in_strides, weight.sizes(),
                                                                         weight.strides())
                                          : conv_channels_last(in_sizes, in_strides, weight.sizes(), weight.strides(),
                                                               weight.dtype(), weight.device().is_cuda()));
}

Tensor convolution_weight_backward(const Tensor& grad, const Tensor& input, IntArrayRef w_sizes,
                                   IntArrayRef w_strides, IntArrayRef stride, IntArrayRef padding,
                                   IntArrayRef dilation, bool transposed, int64_t groups, bool unfold) {
  const Tensor& gy = transposed ? input : grad;
  auto [x, p] = transposed ? transposed_grad_extent(grad, input.sizes(), w_sizes, stride, padding, dilation)
                           : std::pair<Tensor, DimVector>(input, DimVector(padding.data(), padding.size()));
  Tensor gw = unfold ? _convolution_unfold_weight_backward(gy, x, w_sizes, stride, p, dilation, groups)
                     : _convolution_weight_backward(gy, x, w_sizes, stride, p, dilation, groups);
  const bool cl = is_meta(input) ? conv_grad_channels_last_meta(input.sizes(), input.strides(), w_sizes, w_strides)
                                 : conv_channels_last(input.sizes(), input.strides(), w_sizes, w_strides, input.dtype(),
                                                      input.device().is_cuda());
  return with_layout(gw, cl);
}

Tensor channel_bias_backward(const Tensor& grad) {
  const DType dt = grad.dtype();
  const bool row_major = grad.is_contiguous() && grad.dim() >= 2;
  // (not for a tensor subclass with __torch_dispatch__: its data is not ours to read)
  if (!autograd::grad_enabled() && grad.device().is_cpu() && !grad.impl()->has_python_key() &&
      (dt == DType::Float32 || dt == DType::Float64) &&
      (row_major || is_channels_last_dense(grad))) {  // one pass over the planes, or column sums
    const int64_t n = grad.size(0), c = grad.size(1), l = n * c != 0 ? grad.numel() / (n * c) : 0;
    Tensor out = empty_tensor(IntArrayRef(&c, 1), dt);
    cpu::conv_bias_grad_stub(dt, grad.data_ptr(), out.data_ptr(), n, c, l, !row_major);
    return out;
  }
  DimVector dims{0};
  for (int64_t i = 2; i < grad.dim(); ++i) dims.push_back(i);
  return sum(grad, dims);
}

// ------------------------------------------------------------------ im2col / col2im (F.unfold / F.fold)

namespace {

/// Calls f(T{}) for the dtypes PyTorch's im2col/col2im take (float16/bfloat16 widened first).
template <class F>
void visit_blocks(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f(float{});
  if (dt == DType::Float64) return f(double{});
  if (dt == DType::Bool) return f(bool{});
  fail(ErrorKind::NotImplemented, "\"", op, "_out_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// im2col/col2im's checks of kernel_size, dilation, padding and stride (PyTorch's, before the
/// input's dims); returns them expanded to two.
std::array<DimVector, 4> block_params(IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                                      IntArrayRef stride, const char* op) {
  DimVector k = expand_param(kernel_size, 2, "kernel_size"), d = expand_param(dilation, 2, "dilation"),
            p = expand_param(padding, 2, "padding"), s = expand_param(stride, 2, "stride");
  TP_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel size should be greater than zero, but got kernel_height: ", k[0],
           " kernel_width: ", k[1]);
  TP_CHECK(d[0] > 0 && d[1] > 0, op, ": dilation should be greater than zero, but got dilation_height: ", d[0],
           " dilation_width: ", d[1]);
  TP_CHECK(p[0] >= 0 && p[1] >= 0, op, ": padding should be non-negative, but got pad_height: ", p[0],
           " pad_width: ", p[1]);
  TP_CHECK(s[0] > 0 && s[1] > 0, op, ": stride should be greater than zero, but got stride_height: ", s[0],
           " stride_width: ", s[1]);
  return {k, d, p, s};
}

/// The 2-D sliding-block geometry of im2col/col2im over spatial size (h, w), with checks.
ConvShape block_shape(int64_t h, int64_t w, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                      IntArrayRef stride, const char* op) {
  auto [k, d, p, s] = block_params(kernel_size, dilation, padding, stride, op);
  ConvShape g;
  g.nsp = 2;
  g.in[1] = h;
  g.in[2] = w;
  for (int i = 0; i < 2; ++i) {
    g.k[1 + i] = k[i];
    g.d[1 + i] = d[i];
    g.p[1 + i] = p[i];
    g.s[1 + i] = s[i];
    const int64_t span = g.in[1 + i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1);
    g.out[1 + i] = span >= 0 ? span / s[i] + 1 : 0;
  }
  TP_CHECK(g.out[1] >= 1 && g.out[2] >= 1, op, ": Given input with spatial size (", h, ", ", w, "), kernel_size=(",
           k[0], ", ", k[1], "), dilation=(", d[0], ", ", d[1], "), padding=(", p[0], ", ", p[1],
           "), calculated shape of the array of sliding blocks as (", g.out[1], ", ", g.out[2],
           "), but its components must be at least one.");
  return g;
}

#ifdef TP_USE_CUDA
/// The 2-D geometry of g (one image of g.cin channels per sample) for the CUDA kernels.
cuda::BlockGeom cuda_blocks(const ConvShape& g) {
  return {g.n, g.cin, g.in[1], g.in[2], g.out[1], g.out[2], g.k[1], g.k[2], g.s[1], g.s[2], g.p[1], g.p[2],
          g.d[1], g.d[2]};
}
#endif

}  // namespace

Tensor im2col_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride, OutArg) {
  (void)block_params(kernel_size, dilation, padding, stride, "im2col");  // PyTorch checks them first,
  if (self.dim() < 3) (void)size_at(self, 1), (void)size_at(self, 2);  // then reads these sizes
  bool ok = self.dim() == 3 || self.dim() == 4;
  for (int64_t i = self.dim() - 3; ok && i < self.dim(); ++i) ok = i == self.dim() - 4 || self.size(i) != 0;
  TP_CHECK(ok, "Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
           "for input, but got: ", shape_str(self.sizes()));
  const bool batched = self.dim() == 4;
  ConvShape g = block_shape(self.size(-2 + self.dim()), self.size(-1 + self.dim()), kernel_size, dilation, padding,
                            stride, "im2col");
  g.n = batched ? self.size(0) : 1;
  g.cin = self.size(batched ? 1 : 0);
  const int64_t K = g.k_numel(), L = g.out_numel();
  const DimVector col_sizes = batched ? DimVector{g.n, g.cin * K, L} : DimVector{g.cin * K, L};
  // (PyTorch's meta function checks no dtype: that is its kernels')
  if (is_meta(self)) return empty_tensor(col_sizes, self.dtype(), self.device());
  if (complex_cpu(self))  // linear: each part alone (Note [Complex convolution])
    return complex(im2col(real(self), kernel_size, dilation, padding, stride),
                   im2col(imag(self), kernel_size, dilation, padding, stride));
  return widened(self.dtype(), [&](DType dt) {
    Tensor x = as_compute(self, dt);
    Tensor col = empty_tensor(col_sizes, dt, self.device());
    visit_blocks(dt, "im2col", [&](auto t) {
      using T = decltype(t);
      if (x.device().is_cuda()) {
#ifdef TP_USE_CUDA
        cuda::im2col(cuda_blocks(g), x, col);
#endif
        return;
      }
      for (int64_t n = 0; n < g.n; ++n)
        cpu::im2col_stub(g, dt, false, x.data<T>() + n * g.cin * g.in_numel(), col.data<T>() + n * g.cin * K * L);
    });
    return col;
  });
}

Tensor col2im_impl(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride, OutArg) {
  TP_CHECK((self.dim() == 2 || self.dim() == 3) && self.size(self.dim() - 2) != 0 && self.size(self.dim() - 1) != 0,
           "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for "
           "input, but got: ", shape_str(self.sizes()));
  DimVector out = expand_param(output_size, 2, "output_size");
  ConvShape g = block_shape(out[0], out[1], kernel_size, dilation, padding, stride, "col2im");
  const bool batched = self.dim() == 3;
  const int64_t K = g.k_numel(), L = g.out_numel(), rows = self.size(batched ? 1 : 0);
  TP_CHECK(rows % K == 0, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
           "got input.size(1)=", rows, " and kernel_size=(", g.k[1], ", ", g.k[2], ")");
  TP_CHECK(self.size(self.dim() - 1) == L, "Given output_size=(", out[0], ", ", out[1], "), kernel_size=(", g.k[1], ", ",
           g.k[2], "), dilation=(", g.d[1], ", ", g.d[2], "), padding=(", g.p[1], ", ", g.p[2], "), stride=(", g.s[1],
           ", ", g.s[2], "), expected size of input's dimension 2 to match the calculated number of sliding blocks ",
           g.out[1], " * ", g.out[2], " = ", L, ", but got input.size(2)=", self.size(self.dim() - 1), ".");
  g.n = batched ? self.size(0) : 1;
  g.cin = rows / K;
  const DimVector img_sizes = batched ? DimVector{g.n, g.cin, out[0], out[1]} : DimVector{g.cin, out[0], out[1]};
  if (is_meta(self)) return empty_tensor(img_sizes, self.dtype(), self.device());
  if (complex_cpu(self))  // linear: each part alone (Note [Complex convolution])
    return complex(col2im(real(self), output_size, kernel_size, dilation, padding, stride),
                   col2im(imag(self), output_size, kernel_size, dilation, padding, stride));
  return widened(self.dtype(), [&](DType dt) {
    Tensor col = as_compute(self, dt);
    Tensor img = empty_tensor(img_sizes, dt, self.device());
    visit_blocks(dt, "col2im", [&](auto t) {
      using T = decltype(t);
      if (col.device().is_cuda()) {
#ifdef TP_USE_CUDA
        cuda::col2im(cuda_blocks(g), col, img);
#endif
        return;
      }
      for (int64_t n = 0; n < g.n; ++n)
        cpu::col2im_stub(g, dt, false, col.data<T>() + n * g.cin * K * L, img.data<T>() + n * g.cin * g.in_numel());
    });
    return img;
  });
}

Tensor im2col_backward(const Tensor& grad, IntArrayRef self_sizes, IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride) {
  const int64_t hw[2] = {self_sizes[self_sizes.size() - 2], self_sizes[self_sizes.size() - 1]};
  return col2im(grad, IntArrayRef(hw, 2), kernel_size, dilation, padding, stride);
}

// ------------------------------------------------------------------ conv1d/2d/3d, conv_transpose

namespace {

// Note [Complex convolution]
// conv1d/2d/3d and their transposes take complex CPU tensors as PyTorch does: a
// convolution is real-bilinear in (input, weight), so with p = f(xr, wr), q = f(xi, wi) and
// s = f(xr + xi, wr + wi) (Gauss's trick: three real convolutions, not four),
// f(x, w) = (p - q) + i (s - p - q); the bias rides along as br in p and br + bi in s.
// It is written with differentiable ops (real, imag, add, sub, complex), so gradients,
// forward AD and vmap come from theirs. The `convolution` primitive itself refuses complex
// dtypes, as PyTorch's does; im2col/col2im are linear and move each part alone. Complex
// CUDA tensors keep raising NotImplementedError.

/// convolution(), for complex CPU tensors by Note [Complex convolution].
Tensor convolution_any(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                       int64_t groups) {
  if (!complex_cpu(x) || !is_complex(w.dtype()) || (bias && !is_complex(bias->dtype())))
    return convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups);
  auto f = [&](const Tensor& a, const Tensor& b, const std::optional<Tensor>& c) {
    return convolution(a, b, c, stride, padding, dilation, transposed, output_padding, groups);
  };
  Tensor xr = real(x), xi = imag(x), wr = real(w), wi = imag(w);
  std::optional<Tensor> br = bias ? std::optional<Tensor>(real(*bias)) : std::nullopt;
  std::optional<Tensor> bs = bias ? std::optional<Tensor>(add(*br, imag(*bias))) : std::nullopt;
  Tensor p = f(xr, wr, br), q = f(xi, wi, std::nullopt), s = f(add(xr, xi), add(wr, wi), bs);
  return complex(sub(p, q), sub(sub(s, p), q));
}

/// Runs `f` on a batched input: unbatched (C, spatial...) inputs get a batch dim of 1.
template <class F>
Tensor with_batch(const Tensor& input, int64_t nsp, const char* op, F&& f) {
  TP_CHECK(input.dim() == nsp + 1 || input.dim() == nsp + 2, "Expected ", nsp + 1, "D (unbatched) or ",
           nsp + 2, "D (batched) input to ", op, ", but got input of size: ", shape_str(input.sizes()));
  if (input.dim() == nsp + 2) return f(input);
  const int64_t zero = 0;
  return _squeeze_dims(f(unsqueeze(input, 0)), IntArrayRef(&zero, 1));
}

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups, int64_t nsp, const char* op,
               bool check_bias = true) {
  // PyTorch's conv1d/2d/3d with number paddings compare the bias' dtype with the input's before
  // anything else (its padding='valid' / 'same' forms and the transposed ones do not: convolution's
  // kernels decide, check_bias_dtype)
  if (check_bias && bias && bias->defined())
    TP_CHECK(bias->dtype() == input.dtype(), "Input type (", dtype_name(input.dtype()), ") and bias type (",
             dtype_name(bias->dtype()), ") should be the same");
  int64_t zero = 0;
  return with_batch(input, nsp, op, [&](const Tensor& x) {
    return convolution_any(x, weight, bias, stride, padding, dilation, false, IntArrayRef(&zero, 1), groups);
  });
}

Tensor conv_nd_str(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   const std::string& padding, IntArrayRef dilation, int64_t groups, int64_t nsp, const char* op) {
  if (padding == "valid") {
    int64_t zero = 0;
    return conv_nd(input, weight, bias, stride, IntArrayRef(&zero, 1), dilation, groups, nsp, op, false);
  }
  TP_CHECK(padding == "same", "Invalid padding string: '", padding, "'");
  DimVector s = expand_param(stride, nsp, "stride"), d = expand_param(dilation, nsp, "dilation");
  for (int64_t v : s) TP_CHECK(v == 1, "padding='same' is not supported for strided convolutions");
  TP_CHECK(weight.dim() == nsp + 2, "Expected ", nsp + 2, "-dimensional weight for ", op, ", but got weight of size ",
           shape_str(weight.sizes()));
  // Total padding d*(k-1) per dim; an odd total puts the extra element on the right, which
  // equals padding one more on both sides and dropping the first output (stride is 1). The
  // result is then copied dense in its layout (row-major or channels last), as PyTorch's
  // (which pads a copy of the input instead), on every device, meta included.
  DimVector pad, trim;
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t total = d[i] * (weight.size(2 + i) - 1);
    pad.push_back((total + 1) / 2);
    trim.push_back(total % 2);
  }
  return with_batch(input, nsp, op, [&](const Tensor& x) {
    int64_t zero = 0;
    Tensor y = convolution_any(x, weight, bias, s, pad, d, false, IntArrayRef(&zero, 1), groups);
    bool trimmed = false;
    for (int64_t i = 0; i < nsp; ++i)
      if (trim[i]) {
        y = narrow(y, 2 + i, 1, y.size(2 + i) - 1);
        trimmed = true;
      }
    return trimmed ? with_layout(y, channels_last(y)) : y;
  });
}

Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                         IntArrayRef dilation, int64_t nsp, const char* op) {
  return with_batch(input, nsp, op, [&](const Tensor& x) {
    return convolution_any(x, weight, bias, stride, padding, dilation, true, output_padding, groups);
  });
}

}  // namespace

Tensor conv1d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv3d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d");
}
Tensor conv1d_padding_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, const std::string& padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd_str(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d_padding_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, const std::string& padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd_str(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv3d_padding_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, const std::string& padding, IntArrayRef dilation, int64_t groups, OutArg) {
  return conv_nd_str(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d");
}
Tensor conv_transpose1d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                             IntArrayRef dilation, OutArg) {
  return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d");
}
Tensor conv_transpose2d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                             IntArrayRef dilation, OutArg) {
  return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d");
}
Tensor conv_transpose3d_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                             IntArrayRef dilation, OutArg) {
  return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d");
}

}  // namespace tp
