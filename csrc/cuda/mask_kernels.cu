// Data-dependent selections on the GPU: nonzero, masked_select and masked_scatter. Each
// counts the selected elements per tile, scans the counts (CUB), reads the total back
// (the output size, or masked_scatter's check) and then gives each selected element its
// rank in row-major order with a block scan.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/index.h"
#include "cuda/launch.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

constexpr int kThreads = kLoopThreads;
constexpr int kItems = 8;                         // consecutive elements per thread
constexpr int64_t kTile = int64_t(kThreads) * kItems;  // elements per block and tile

/// x != 0 (NaN counts as nonzero; half types compare as float).
template <class T>
__device__ __forceinline__ bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v) != 0.0f;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v) != 0.0f;
  else if constexpr (std::is_same_v<T, bool>) return v;
  else return v != T(0);
}

/// counts[t] = the nonzero elements of tile t of x (n elements).
template <class T>
__global__ void tile_count_kernel(const T* x, int64_t n, int64_t tiles, int64_t* counts) {
  using Reduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t base = t * kTile;
    int c = 0;
    for (int k = 0; k < kItems; ++k) {  // striped: neighbouring threads read neighbouring elements
      int64_t i = base + int64_t(k) * kThreads + threadIdx.x;
      c += i < n && is_nonzero(x[i]);
    }
    int total = Reduce(tmp).Sum(c);
    if (threadIdx.x == 0) counts[t] = total;
    __syncthreads();
  }
}

/// Calls emit(i, rank) for each nonzero x[i], rank = its position among them in row-major
/// order; ends[t] - counts[t] is the rank of tile t's first one.
template <class T, class Emit>
__global__ void tile_emit_kernel(const T* x, int64_t n, int64_t tiles, const int64_t* counts,
                                 const int64_t* ends, Emit emit) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t first = t * kTile + int64_t(threadIdx.x) * kItems;
    bool hit[kItems];
    int c = 0;
    for (int k = 0; k < kItems; ++k) {
      hit[k] = first + k < n && is_nonzero(x[first + k]);
      c += hit[k];
    }
    int before = 0;
    Scan(tmp).ExclusiveSum(c, before);
    int64_t rank = ends[t] - counts[t] + before;
    for (int k = 0; k < kItems; ++k)
      if (hit[k]) emit(first + k, rank++);
    __syncthreads();
  }
}

struct NonzeroEmit {
  int64_t* out;
  int ndim;
  int64_t sizes[kMaxIndexDims];
  __device__ void operator()(int64_t i, int64_t rank) const {
    int64_t* row = out + rank * ndim;
    for (int k = ndim - 1; k >= 0; --k) {
      row[k] = i % sizes[k];
      i /= sizes[k];
    }
  }
};

template <class W>
struct SelectEmit {
  W* out;
  const W* x;
  __device__ void operator()(int64_t i, int64_t rank) const { out[rank] = x[i]; }
};

template <class W>
struct ScatterEmit {
  W* dst;
  const W* src;
  __device__ void operator()(int64_t i, int64_t rank) const { dst[i] = src[rank]; }
};

/// Per-tile counts of x's nonzero elements and their inclusive scan.
struct TileScan {
  Tensor counts, ends;
  int64_t tiles = 0, total = 0;
  unsigned blocks = 1;
};

