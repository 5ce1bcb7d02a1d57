// Reflection/replication padding, its backward (a gather over the inverse index maps) and
// max_unpool on the GPU; one thread per written element.
#include <cstdint>
#include <vector>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/nn_spatial.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

struct PadGeo {
  int64_t in[3], out[3], in_numel, out_numel;
  const int64_t* map[3];    // forward: output index -> input index, per dim
  const int64_t* start[3];  // backward: the outputs of input i are list[k][start[k][i] .. start[k][i + 1])
  const int64_t* list[3];
};

template <class U>
__global__ void pad_forward_kernel(const U* x, U* y, int64_t n, PadGeo g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = u % g.out_numel, p = u / g.out_numel;
    const int64_t c = o % g.out[2], b = o / g.out[2] % g.out[1], a = o / (g.out[1] * g.out[2]);
    y[u] = x[p * g.in_numel + (g.map[0][a] * g.in[1] + g.map[1][b]) * g.in[2] + g.map[2][c]];
  }
}

template <class T>
__global__ void pad_backward_kernel(const T* gy, T* gx, int64_t n, PadGeo g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = u % g.in_numel, p = u / g.in_numel;
    const int64_t i2 = i % g.in[2], i1 = i / g.in[2] % g.in[1], i0 = i / (g.in[1] * g.in[2]);
    const T* plane = gy + p * g.out_numel;
    T acc = T(0);
    for (int64_t ja = g.start[0][i0]; ja < g.start[0][i0 + 1]; ++ja)
      for (int64_t jb = g.start[1][i1]; jb < g.start[1][i1 + 1]; ++jb) {
        const T* row = plane + (g.list[0][ja] * g.out[1] + g.list[1][jb]) * g.out[2];
        for (int64_t jc = g.start[2][i2]; jc < g.start[2][i2 + 1]; ++jc) acc += row[g.list[2][jc]];
      }
    gx[u] = acc;
  }
}

template <class U>
__global__ void max_unpool_kernel(const U* x, const int64_t* idx, U* y, int64_t n, int64_t plane_in,
                                  int64_t plane_out) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = idx[u];
    if (j >= 0 && j < plane_out) y[(u / plane_in) * plane_out + j] = x[u];
  }
}

/// The maps (forward) or their inverses (backward) on the device, their pointers in g.
Tensor upload_maps(const int64_t in[3], const std::vector<int64_t> map[3], bool inverse, Device dev,
                   cudaStream_t s, PadGeo& g) {
  std::vector<int64_t> flat;
  int64_t at[3], list_at[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    g.in[k] = in[k];
    g.out[k] = int64_t(map[k].size());
    at[k] = int64_t(flat.size());
    if (!inverse) {
      flat.insert(flat.end(), map[k].begin(), map[k].end());
      continue;
    }
    // counting sort of the outputs by the input they read: outputs stay ascending per input
    std::vector<int64_t> start(size_t(in[k]) + 1, 0), fill;
    for (int64_t v : map[k]) ++start[size_t(v) + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    fill.assign(start.begin(), start.end() - 1);
    std::vector<int64_t> list(map[k].size());
    for (size_t j = 0; j < map[k].size(); ++j) list[size_t(fill[size_t(map[k][j])]++)] = int64_t(j);
    flat.insert(flat.end(), start.begin(), start.end());
    list_at[k] = int64_t(flat.size());
    flat.insert(flat.end(), list.begin(), list.end());
  }
  g.in_numel = g.in[0] * g.in[1] * g.in[2];
  g.out_numel = g.out[0] * g.out[1] * g.out[2];
  Tensor t = to_device(flat, DType::Int64, dev, s);
  const int64_t* p = t.device_data<int64_t>();
  for (int k = 0; k < 3; ++k) {
    g.map[k] = p + at[k];
    g.start[k] = p + at[k];
    g.list[k] = inverse ? p + list_at[k] : nullptr;
  }
  return t;
}

}  // namespace

void pad_forward(const Tensor& x, const Tensor& y, const int64_t in[3],
                 const std::vector<int64_t> map[3]) {
  const int64_t n = y.numel();
  if (n == 0) return;
  DeviceGuard guard(y.device().index);
  Stream s = current_stream(y.device().index);
  PadGeo g{};
  Tensor keep = upload_maps(in, map, false, y.device(), s.handle, g);
  by_size(y.itemsize(), [&](auto w) {
    using U = decltype(w);
    pad_forward_kernel<U><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(x.device_data<U>(), y.device_data<U>(), n,
                                                                         g);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void pad_backward(const Tensor& gy, const Tensor& gx, const int64_t in[3],
                  const std::vector<int64_t> map[3]) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  DeviceGuard guard(gx.device().index);
  Stream s = current_stream(gx.device().index);
  PadGeo g{};
  Tensor keep = upload_maps(in, map, true, gx.device(), s.handle, g);
  auto launch = [&](auto t) {
    using T = decltype(t);
    pad_backward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(gy.device_data<T>(), gx.device_data<T>(),
                                                                          n, g);
  };
  if (gx.dtype() == DType::Float32) launch(float{});
  else if (gx.dtype() == DType::Float64) launch(double{});
  else TP_FAIL("pad_backward CUDA kernel: unsupported dtype ", dtype_name(gx.dtype()));
  TP_CUDA_CHECK(cudaGetLastError());
}

void max_unpool(const Tensor& x, const Tensor& idx, const Tensor& y, int64_t plane_in, int64_t plane_out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  DeviceGuard guard(y.device().index);
  Stream s = current_stream(y.device().index);
  by_size(y.itemsize(), [&](auto w) {
    using U = decltype(w);
    max_unpool_kernel<U><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        x.device_data<U>(), idx.device_data<int64_t>(), y.device_data<U>(), n, plane_in, plane_out);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
