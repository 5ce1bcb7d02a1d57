// Reads by index on the GPU: one thread per output element, the element moved as an
// unsigned integer of its size, so every dtype shares a kernel. Index bounds are checked
// on the device; a flag read back after the launch lets the caller raise its error.
// searchsorted: one thread per value, a binary search in its row.
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

struct GatherGeom {
  int ndim;
  int dim;
  int64_t dim_size;
  bool negative_ok;
  int64_t sizes[kMaxIndexDims];
  int64_t src_strides[kMaxIndexDims];
  int64_t index_strides[kMaxIndexDims];
};

template <class W>
__global__ void index_gather_kernel(W* out, const W* src, const int64_t* index, int64_t n,
                                    GatherGeom g, int* bad) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = e, off = 0, ioff = 0;
    for (int k = g.ndim - 1; k >= 0; --k) {
      int64_t c = rem % g.sizes[k];
      rem /= g.sizes[k];
      if (k != g.dim) off += c * g.src_strides[k];
      ioff += c * g.index_strides[k];
    }
    int64_t j = index[ioff];
    if (j < 0 && g.negative_ok) j += g.dim_size;
    if (j < 0 || j >= g.dim_size) {
      *bad = 1;
      j = 0;
    }
    out[e] = src[off + j * g.src_strides[g.dim]];
  }
}

template <class W>
__global__ void grid_gather_kernel(W* out, const char* src, const int64_t* offsets,
                                   const int64_t* starts, const int64_t* sizes, int ndim,
                                   int64_t n) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = e, off = 0;
    for (int k = ndim - 1; k >= 0; --k) {
      int64_t c = rem % sizes[k];
      rem /= sizes[k];
      off += offsets[starts[k] + c];
    }
    out[e] = *reinterpret_cast<const W*>(src + off);
  }
}

template <class W>
__global__ void zero_triangle_kernel(char* base, int64_t n, int ndim, GatherGeom g,
                                     int64_t diagonal, bool lower) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = e, off = 0, row = 0, col = 0;
    for (int k = ndim - 1; k >= 0; --k) {
      int64_t c = rem % g.sizes[k];
      rem /= g.sizes[k];
      off += c * g.src_strides[k];
      if (k == ndim - 1) col = c;
      if (k == ndim - 2) row = c;
    }
    if (lower ? col - row > diagonal : col - row < diagonal)
      reinterpret_cast<W*>(base)[off] = W(0);
  }
}

/// v as a type with exact comparisons on the device (half types as float).
template <class T>
__device__ __forceinline__ auto comparable(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}

/// The CPU's search_rows (indexing_writes.cpp), one thread per value: the first position
/// whose value is > x (right) or >= x (left), with the same comparisons for NaN.
template <class T, class O>
__global__ void searchsorted_kernel(const T* bd, const int64_t* sorter, int64_t len, const T* v,
                                    int64_t n, int64_t per_row, bool right, O* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = per_row ? (i / per_row) * len : 0;
    auto x = comparable(v[i]);
    int64_t lo = 0, hi = len;
    while (lo < hi) {
      int64_t mid = lo + ((hi - lo) >> 1);
      auto b = comparable(sorter ? bd[base + sorter[base + mid]] : bd[base + mid]);
      bool before = right ? !(b > x) : !(b >= x);
      if (before) lo = mid + 1;
      else hi = mid;
    }
    out[i] = O(lo);
  }
}

Tensor to_device_int64(const std::vector<int64_t>& v, Device dev, cudaStream_t s) {
  int64_t n = int64_t(v.size());
  Tensor t = empty_tensor(IntArrayRef(&n, 1), DType::Int64, dev);
  graphs::upload(t.data_ptr(), v.data(), size_t(n) * 8, s);
  return t;
}

}  // namespace

