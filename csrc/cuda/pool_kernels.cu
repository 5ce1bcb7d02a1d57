// Pooling on the GPU (Note [Pooling windows]): the per-dim window tables built by nn_pool.cpp
// go to the device; one thread per output element (forward) or input element (avg backward).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/nn_spatial.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

/// The window tables on the device plus the layout, passed to the kernels by value.
struct Geo {
  int64_t in[3], out[3], step[3];
  int64_t in_numel, out_numel, channels;
  bool cl;
  const int64_t* begin[3];
  const int64_t* count[3];
  const double* pc[3];
  const int64_t* lo[3];  // backward: outputs [lo, hi) of dim k may hold input position i
  const int64_t* hi[3];
};

/// For element u of a tensor with `here` positions per plane: its position within the plane
/// and the offset (`base`) and element stride of the same plane in the other tensor of
/// `there` positions per plane.
__device__ __forceinline__ void locate(const Geo& g, int64_t u, int64_t here, int64_t there, int64_t& pos,
                                       int64_t& base, int64_t& stride) {
  if (g.cl) {
    const int64_t ch = u % g.channels, r = u / g.channels;
    pos = r % here;
    base = (r / here) * there * g.channels + ch;
    stride = g.channels;
  } else {
    pos = u % here;
    base = (u / here) * there;
    stride = 1;
  }
}

template <class T>
__device__ __forceinline__ T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

template <class T>
__global__ void max_pool_kernel(const T* x, T* y, int64_t* idx, int64_t n, Geo g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    int64_t o, base, st;
    locate(g, u, g.out_numel, g.in_numel, o, base, st);
    const int64_t c = o % g.out[2], b = o / g.out[2] % g.out[1], a = o / (g.out[1] * g.out[2]);
    const int64_t n0 = g.count[0][a], n1 = g.count[1][b], n2 = g.count[2][c];
    const int64_t first = (g.begin[0][a] * g.in[1] + g.begin[1][b]) * g.in[2] + g.begin[2][c];
    int64_t best = first;
    T bv = lowest_value<T>();
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < n1; ++j) {
        const int64_t r = first + (i * g.step[0] * g.in[1] + j * g.step[1]) * g.in[2];
        for (int64_t l = 0; l < n2; ++l) {
          const int64_t at = r + l * g.step[2];
          const T v = x[base + at * st];
          if (v > bv || v != v) {  // a NaN wins; a later NaN takes the index
            bv = v;
            best = at;
          }
        }
      }
    y[u] = bv;
    idx[u] = best;
  }
}

__device__ __forceinline__ double divisor_of(const Geo& g, int64_t a, int64_t b, int64_t c, bool has_div,
                                             int64_t divisor) {
  return has_div ? double(divisor) : g.pc[0][a] * g.pc[1][b] * g.pc[2][c];
}

/// v / div in T (integer division for the integer dtypes), as the CPU backward kernels.
template <class T>
__device__ __forceinline__ T divide(T v, double div) {
  return T(v / T(div));
}

template <class T>
__global__ void avg_pool_kernel(const T* x, T* y, int64_t n, Geo g, bool has_div, int64_t divisor) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    int64_t o, base, st;
    locate(g, u, g.out_numel, g.in_numel, o, base, st);
    const int64_t c = o % g.out[2], b = o / g.out[2] % g.out[1], a = o / (g.out[1] * g.out[2]);
    const int64_t n0 = g.count[0][a], n1 = g.count[1][b], n2 = g.count[2][c];
    const int64_t first = (g.begin[0][a] * g.in[1] + g.begin[1][b]) * g.in[2] + g.begin[2][c];
    Acc acc = 0;
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < n1; ++j) {
        const int64_t r = first + (i * g.step[0] * g.in[1] + j * g.step[1]) * g.in[2];
        for (int64_t l = 0; l < n2; ++l) acc += x[base + (r + l * g.step[2]) * st];
      }
    const double div = divisor_of(g, a, b, c, has_div, divisor);
    if constexpr (std::is_floating_point_v<T>) y[u] = T(acc / T(div));
    else y[u] = T(acc / int64_t(div));
  }
}

