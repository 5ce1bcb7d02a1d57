// CUDA reduction kernels: rows (the reduced elements contiguous) and columns (a [B, R, K]
// block reduced over R, coalesced across K), each split over several blocks when there
// are few outputs, with a second pass over the partial results (no atomics: the result
// does not depend on timing). Block reductions use warp shuffles and shared memory.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/reduce.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

template <class T> constexpr bool kFp = std::is_floating_point_v<T>;

// Reduction ops: acc_t accumulates, combine() folds in one input element, merge() two
// accumulators. Float sums accumulate in their own type (as PyTorch's CUDA sums), prod
// of floats in double (as our CPU kernel), integer sums and products in int64.
template <class T> struct SumOp {
  using acc_t = std::conditional_t<kFp<T>, T, int64_t>;
  __device__ static acc_t identity() { return acc_t(0); }
  __device__ static acc_t combine(acc_t a, T x) { return a + acc_t(x); }
  __device__ static acc_t merge(acc_t a, acc_t b) { return a + b; }
};
template <class T> struct ProdOp {
  using acc_t = std::conditional_t<kFp<T>, double, int64_t>;
  __device__ static acc_t identity() { return acc_t(1); }
  __device__ static acc_t combine(acc_t a, T x) { return a * acc_t(x); }
  __device__ static acc_t merge(acc_t a, acc_t b) { return a * b; }
};
template <class T> struct MaxOp {
  using acc_t = T;
  __device__ static T identity() {
    if constexpr (std::is_same_v<T, bool>) return false;
    else if constexpr (kFp<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  __device__ static T combine(T a, T x) {
    if constexpr (kFp<T>) return (x != x || x > a) ? x : a;  // a NaN sticks
    else return x > a ? x : a;
  }
  __device__ static T merge(T a, T b) {
    if constexpr (kFp<T>) return a != a ? a : combine(a, b);
    else return combine(a, b);
  }
};
template <class T> struct MinOp {
  using acc_t = T;
  __device__ static T identity() {
    if constexpr (std::is_same_v<T, bool>) return true;
    else if constexpr (kFp<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  __device__ static T combine(T a, T x) {
    if constexpr (kFp<T>) return (x != x || x < a) ? x : a;
    else return x < a ? x : a;
  }
  __device__ static T merge(T a, T b) {
    if constexpr (kFp<T>) return a != a ? a : combine(a, b);
    else return combine(a, b);
  }
};
template <class T> struct AllOp {
  using acc_t = bool;
  __device__ static bool identity() { return true; }
  __device__ static bool combine(bool a, T x) { return a && x != T(0); }
  __device__ static bool merge(bool a, bool b) { return a && b; }
};
template <class T> struct AnyOp {
  using acc_t = bool;
  __device__ static bool identity() { return false; }
  __device__ static bool combine(bool a, T x) { return a || x != T(0); }
  __device__ static bool merge(bool a, bool b) { return a || b; }
};

template <class T>
__device__ __forceinline__ T shfl_down(T v, int offset) {
  if constexpr (sizeof(T) < 4) return T(__shfl_down_sync(0xffffffffu, int(v), offset));
  else return __shfl_down_sync(0xffffffffu, v, offset);
}

/// Merges the block's accumulators; the result is valid in thread 0. blockDim.x is a
/// multiple of 32 (at most 1024).
template <class Op>
__device__ typename Op::acc_t block_merge(typename Op::acc_t v) {
  using Acc = typename Op::acc_t;
  __shared__ Acc warp_acc[32];
  for (int o = 16; o > 0; o >>= 1) v = Op::merge(v, shfl_down(v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_acc[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? warp_acc[lane] : Op::identity();
    for (int o = 16; o > 0; o >>= 1) v = Op::merge(v, shfl_down(v, o));
  }
  return v;
}

/// Block `bid` reduces split (bid % splits) of row (bid / splits): elements
/// [s * chunk, min(R, (s + 1) * chunk)) of x[row * R ...]. chunk is a multiple of 16.
template <class Op, class T>
__global__ void reduce_rows_kernel(const T* x, typename Op::acc_t* out, int64_t R,
                                   int64_t chunk, int64_t splits) {
  using Acc = typename Op::acc_t;
  constexpr int V = 16 / sizeof(T) < 1 ? 1 : 16 / sizeof(T);
  int64_t bid = blockIdx.x;
  int64_t row = bid / splits, s = bid - row * splits;
  int64_t begin = s * chunk, end = begin + chunk < R ? begin + chunk : R;
  const T* p = x + row * R;
  Acc acc = Op::identity();
  int64_t i = begin;
  if (reinterpret_cast<uintptr_t>(p + begin) % 16 == 0) {
    const Pack<T, V>* pv = reinterpret_cast<const Pack<T, V>*>(p + begin);
    int64_t nvec = (end - begin) / V, bs = blockDim.x, j = threadIdx.x;
    for (; j + 3 * bs < nvec; j += 4 * bs) {  // four loads in flight per thread
      Pack<T, V> q0 = pv[j], q1 = pv[j + bs], q2 = pv[j + 2 * bs], q3 = pv[j + 3 * bs];
      Acc a0 = Op::identity(), a1 = Op::identity();
#pragma unroll
      for (int k = 0; k < V; ++k) {
        a0 = Op::combine(Op::combine(a0, q0.v[k]), q1.v[k]);
        a1 = Op::combine(Op::combine(a1, q2.v[k]), q3.v[k]);
      }
      acc = Op::merge(acc, Op::merge(a0, a1));
    }
    for (; j < nvec; j += bs) {
      Pack<T, V> q = pv[j];
#pragma unroll
      for (int k = 0; k < V; ++k) acc = Op::combine(acc, q.v[k]);
    }
    i = begin + nvec * V;
  }
  for (int64_t j = i + threadIdx.x; j < end; j += blockDim.x) acc = Op::combine(acc, p[j]);
  acc = block_merge<Op>(acc);
  if (threadIdx.x == 0) out[bid] = acc;
}

constexpr int kColsX = 32, kColsY = 8;

/// Block (kb, s, b) reduces columns [kb * 32, +32) of x[b] over rows
/// [s * chunk, min(R, (s + 1) * chunk)); out is [B, splits, K].
template <class Op, class T>
__global__ void reduce_cols_kernel(const T* x, typename Op::acc_t* out, int64_t R, int64_t K,
                                   int64_t chunk, int64_t splits, int64_t kblocks) {
  using Acc = typename Op::acc_t;
  __shared__ Acc part[kColsY][kColsX];
  int64_t bid = blockIdx.x;
  int64_t kb = bid % kblocks, rest = bid / kblocks;
  int64_t s = rest % splits, b = rest / splits;
  int64_t k = kb * kColsX + threadIdx.x;
  int64_t begin = s * chunk, end = begin + chunk < R ? begin + chunk : R;
  Acc acc = Op::identity();
  if (k < K) {
    const T* p = x + b * R * K + k;
    for (int64_t r = begin + threadIdx.y; r < end; r += kColsY) acc = Op::combine(acc, p[r * K]);
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && k < K) {
    for (int y = 1; y < kColsY; ++y) acc = Op::merge(acc, part[y][threadIdx.x]);
    out[(b * splits + s) * K + k] = acc;
  }
}

int sm_count() {
  int dev = current_device();
  return device_properties(dev).multi_processor_count;
}

template <template <class> class OpT, class T>
void reduce_rows(const T* x, typename OpT<T>::acc_t* out, int64_t B, int64_t R, Device dev,
                 cudaStream_t stream) {
  using Op = OpT<T>;
  using Acc = typename Op::acc_t;
  int64_t want_blocks = int64_t(sm_count()) * 8;
  int64_t splits = 1;
  if (R >= 16384 && B < want_blocks) splits = std::min<int64_t>((R + 8191) / 8192, want_blocks / B);
  if (splits < 1) splits = 1;
  int64_t chunk = ((R + splits - 1) / splits + 63) / 64 * 64;
  splits = (R + chunk - 1) / chunk;
  int threads = R >= 4096 ? 256 : R >= 512 ? 128 : 32;
  if (splits == 1) {
    reduce_rows_kernel<Op, T><<<unsigned(B), threads, 0, stream>>>(x, out, R, chunk, 1);
    TP_CUDA_CHECK(cudaGetLastError());
    return;
  }
  Tensor partial = scratch(B * splits, dtype_of<Acc>::value, dev);
  Acc* pp = partial.device_data<Acc>();
  reduce_rows_kernel<Op, T><<<unsigned(B * splits), threads, 0, stream>>>(x, pp, R, chunk, splits);
  TP_CUDA_CHECK(cudaGetLastError());
  reduce_rows<OpT, Acc>(pp, out, B, splits, dev, stream);
}

template <template <class> class OpT, class T>
void reduce_cols(const T* x, typename OpT<T>::acc_t* out, int64_t B, int64_t R, int64_t K,
                 Device dev, cudaStream_t stream) {
  using Op = OpT<T>;
  using Acc = typename Op::acc_t;
  int64_t kblocks = (K + kColsX - 1) / kColsX;
  int64_t want_blocks = int64_t(sm_count()) * 8;
  int64_t splits = 1;
  if (R >= 256 && B * kblocks < want_blocks)
    splits = std::min<int64_t>((R + 127) / 128, want_blocks / (B * kblocks));
  if (splits < 1) splits = 1;
  int64_t chunk = (R + splits - 1) / splits;
  splits = (R + chunk - 1) / chunk;
  dim3 block(kColsX, kColsY);
  if (splits == 1) {
    reduce_cols_kernel<Op, T><<<unsigned(B * kblocks), block, 0, stream>>>(x, out, R, K, chunk, 1, kblocks);
    TP_CUDA_CHECK(cudaGetLastError());
    return;
  }
  Tensor partial = scratch(B * splits * K, dtype_of<Acc>::value, dev);
  Acc* pp = partial.device_data<Acc>();
  reduce_cols_kernel<Op, T><<<unsigned(B * splits * kblocks), block, 0, stream>>>(
      x, pp, R, K, chunk, splits, kblocks);
  TP_CUDA_CHECK(cudaGetLastError());
  reduce_cols<OpT, Acc>(pp, out, B, splits, K, dev, stream);
}

template <template <class> class OpT>
void reduce_with(const Tensor& x, int64_t B, int64_t R, int64_t K, const Tensor& res,
                 cudaStream_t stream) {
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      TP_FAIL("reduce: half types reach the CUDA kernel only through float32");
    } else {
      using Acc = typename OpT<T>::acc_t;
      TP_CHECK(res.dtype() == dtype_of<Acc>::value, "reduce: result dtype mismatch");
      if (K == 1) reduce_rows<OpT, T>(x.device_data<T>(), res.device_data<Acc>(), B, R, x.device(), stream);
      else reduce_cols<OpT, T>(x.device_data<T>(), res.device_data<Acc>(), B, R, K, x.device(), stream);
    }
  });
}

// ---------------------------------------------------------------- arg reductions
/// Whether candidate (bv, bi) beats (av, ai): a NaN beats numbers, then the larger
/// (smaller) value, then the lower index; an index < 0 marks "no candidate".
template <bool IsMax, class T>
__device__ __forceinline__ bool beats(T bv, int64_t bi, T av, int64_t ai) {
  if (bi < 0) return false;
  if (ai < 0) return true;
  if constexpr (kFp<T>) {
    bool an = av != av, bn = bv != bv;
    if (an || bn) return bn && (!an || bi < ai);
  }
  if (IsMax ? bv > av : bv < av) return true;
  return bv == av && bi < ai;
}

/// Like reduce_rows_kernel for (value, index) pairs; idx_in (second pass) holds the
/// candidates' indices, else an element's index is its position in the row.
template <bool IsMax, class T>
__global__ void arg_rows_kernel(const T* x, const int64_t* idx_in, T* vout, int64_t* iout,
                                int64_t R, int64_t chunk, int64_t splits) {
  __shared__ T sv[32];
  __shared__ int64_t si[32];
  int64_t bid = blockIdx.x;
  int64_t row = bid / splits, s = bid - row * splits;
  int64_t begin = s * chunk, end = begin + chunk < R ? begin + chunk : R;
  const T* p = x + row * R;
  T best{};
  int64_t bi = -1;
  int64_t tail = begin;
  if (!idx_in && reinterpret_cast<uintptr_t>(p + begin) % 16 == 0) {  // 16-byte loads
    constexpr int V = 16 / sizeof(T);
    const Pack<T, V>* pv = reinterpret_cast<const Pack<T, V>*>(p + begin);
    int64_t nvec = (end - begin) / V, bs = blockDim.x, j = threadIdx.x;
    // A thread's candidates come in increasing index order, so a later one wins only
    // when strictly better (or the first NaN); ties keep the first.
    auto take = [&](const Pack<T, V>& q, int64_t at) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        T v = q.v[k];
        bool win = bi < 0 || (IsMax ? v > best : v < best);
        if constexpr (kFp<T>) win = (win || v != v) && best == best;
        if (bi < 0 || win) best = v, bi = at + k;
      }
    };
    for (; j + 3 * bs < nvec; j += 4 * bs) {  // four loads in flight per thread
      Pack<T, V> q0 = pv[j], q1 = pv[j + bs], q2 = pv[j + 2 * bs], q3 = pv[j + 3 * bs];
      take(q0, begin + j * V);
      take(q1, begin + (j + bs) * V);
      take(q2, begin + (j + 2 * bs) * V);
      take(q3, begin + (j + 3 * bs) * V);
    }
    for (; j < nvec; j += bs) take(pv[j], begin + j * V);
    tail = begin + nvec * V;
  }
  for (int64_t j = tail + threadIdx.x; j < end; j += blockDim.x) {
    T v = p[j];
    int64_t id = idx_in ? idx_in[row * R + j] : j;
    if (beats<IsMax>(v, id, best, bi)) best = v, bi = id;
  }
  for (int o = 16; o > 0; o >>= 1) {
    T ov = shfl_down(best, o);
    int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
    if (beats<IsMax>(ov, oi, best, bi)) best = ov, bi = oi;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sv[warp] = best, si[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    bool has = lane < int(blockDim.x >> 5);
    best = has ? sv[lane] : T{};
    bi = has ? si[lane] : -1;
    for (int o = 16; o > 0; o >>= 1) {
      T ov = shfl_down(best, o);
      int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
      if (beats<IsMax>(ov, oi, best, bi)) best = ov, bi = oi;
    }
    if (lane == 0) vout[bid] = best, iout[bid] = bi;
  }
}

template <bool IsMax, class T>
void arg_rows(const T* x, const int64_t* idx_in, T* vout, int64_t* iout, int64_t rows, int64_t R,
              Device dev, cudaStream_t stream) {
  int64_t want_blocks = int64_t(sm_count()) * 8;
  int64_t splits = 1;
  if (R >= 16384 && rows < want_blocks) splits = std::min<int64_t>((R + 8191) / 8192, want_blocks / rows);
  if (splits < 1) splits = 1;
  int64_t chunk = ((R + splits - 1) / splits + 63) / 64 * 64;
  splits = (R + chunk - 1) / chunk;
  int threads = R >= 4096 ? 256 : R >= 512 ? 128 : 32;
  if (splits == 1) {
    arg_rows_kernel<IsMax, T><<<unsigned(rows), threads, 0, stream>>>(x, idx_in, vout, iout, R, chunk, 1);
    TP_CUDA_CHECK(cudaGetLastError());
    return;
  }
  Tensor pv = scratch(rows * splits, dtype_of<T>::value, dev);
  Tensor pi = scratch(rows * splits, DType::Int64, dev);
  arg_rows_kernel<IsMax, T><<<unsigned(rows * splits), threads, 0, stream>>>(
      x, idx_in, pv.device_data<T>(), pi.device_data<int64_t>(), R, chunk, splits);
  TP_CUDA_CHECK(cudaGetLastError());
  arg_rows<IsMax, T>(pv.device_data<T>(), pi.device_data<int64_t>(), vout, iout, rows, splits, dev, stream);
}

}  // namespace

void reduce(ReduceKind kind, const Tensor& x, int64_t B, int64_t R, int64_t K, const Tensor& res) {
  if (res.numel() == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t stream = current_stream(x.device().index).handle;
  switch (kind) {
    case ReduceKind::Sum: return reduce_with<SumOp>(x, B, R, K, res, stream);
    case ReduceKind::Prod: return reduce_with<ProdOp>(x, B, R, K, res, stream);
    case ReduceKind::Max: return reduce_with<MaxOp>(x, B, R, K, res, stream);
    case ReduceKind::Min: return reduce_with<MinOp>(x, B, R, K, res, stream);
    case ReduceKind::All: return reduce_with<AllOp>(x, B, R, K, res, stream);
    case ReduceKind::Any: return reduce_with<AnyOp>(x, B, R, K, res, stream);
  }
}

void arg_reduce(bool is_max, const Tensor& x, int64_t rows, int64_t len, const Tensor& values,
                const Tensor& indices) {
  if (rows == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t stream = current_stream(x.device().index).handle;
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      TP_FAIL("arg_reduce: half types reach the CUDA kernel only through float32");
    } else {
      T* vo = values.device_data<T>();
      int64_t* io = indices.device_data<int64_t>();
      if (is_max) arg_rows<true, T>(x.device_data<T>(), nullptr, vo, io, rows, len, x.device(), stream);
      else arg_rows<false, T>(x.device_data<T>(), nullptr, vo, io, rows, len, x.device(), stream);
    }
  });
}

}  // namespace tp::cuda
