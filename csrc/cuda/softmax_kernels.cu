// CUDA softmax / log_softmax (forward and backward) and the fused cross entropy over rows.
// Rows up to kMaxRegRow elements whose length fills 16-byte packs are held in registers
// (read once); other rows stream: one pass for a running (max, sum of exp), one to write.
// Softmax over a non-last dim runs one thread per column. Accumulation: Note [nn kernel dtypes].
#include <algorithm>
#include <cmath>
#include <limits>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/launch.cuh"
#include "cuda/nn_kernels.h"
#include "cuda/nn_launch.cuh"
#include "cuda/row_pipeline.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

template <class A>
constexpr A kNegInf = -std::numeric_limits<A>::infinity();

/// A running max m and sum s of exp(x - m) over the values seen.
template <class A>
struct Online {
  A m = kNegInf<A>, s = A(0);
  __device__ void add(A x) {
    if (x > m) {
      s = s * dev_exp(m - x) + A(1);
      m = x;
    } else if (!(x == m && m == kNegInf<A>)) {  // a NaN makes s NaN; -inf beside -inf adds 0
      s += dev_exp(x - m);
    }
  }
  /// The group's (max, sum) in every thread of it (group_reduce's contract).
  __device__ void merge(int tpr, A* smem) {
    const A mm = group_reduce(m, tpr, smem, MaxFn{});
    s = group_reduce(s == A(0) ? A(0) : s * dev_exp(m - mm), tpr, smem, SumFn{});
    m = mm;
  }
};

constexpr float kLog2E = 1.44269504088896341f;

/// 2^x on the special-function unit, results below 2^-126 flushed to zero.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// softmax (log_softmax) of one row held in registers: thread t of the row's nt threads
/// (a group as group_reduce takes it) reads packs t, t + nt, ... (K of them, npk in all;
/// npk 0 for a thread without a row, which still joins the reductions) from `in` and
/// writes them to `out`. kLean (half types on the 128-thread blocks): exp on the
/// special-function unit and the one-instruction NaN-propagating max. kFull (Note [Full
/// rows]): every thread has K packs, no bounds checks.
template <class T, int K, bool kLean = false, bool kFull = false>
__device__ __forceinline__ void softmax_row(const T* in, T* out, int t, int nt, int64_t npk, bool log,
                                            ReduceRing<acc_t<T>>& red) {
  using A = acc_t<T>;
  constexpr int V = kPackOf<T>;
  A v[K][V];
  A m = kNegInf<A>;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * nt;
    if (kFull || j < npk) {
      const Pack<T, V> q = load_pack(in + j * V);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        v[k][e] = to_acc(q.v[e]);
        if constexpr (kLean) m = MaxNanFn{}(m, v[k][e]);
        else m = MaxFn{}(m, v[k][e]);
      }
    }
  }
  if constexpr (kLean) m = group_reduce(m, nt, red, MaxNanFn{});
  else m = group_reduce(m, nt, red, MaxFn{});
  A s = 0;
  // kLean (half-type rows on 128-thread blocks): exp(v - m) as 2^(v log2(e) - m log2(e)),
  // one FMA and the hardware exp2 (a few float ulps against expf's one, below 2^-126 zero;
  // the result is rounded to 8 or 11 bits after). In the register-row kernels it measured
  // no faster (bfloat16 1889 against 1965 GB/s, latency-bound); the pipelined ones are
  // issue-bound, and there the lean rows measured faster (Note [Lean half rows]).
  [[maybe_unused]] const float ml2 = float(m) * kLog2E;
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (kFull || t + int64_t(k) * nt < npk)
#pragma unroll
      for (int e = 0; e < V; ++e) {
        A ex;
        if constexpr (kLean && sizeof(T) == 2) ex = exp2_ftz(fmaf(v[k][e], kLog2E, -ml2));
        else ex = dev_exp(v[k][e] - m);
        s += ex;
        if (!log) v[k][e] = ex;
      }
  s = group_reduce(s, nt, red, SumFn{});
  const A shift = m + dev_log(s), inv = A(1) / s;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = t + int64_t(k) * nt;
    if (kFull || j < npk) {
      A r[V];
#pragma unroll
      for (int e = 0; e < V; ++e) r[e] = log ? v[k][e] - shift : v[k][e] * inv;
      store_rounded(out + j * V, r);
    }
  }
}