/// Whether window o of dim k holds input position i.
__device__ __forceinline__ bool holds(const Geo& g, int k, int64_t o, int64_t i) {
  const int64_t d = i - g.begin[k][o];
  return d >= 0 && d % g.step[k] == 0 && d / g.step[k] < g.count[k][o];
}

template <class T>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, int64_t n, Geo g, bool has_div, int64_t divisor) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    int64_t i, base, st;
    locate(g, u, g.in_numel, g.out_numel, i, base, st);
    const int64_t i2 = i % g.in[2], i1 = i / g.in[2] % g.in[1], i0 = i / (g.in[1] * g.in[2]);
    T acc = T(0);
    for (int64_t a = g.lo[0][i0]; a < g.hi[0][i0]; ++a) {
      if (!holds(g, 0, a, i0)) continue;
      for (int64_t b = g.lo[1][i1]; b < g.hi[1][i1]; ++b) {
        if (!holds(g, 1, b, i1)) continue;
        for (int64_t c = g.lo[2][i2]; c < g.hi[2][i2]; ++c) {
          if (!holds(g, 2, c, i2)) continue;
          const int64_t o = (a * g.out[1] + b) * g.out[2] + c;
          acc += divide(gy[base + o * st], divisor_of(g, a, b, c, has_div, divisor));
        }
      }
    }
    gx[u] = acc;
  }
}

template <class A>
__device__ __forceinline__ void atomic_add(A* p, A v) {
  if constexpr (std::is_same_v<A, int64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  else atomicAdd(p, v);
}

template <class A>
__global__ void max_pool_backward_kernel(const A* gy, const int64_t* idx, A* acc, int64_t n, Geo g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    int64_t o, base, st;
    locate(g, u, g.out_numel, g.in_numel, o, base, st);
    const int64_t j = idx[u];
    if (j >= 0 && j < g.in_numel) atomic_add(acc + base + j * st, gy[u]);
  }
}

/// Calls f(T{}) for the pooling compute dtypes (nn_pool.cpp widens the half types first).
template <class F>
void visit_pool(DType dt, F&& f) {
  switch (dt) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int64: return f(int64_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt8: return f(uint8_t{});
    default: TP_FAIL("pooling CUDA kernels: unsupported dtype ", dtype_name(dt));
  }
}

/// The window tables of `d` on the device (kept alive by the returned tensors) in `geo`.
struct DeviceTables {
  Tensor ints, doubles;
};

DeviceTables upload(const PoolDims& d, const PoolLayout& layout, bool inverse, Device dev, cudaStream_t s, Geo& geo) {
  std::vector<int64_t> ints;
  std::vector<double> dbl;
  int64_t ib[3], cb[3], lb[3] = {0, 0, 0}, hb[3] = {0, 0, 0}, pb[3];
  for (int k = 0; k < 3; ++k) {
    geo.in[k] = d.in[k];
    geo.out[k] = d.out[k];
    geo.step[k] = d.step[k];
    ib[k] = int64_t(ints.size());
    ints.insert(ints.end(), d.begin[k], d.begin[k] + d.out[k]);
    cb[k] = int64_t(ints.size());
    ints.insert(ints.end(), d.count[k], d.count[k] + d.out[k]);
    pb[k] = int64_t(dbl.size());
    dbl.insert(dbl.end(), d.pad_count[k], d.pad_count[k] + d.out[k]);
    if (inverse) {  // per input position, the first and one past the last window holding it
      std::vector<int64_t> lo(size_t(d.in[k]), d.out[k]), hi(size_t(d.in[k]), 0);
      for (int64_t o = 0; o < d.out[k]; ++o)
        for (int64_t j = 0; j < d.count[k][o]; ++j) {
          const size_t i = size_t(d.begin[k][o] + j * d.step[k]);
          lo[i] = std::min(lo[i], o);
          hi[i] = std::max(hi[i], o + 1);
        }
      lb[k] = int64_t(ints.size());
      ints.insert(ints.end(), lo.begin(), lo.end());
      hb[k] = int64_t(ints.size());
      ints.insert(ints.end(), hi.begin(), hi.end());
    }
  }
  geo.in_numel = d.in[0] * d.in[1] * d.in[2];
  geo.out_numel = d.out[0] * d.out[1] * d.out[2];
  geo.channels = layout.channels_last ? layout.channels : 1;
  geo.cl = layout.channels_last;
  DeviceTables t{to_device(ints, DType::Int64, dev, s), to_device(dbl, DType::Float64, dev, s)};
  const int64_t* ip = t.ints.device_data<int64_t>();
  const double* dp = t.doubles.device_data<double>();
  for (int k = 0; k < 3; ++k) {
    geo.begin[k] = ip + ib[k];
    geo.count[k] = ip + cb[k];
    geo.pc[k] = dp + pb[k];
    geo.lo[k] = ip + lb[k];
    geo.hi[k] = ip + hb[k];
  }
  return t;
}