/// Counts x's (n > 0 elements) nonzero elements per tile, scans, reads the total back.
template <class T>
TileScan scan_tiles(const T* x, int64_t n, Device dev, cudaStream_t s) {
  TileScan r;
  r.tiles = (n + kTile - 1) / kTile;
  r.blocks = unsigned(r.tiles < 65535 * 32 ? r.tiles : 65535 * 32);
  r.counts = scratch(r.tiles, DType::Int64, dev);
  r.ends = scratch(r.tiles, DType::Int64, dev);
  int64_t* counts = r.counts.device_data<int64_t>();
  int64_t* ends = r.ends.device_data<int64_t>();
  tile_count_kernel<T><<<r.blocks, kThreads, 0, s>>>(x, n, r.tiles, counts);
  TP_CUDA_CHECK(cudaGetLastError());
  size_t bytes = 0;
  TP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, counts, ends, r.tiles, s));
  Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
  TP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data_ptr(), bytes, counts, ends, r.tiles, s));
  // masked_scatter reads the total only to check its source (nonzero and masked_select,
  // whose output size it is, raised before a capture gets here)
  if (graphs::skip_host_checks(s)) {
    r.total = -1;  // unknown
    return r;
  }
  TP_CUDA_CHECK(cudaMemcpyAsync(&r.total, ends + (r.tiles - 1), 8, cudaMemcpyDeviceToHost, s));
  TP_CUDA_CHECK(cudaStreamSynchronize(s));
  return r;
}

template <class T, class Emit>
void emit_tiles(const T* x, int64_t n, const TileScan& r, cudaStream_t s, const Emit& emit) {
  tile_emit_kernel<T, Emit><<<r.blocks, kThreads, 0, s>>>(
      x, n, r.tiles, r.counts.device_data<int64_t>(), r.ends.device_data<int64_t>(), emit);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

Tensor nonzero(const Tensor& x) {
  int ndim = int(x.dim());
  int64_t n = x.numel();
  TP_CHECK(ndim <= kMaxIndexDims, "nonzero: at most ", kMaxIndexDims, " dimensions on CUDA, got ", ndim);
  DeviceGuard guard(x.device().index);
  Stream s = current_stream(x.device().index);
  graphs::check_not_capturing(s.handle, "nonzero (its output size depends on the data)");
  Tensor out;
  visit_device_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* xp = x.device_data<T>();
    TileScan r;
    if (n) r = scan_tiles(xp, n, x.device(), s.handle);
    int64_t sz[2] = {r.total, ndim};
    out = empty_tensor(IntArrayRef(sz, 2), DType::Int64, x.device());
    if (r.total == 0 || ndim == 0) return;
    NonzeroEmit emit{out.device_data<int64_t>(), ndim, {}};
    for (int k = 0; k < ndim; ++k) emit.sizes[k] = x.size(k);
    emit_tiles(xp, n, r, s.handle, emit);
  });
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  int64_t n = mask.numel();
  DeviceGuard guard(x.device().index);
  Stream s = current_stream(x.device().index);
  graphs::check_not_capturing(s.handle, "masked_select (its output size depends on the data)");
  const bool* mp = mask.device_data<bool>();
  TileScan r;
  if (n) r = scan_tiles(mp, n, x.device(), s.handle);
  Tensor out = empty_tensor(IntArrayRef(&r.total, 1), x.dtype(), x.device());
  if (r.total == 0) return out;
  by_size(x.itemsize(), [&](auto w) {
    using W = decltype(w);
    SelectEmit<W> emit{reinterpret_cast<W*>(out.data_ptr()), reinterpret_cast<const W*>(x.data_ptr())};
    emit_tiles(mp, n, r, s.handle, emit);
  });
  return out;
}

bool masked_scatter(const Tensor& dst, const Tensor& mask, const Tensor& src) {
  int64_t n = mask.numel();
  if (n == 0) return true;
  DeviceGuard guard(dst.device().index);
  Stream s = current_stream(dst.device().index);
  const bool* mp = mask.device_data<bool>();
  TileScan r = scan_tiles(mp, n, dst.device(), s.handle);
  if (r.total > src.numel()) return false;  // (-1 under capture: not checked)
  if (r.total == 0) return true;
  by_size(dst.itemsize(), [&](auto w) {
    using W = decltype(w);
    ScatterEmit<W> emit{reinterpret_cast<W*>(dst.data_ptr()), reinterpret_cast<const W*>(src.data_ptr())};
    emit_tiles(mp, n, r, s.handle, emit);
  });
  return true;
}

}  // namespace tp::cuda