/// softmax of rows held in registers: tpr threads a row, several rows a block when short.
/// Rows have n elements, a multiple of the pack size.
template <class T, int K>
__global__ __launch_bounds__(kMaxRowThreads) void softmax_reg_kernel(const T* x, T* y, int64_t rows, int64_t n,
                                                                     int tpr, bool log) {
  __shared__ acc_t<T> smem[2 * kMaxRowThreads / 32];
  ReduceRing<acc_t<T>> red{smem, kMaxRowThreads / 32};
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int64_t off = (row < rows ? row : 0) * n;
  softmax_row<T, K>(x + off, y + off, int(threadIdx.x) % tpr, tpr, row < rows ? n / kPackOf<T> : 0, log, red);
}

/// softmax of rows streamed through shared memory (Note [Row pipeline]): K packs a thread,
/// NT threads a block (with_pipe_threads); kFull: Note [Full rows].
template <class T, int K, int NT, bool kFull = false>
__global__ __launch_bounds__(NT) void softmax_pipe_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  extern __shared__ __align__(16) unsigned char pipe_smem[];
  __shared__ acc_t<T> smem[2 * NT / 32];
  ReduceRing<acc_t<T>> red{smem, NT / 32};  // Note [Barrier-free rows]
  const T* const src[1] = {x};
  auto run = [&](auto lg) {  // lg: log as a constant (kFull), or the argument
    pipe_rows<NT, (NT == 128 || kFull ? K : 0), kFull>(src, rows, n, reinterpret_cast<T*>(pipe_smem),
                                                      [&](int64_t row, const T* buf) {
      softmax_row<T, K, NT == 128, kFull>(buf, y + row * n, int(threadIdx.x), NT, n / kPackOf<T>, bool(lg), red);
    });
  };
  if constexpr (kFull) {  // one loop per mode, the selects folded
    if (log) run(std::true_type{});
    else run(std::false_type{});
  } else {
    run(log);
  }
}

/// softmax of half-type rows, one warp a row (Note [Warp rows]); K packs a lane.
template <class T, int K>
__global__ __launch_bounds__(kWarpPipeThreads) void softmax_warp_kernel(const T* x, T* y, int64_t rows, int64_t n,
                                                                        bool log) {
  extern __shared__ __align__(16) unsigned char pipe_smem[];
  const T* const src[1] = {x};
  ReduceRing<acc_t<T>> none{nullptr, 0};  // (a warp a row: its reductions are shuffles)
  pipe_rows_warp(src, rows, n, reinterpret_cast<T*>(pipe_smem), [&](int64_t row, const T* buf) {
    softmax_row<T, K>(buf, y + row * n, int(threadIdx.x & 31), 32, n / kPackOf<T>, log, none);
  });
}

/// Launches softmax_warp_kernel when warp rows are on and the rows fit them.
template <class T>
bool launch_softmax_warp(const T* x, T* y, int64_t rows, int64_t n, bool log, int dev, cudaStream_t s) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    if (!warp_rows_fit<T>(n, {x, y})) return false;
    const size_t smem = size_t(kWarpPipeWarps) * kPipeStages * size_t(n) * sizeof(T);
    auto go = [&](auto kernel) {
      kernel<<<pipe_blocks(kernel, smem, rows, dev, kWarpPipeThreads, kWarpPipeWarps), kWarpPipeThreads, smem, s>>>(
          x, y, rows, n, log);
    };
    switch (warp_packs_per_lane<T>(n)) {
      case 1: go(softmax_warp_kernel<T, 1>); break;
      case 2: go(softmax_warp_kernel<T, 2>); break;
      case 4: go(softmax_warp_kernel<T, 4>); break;
      case 8: go(softmax_warp_kernel<T, 8>); break;
      default: go(softmax_warp_kernel<T, 16>); break;
    }
    return true;
  }
}