bool index_gather(const Tensor& out, const Tensor& src, const Tensor& index, int ndim,
                  const int64_t* sizes, const int64_t* src_strides, const int64_t* index_strides,
                  int dim, int64_t dim_size, bool negative_ok) {
  int64_t n = out.numel();
  if (n == 0) return true;
  TP_CHECK(ndim <= kMaxIndexDims, "index kernels support up to ", kMaxIndexDims, " dimensions");
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  GatherGeom g{};
  g.ndim = ndim;
  g.dim = dim;
  g.dim_size = dim_size;
  g.negative_ok = negative_ok;
  for (int k = 0; k < ndim; ++k) {
    g.sizes[k] = sizes[k];
    g.src_strides[k] = src_strides[k];
    g.index_strides[k] = index_strides[k];
  }
  int64_t one = 1;
  Tensor flag = empty_tensor(IntArrayRef(&one, 1), DType::Int32, out.device());
  TP_CUDA_CHECK(cudaMemsetAsync(flag.data_ptr(), 0, 4, s.handle));
  by_size(out.itemsize(), [&](auto w) {
    using W = decltype(w);
    index_gather_kernel<W><<<loop_blocks(n), kThreads, 0, s.handle>>>(
        out.device_data<W>(), src.device_data<W>(), index.device_data<int64_t>(), n, g,
        flag.device_data<int>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
  if (graphs::skip_host_checks(s.handle)) return true;  // Note [Checks under capture]
  int bad = 0;
  TP_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.data_ptr(), 4, cudaMemcpyDeviceToHost, s.handle));
  s.synchronize();
  return bad == 0;
}

void gather_grid(const Tensor& out, const Tensor& src,
                 const std::vector<std::vector<int64_t>>& offsets) {
  int64_t n = out.numel();
  if (n == 0) return;
  int ndim = int(offsets.size());
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  // One int64 buffer: the offsets of every dim, then each dim's start, then the sizes.
  std::vector<int64_t> flat;
  std::vector<int64_t> starts, sizes;
  for (const auto& o : offsets) {
    starts.push_back(int64_t(flat.size()));
    sizes.push_back(int64_t(o.size()));
    flat.insert(flat.end(), o.begin(), o.end());
  }
  int64_t off_n = int64_t(flat.size());
  flat.insert(flat.end(), starts.begin(), starts.end());
  flat.insert(flat.end(), sizes.begin(), sizes.end());
  Tensor buf = to_device_int64(flat, out.device(), s.handle);
  const int64_t* d = buf.device_data<int64_t>();
  by_size(out.itemsize(), [&](auto w) {
    using W = decltype(w);
    grid_gather_kernel<W><<<loop_blocks(n), kThreads, 0, s.handle>>>(
        out.device_data<W>(), src.data_ptr(), d, d + off_n, d + off_n + ndim, ndim, n);
  });
  TP_CUDA_CHECK(cudaGetLastError());
  // `flat` is pageable host memory: the copy above finished before cudaMemcpyAsync returned.
}

void searchsorted(const Tensor& bd, const Tensor& v, const int64_t* sorter, int64_t len,
                  int64_t per_row, bool right, const Tensor& out) {
  int64_t n = v.numel();
  if (n == 0) return;
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  visit_device_dtype(bd.dtype(), [&](auto t) {
    using T = decltype(t);
    if (out.dtype() == DType::Int32)
      searchsorted_kernel<T, int32_t><<<loop_blocks(n), kThreads, 0, s.handle>>>(
          bd.device_data<T>(), sorter, len, v.device_data<T>(), n, per_row, right,
          out.device_data<int32_t>());
    else
      searchsorted_kernel<T, int64_t><<<loop_blocks(n), kThreads, 0, s.handle>>>(
          bd.device_data<T>(), sorter, len, v.device_data<T>(), n, per_row, right,
          out.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void zero_triangle(const Tensor& t, int64_t diagonal, bool lower) {
  int64_t n = t.numel();
  if (n == 0) return;
  TP_CHECK(t.dim() <= kMaxIndexDims, "tril/triu support up to ", kMaxIndexDims, " dimensions");
  DeviceGuard guard(t.device().index);
  Stream s = current_stream(t.device().index);
  GatherGeom g{};
  int ndim = int(t.dim());
  for (int k = 0; k < ndim; ++k) {
    g.sizes[k] = t.size(k);
    g.src_strides[k] = t.stride(k);
  }
  by_size(t.itemsize(), [&](auto w) {
    using W = decltype(w);
    zero_triangle_kernel<W><<<loop_blocks(n), kThreads, 0, s.handle>>>(t.data_ptr(), n, ndim, g,
                                                                       diagonal, lower);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