/// Uploads the window tables of (d, layout) and calls f(T{}, stream, n, geo) with the
/// compute type of dt, for the n = out.numel() > 0 elements a pooling launch covers.
template <class F>
void launch_windowed(const PoolDims& d, const PoolLayout& layout, bool backward, const Tensor& out, DType dt,
                     F&& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  Geo g{};
  DeviceTables keep = upload(d, layout, backward, out.device(), s.handle, g);
  visit_pool(dt, [&](auto t) { f(t, s.handle, n, g); });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void max_pool_forward(const PoolDims& d, const PoolLayout& layout, const Tensor& x, const Tensor& y,
                      const Tensor& idx) {
  launch_windowed(d, layout, false, y, x.dtype(), [&](auto t, cudaStream_t s, int64_t n, const Geo& g) {
    using T = decltype(t);
    max_pool_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s>>>(x.device_data<T>(), y.device_data<T>(),
                                                               idx.device_data<int64_t>(), n, g);
  });
}

void avg_pool_forward(const PoolDims& d, const PoolLayout& layout, const Tensor& x, const Tensor& y,
                      std::optional<int64_t> divisor) {
  launch_windowed(d, layout, false, y, x.dtype(), [&](auto t, cudaStream_t s, int64_t n, const Geo& g) {
    using T = decltype(t);
    avg_pool_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s>>>(x.device_data<T>(), y.device_data<T>(), n, g,
                                                               divisor.has_value(), divisor.value_or(1));
  });
}

void avg_pool_backward(const PoolDims& d, const PoolLayout& layout, const Tensor& gy, const Tensor& gx,
                       std::optional<int64_t> divisor) {
  launch_windowed(d, layout, true, gx, gy.dtype(), [&](auto t, cudaStream_t s, int64_t n, const Geo& g) {
    using T = decltype(t);
    avg_pool_backward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s>>>(
        gy.device_data<T>(), gx.device_data<T>(), n, g, divisor.has_value(), divisor.value_or(1));
  });
}

void max_pool_backward(const PoolLayout& layout, int64_t plane_in, const Tensor& gy, const Tensor& idx,
                       const Tensor& acc) {
  if (acc.numel() == 0) return;
  DeviceGuard guard(acc.device().index);
  Stream s = current_stream(acc.device().index);
  TP_CUDA_CHECK(cudaMemsetAsync(acc.data_ptr(), 0, size_t(acc.numel()) * acc.itemsize(), s.handle));
  const int64_t n = gy.numel();
  if (n == 0) return;
  Geo g{};
  g.in_numel = plane_in;
  g.out_numel = layout.planes ? n / layout.planes : 0;
  g.channels = layout.channels_last ? layout.channels : 1;
  g.cl = layout.channels_last;
  auto launch = [&](auto t) {
    using A = decltype(t);
    max_pool_backward_kernel<A><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        gy.device_data<A>(), idx.device_data<int64_t>(), acc.device_data<A>(), n, g);
  };
  switch (acc.dtype()) {
    case DType::Float32: launch(float{}); break;
    case DType::Float64: launch(double{}); break;
    case DType::Int64: launch(int64_t{}); break;
    default: TP_FAIL("max_pool_backward CUDA kernel: unsupported dtype ", dtype_name(acc.dtype()));
  }
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