/// softmax (kLog: log_softmax) of half-type rows of kPackedRowLength, one a block of NT
/// threads (Note [Packed half rows]): a thread's K packs held as loaded and unpacked in each
/// pass; the same results as the lean pipelined rows (softmax_row's kLean), exp formed again
/// for the output instead of held.
template <class T, int NT, bool kLog>
__global__ __launch_bounds__(NT, packed_row_blocks(NT)) void softmax_packed_kernel(const T* x, T* y) {
  using Row = PackedRow<T, NT>;
  constexpr int V = Row::V, K = Row::K;
  __shared__ float smem[2 * NT / 32];
  ReduceRing<float> red{smem, NT / 32};  // Note [Barrier-free rows]
  const Row p(x);
  float m = kNegInf<float>;
  p.each<false>([&](float v) { m = MaxNanFn{}(m, v); });
  m = group_reduce(m, NT, red, MaxNanFn{});
  const float ml2 = m * kLog2E;
  float s = 0;
  p.each([&](float v) { s += exp2_ftz(fmaf(v, kLog2E, -ml2)); });
  s = group_reduce(s, NT, red, SumFn{});
  const float shift = m + dev_log(s), inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float r[V];
    unpack_acc(opaque(p.q[k]), r);
#pragma unroll
    for (int e = 0; e < V; ++e) r[e] = kLog ? r[e] - shift : exp2_ftz(fmaf(r[e], kLog2E, -ml2)) * inv;
    store_rounded(p.at(y, k), r);
  }
}

/// Launches softmax_packed_kernel where Note [Packed half rows] applies.
template <class T>
bool launch_softmax_packed(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t s) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int nt = packed_row_threads<T>(n, rows, {x, y});
    if (nt == 0) return false;
    with_packed_threads(nt, [&](auto threads) {
      constexpr int NT = decltype(threads)::value;
      auto kernel = log ? softmax_packed_kernel<T, NT, true> : softmax_packed_kernel<T, NT, false>;
      kernel<<<unsigned(rows), NT, 0, s>>>(x, y);
    });
    return true;
  }
}

/// Launches softmax_pipe_kernel when the pipeline is on and the rows fit it.
template <class T>
bool launch_softmax_pipe(const T* x, T* y, int64_t rows, int64_t n, bool log, int dev, cudaStream_t s) {
  if (!row_pipeline_enabled() || !pipe_rows_fit<T>(n, {x, y})) return false;
  const size_t smem = size_t(kPipeStages) * size_t(n) * sizeof(T);
  with_pipe_threads<T>(n, [&](auto nt) {
    constexpr int NT = decltype(nt)::value;
    const int k = pipe_packs_per_thread<T>(n, NT);
    const bool full = pipe_rows_full<T>(n, NT, k);  // Note [Full rows]
    auto go = [&](auto kernel, auto full_kernel) {
      if (full) kernel = full_kernel;
      kernel<<<pipe_blocks(kernel, smem, rows, dev, NT), NT, smem, s>>>(x, y, rows, n, log);
    };
    switch (k) {
      case 1: go(softmax_pipe_kernel<T, 1, NT>, softmax_pipe_kernel<T, 1, NT, true>); break;
      case 2: go(softmax_pipe_kernel<T, 2, NT>, softmax_pipe_kernel<T, 2, NT, true>); break;
      default: go(softmax_pipe_kernel<T, 4, NT>, softmax_pipe_kernel<T, 4, NT, true>); break;
    }
  });
  return true;
}

/// softmax of rows of any length: tpr threads per row, the row read twice.
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void softmax_stream_kernel(const T* x, T* y, int64_t rows, int64_t n, int tpr,
                                                              bool log) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n;
  Online<A> o;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { o.add(to_acc(v)); }, x + off);
  o.merge(tpr, smem);
  const A shift = o.m + dev_log(o.s), inv = A(1) / o.s;
  zip_row(len, t, tpr, y + off, [&](int64_t, T v) {
    const A a = to_acc(v);
    return from_acc<T>(log ? a - shift : dev_exp(a - o.m) * inv);
  }, x + off);
}

/// softmax along the middle dim of an (outer, n, inner) block: one thread per (outer, inner).
template <class T>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  using A = acc_t<T>;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = c / inner * n * inner + c % inner;
    Online<A> o;
    for (int64_t j = 0; j < n; ++j) o.add(to_acc(x[base + j * inner]));
    const A shift = o.m + dev_log(o.s), inv = A(1) / o.s;
    for (int64_t j = 0; j < n; ++j) {
      const A a = to_acc(x[base + j * inner]);
      y[base + j * inner] = from_acc<T>(log ? a - shift : dev_exp(a - o.m) * inv);
    }
  }
}

/// softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g); rows as
/// softmax_stream_kernel.
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void softmax_backward_stream_kernel(const T* g, const T* y, T* gx, int64_t rows,
                                                                       int64_t n, int tpr, bool log) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n;
  A s = 0;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T gv, T yv) { s += log ? to_acc(gv) : to_acc(gv) * to_acc(yv); },
                g + off, y + off);
  s = group_reduce(s, tpr, smem, SumFn{});
  zip_row(len, t, tpr, gx + off, [&](int64_t, T gv, T yv) {
    const A a = to_acc(gv), b = to_acc(yv);
    return from_acc<T>(log ? a - dev_exp(b) * s : b * (a - s));
  }, g + off, y + off);
}

template <class T>
__global__ void softmax_backward_cols_kernel(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner,
                                             bool log) {
  using A = acc_t<T>;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = c / inner * n * inner + c % inner;
    A s = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t k = base + j * inner;
      s += log ? to_acc(g[k]) : to_acc(g[k]) * to_acc(y[k]);
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t k = base + j * inner;
      const A a = to_acc(g[k]), b = to_acc(y[k]);
      gx[k] = from_acc<T>(log ? a - dev_exp(b) * s : b * (a - s));
    }
  }
}

/// Cross entropy and logsumexp of each row (tpr threads per row); a target neither
/// `ignore` nor in [0, n) sets *bad.
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void cross_entropy_kernel(const T* x, const int64_t* target, T* loss,
                                                                       acc_t<T>* lse, int64_t rows, int64_t n, int tpr,
                                                                       int64_t ignore, int* bad) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxRowThreads / 32];
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const int t = int(threadIdx.x) % tpr;
  const int64_t len = row < rows ? n : 0, off = (row < rows ? row : 0) * n;
  Online<A> o;
  zip_row<void>(len, t, tpr, nullptr, [&](int64_t, T v) { o.add(to_acc(v)); }, x + off);
  o.merge(tpr, smem);
  if (row >= rows || t != 0) return;
  const int64_t tg = target[row];
  const A l = o.m + dev_log(o.s);
  lse[row] = l;
  if (tg == ignore) loss[row] = from_acc<T>(A(0));
  else if (tg < 0 || tg >= n) *bad = 1;
  else loss[row] = from_acc<T>(l - to_acc(x[off + tg]));
}

/// gx = g[row] * (exp(x - lse[row]) - onehot(target)) per row (0 for ignored rows): one
/// read of x with the forward's logsumexp. Rows with an out-of-range target set *bad and
/// are not written.
template <class T>
__global__ __launch_bounds__(kMaxRowThreads) void cross_entropy_backward_kernel(const acc_t<T>* g, const T* x,
                                                                                const int64_t* target,
                                                                                const acc_t<T>* lse, T* gx,
                                                                                int64_t rows, int64_t n, int tpr,
                                                                                int64_t ignore, int* bad) {
  using A = acc_t<T>;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  if (row >= rows) return;
  const int t = int(threadIdx.x) % tpr;
  const int64_t off = row * n, tg = target[row];
  if (tg != ignore && (tg < 0 || tg >= n)) {
    if (t == 0) *bad = 1;
    return;
  }
  const A gi = tg == ignore ? A(0) : g[row], l = lse[row];
  zip_row(n, t, tpr, gx + off, [&](int64_t i, T v) {
    const A p = dev_exp(to_acc(v) - l) * gi;
    return from_acc<T>(i == tg ? p - gi : p);
  }, x + off);
}

/// Launches softmax_reg_kernel when rows of n fill whole packs and fit in registers.
template <class T>
bool launch_softmax_reg(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t s) {
  RegRowConfig c;
  if (!reg_row_config<T>(n, kMaxRegFloats, rows, {x, y}, c)) return false;
  auto go = [&](auto k) {
    softmax_reg_kernel<T, decltype(k)::value><<<c.blocks, c.threads, 0, s>>>(x, y, rows, n, c.tpr, log);
  };
  switch (c.k) {
    case 1: go(std::integral_constant<int, 1>{}); break;
    case 2: go(std::integral_constant<int, 2>{}); break;
    case 4: go(std::integral_constant<int, 4>{}); break;
    default:
      if constexpr (kPackOf<T> <= 4) go(std::integral_constant<int, 8>{});
  }
  return true;
}

/// A (1 x int32) device flag set to 0 on stream s, and its host read after the kernels.
struct DeviceFlag {
  Tensor t;
  cudaStream_t s;
  DeviceFlag(Device dev, cudaStream_t stream) : s(stream) {
    int64_t one = 1;
    t = empty_tensor(IntArrayRef(&one, 1), DType::Int32, dev);
    TP_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, 4, s));
  }
  int* ptr() const { return t.device_data<int>(); }
  bool clear() const {
    if (graphs::skip_host_checks(s)) return true;  // Note [Checks under capture]
    int v = 0;
    TP_CUDA_CHECK(cudaMemcpyAsync(&v, t.data_ptr(), 4, cudaMemcpyDeviceToHost, s));
    TP_CUDA_CHECK(cudaStreamSynchronize(s));
    return v == 0;
  }
};

}  // namespace

void softmax_forward(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (x.numel() == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* xp = x.device_data<T>();
    T* yp = y.device_data<T>();
    if (inner > 1) {
      softmax_cols_kernel<T><<<loop_blocks(outer * inner), kLoopThreads, 0, s>>>(xp, yp, outer, n, inner, log);
    } else if (!launch_softmax_packed(xp, yp, outer, n, log, s) &&
               !launch_softmax_warp(xp, yp, outer, n, log, x.device().index, s) &&
               !launch_softmax_pipe(xp, yp, outer, n, log, x.device().index, s) &&
               !launch_softmax_reg(xp, yp, outer, n, log, s)) {
      const StreamRowConfig c = stream_row_config(outer, n);
      softmax_stream_kernel<T><<<c.blocks, c.threads, 0, s>>>(xp, yp, outer, n, c.tpr, log);
    }
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void softmax_backward(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner,
                      bool log) {
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device().index);
  cudaStream_t s = current_stream(y.device().index).handle;
  visit_floating_device(y.dtype(), [&](auto v) {
    using T = decltype(v);
    const T *gp = g.device_data<T>(), *yp = y.device_data<T>();
    T* gxp = gx.device_data<T>();
    if (inner > 1) {
      softmax_backward_cols_kernel<T><<<loop_blocks(outer * inner), kLoopThreads, 0, s>>>(gp, yp, gxp, outer, n,
                                                                                          inner, log);
    } else {
      const StreamRowConfig c = stream_row_config(outer, n);
      softmax_backward_stream_kernel<T><<<c.blocks, c.threads, 0, s>>>(gp, yp, gxp, outer, n, c.tpr, log);
    }
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

bool cross_entropy_forward(const Tensor& x, const Tensor& t, int64_t ignore_index, const Tensor& loss,
                           const Tensor& lse) {
  const int64_t rows = x.size(0), n = x.size(1);
  if (rows == 0) return true;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  DeviceFlag bad(x.device(), s);
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const StreamRowConfig c = stream_row_config(rows, n);
    cross_entropy_kernel<T><<<c.blocks, c.threads, 0, s>>>(x.device_data<T>(), t.device_data<int64_t>(),
                                                            loss.device_data<T>(), lse.device_data<acc_t<T>>(),
                                                            rows, n, c.tpr, ignore_index, bad.ptr());
  });
  TP_CUDA_CHECK(cudaGetLastError());
  return bad.clear();
}

bool cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& t, int64_t ignore_index,
                            const Tensor& lse, const Tensor& gx) {
  const int64_t rows = x.size(0), n = x.size(1);
  if (rows == 0) return true;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  DeviceFlag bad(x.device(), s);
  visit_floating_device(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const StreamRowConfig c = stream_row_config(rows, n);
    cross_entropy_backward_kernel<T><<<c.blocks, c.threads, 0, s>>>(
        g.device_data<acc_t<T>>(), x.device_data<T>(), t.device_data<int64_t>(), lse.device_data<acc_t<T>>(),
        gx.device_data<T>(), rows, n, c.tpr, ignore_index, bad.ptr());
  });
  TP_CUDA_CHECK(cudaGetLastError());
  return bad.clear();
}

}  // namespace tp::cuda
