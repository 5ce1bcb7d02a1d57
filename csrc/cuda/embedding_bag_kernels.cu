// Embedding bags on the GPU (Note [Embedding bags]): the bag boundaries and the backward's
// per-row grouping come from the host (which checks the indices anyway); the kernels sum in
// the CPU's order, so results match it, except mode max's backward (atomic adds).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/nn_spatial.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

/// v as A (the half types through float, their one implicit conversion).
template <class A, class T>
__device__ __forceinline__ A to(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) return A(float(v));
  else return A(v);
}

template <class T>
__global__ void bag_forward_kernel(const T* w, const int64_t* index, const int64_t* begin, const T* psw, int64_t mode,
                                   int64_t pad, int64_t D, int64_t n, T* out, int64_t* bag_size, int64_t* max_idx) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t lanes = D ? D : 1;  // D == 0: one thread per bag still counts it
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = u / lanes, d = u % lanes;
    A acc = 0;
    int64_t arg = 0, count = 0;
    for (int64_t i = begin[b]; i < begin[b + 1]; ++i) {
      const int64_t r = index[i];
      if (r == pad) continue;
      const A v = D ? to<A>(w[r * D + d]) : A(0);
      if (mode == kMax) {
        if (count == 0 || v > acc) {
          acc = v;
          arg = r;
        }
      } else {
        acc += psw ? v * to<A>(psw[i]) : v;
      }
      ++count;
    }
    if (mode != kSum && d == 0) bag_size[b] = count;
    if (D == 0) continue;
    out[u] = mode == kMean && count > 0 ? T(acc / A(count)) : T(acc);
    if (mode == kMax) max_idx[u] = arg;
  }
}

template <class T, class A>
__global__ void bag_backward_rows_kernel(const T* grad, const int64_t* rows, const int64_t* seg, const int64_t* bag_of,
                                         const A* scale, A* gw, int64_t D, int64_t n) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = u / D, d = u % D;
    A acc = 0;
    for (int64_t j = seg[k]; j < seg[k + 1]; ++j) acc += to<A>(grad[bag_of[j] * D + d]) * scale[j];
    gw[rows[k] * D + d] = acc;
  }
}

template <class T, class A>
__global__ void bag_backward_max_kernel(const T* grad, const int64_t* bag_size, const int64_t* winners, A* gw,
                                        int64_t num_weights, int64_t D, int64_t n) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = winners[u];
    if (bag_size[u / D] > 0 && r >= 0 && r < num_weights) atomicAdd(gw + r * D + u % D, to<A>(grad[u]));
  }
}

template <class T>
__global__ void psw_backward_kernel(const T* grad, const T* w, const int64_t* index, const int64_t* bag_of,
                                    int64_t pad, int64_t D, int64_t n, T* out) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    A acc = 0;
    const int64_t b = bag_of[i], r = index[i];
    if (b >= 0 && r != pad)
      for (int64_t d = 0; d < D; ++d) acc += to<A>(grad[b * D + d]) * to<A>(w[r * D + d]);
    out[i] = T(acc);
  }
}

/// The norm kinds of embedding_renorm_.
enum class NormKind { Two, Max, Min, Zero, P };

template <class T>
__global__ void renorm_kernel(T* base, const int64_t* rows, int64_t n, int64_t D, int64_t rs, int64_t cs,
                              double max_norm, double p, NormKind kind) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    T* row = base + rows[k] * rs;
    double norm = 0;
    if (kind == NormKind::Two) {
      for (int64_t d = 0; d < D; ++d) norm += to<double>(row[d * cs]) * to<double>(row[d * cs]);
      norm = sqrt(norm);
    } else if (kind == NormKind::Max || kind == NormKind::Min) {
      norm = D ? fabs(to<double>(row[0])) : 0.0;
      for (int64_t d = 0; d < D; ++d) {  // std::max / std::min's NaN behaviour, as the CPU kernel
        const double v = fabs(to<double>(row[d * cs]));
        norm = kind == NormKind::Max ? (norm < v ? v : norm) : (v < norm ? v : norm);
      }
    } else if (kind == NormKind::Zero) {
      for (int64_t d = 0; d < D; ++d) norm += to<double>(row[d * cs]) != 0;
    } else {
      for (int64_t d = 0; d < D; ++d) norm += pow(fabs(to<double>(row[d * cs])), p);
      norm = pow(norm, 1 / p);
    }
    if (norm > max_norm) {
      const A scale = A(max_norm / (norm + 1e-7));
      for (int64_t d = 0; d < D; ++d) row[d * cs] = T(to<A>(row[d * cs]) * scale);
    }
  }
}

/// Calls f(T{}) with the device type of a weight dtype (float32/64, float16, bfloat16).
template <class F>
void visit_weight(DType dt, F&& f) {
  switch (dt) {
    case DType::Float64: return f(double{});
    case DType::Float32: return f(float{});
    case DType::Float16: return f(__half{});
    case DType::BFloat16: return f(__nv_bfloat16{});
    default: TP_FAIL("embedding_bag CUDA kernels: unsupported dtype ", dtype_name(dt));
  }
}

/// Calls f(T{}, A{}) with the gradient's device type and the accumulation type of gw.
template <class F>
void visit_grad(DType grad_dt, DType acc_dt, F&& f) {
  visit_weight(grad_dt, [&](auto t) {
    if (acc_dt == DType::Float64) f(t, double{});
    else f(t, float{});
  });
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

}  // namespace

void embedding_bag_forward(const Tensor& weight, const Tensor& index, const Tensor& begin, const Tensor& psw,
                           int64_t mode, int64_t pad, const Tensor& out, const Tensor& bag_size,
                           const Tensor& max_idx) {
  const int64_t D = out.size(1), n = out.size(0) * (D ? D : 1);
  if (n == 0) return;
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  visit_weight(weight.dtype(), [&](auto t) {
    using T = decltype(t);
    bag_forward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        weight.device_data<T>(), index.device_data<int64_t>(), begin.device_data<int64_t>(), ptr_or_null<T>(psw),
        mode, pad, D, n, out.device_data<T>(), mode != kSum ? bag_size.device_data<int64_t>() : nullptr,
        mode == kMax ? max_idx.device_data<int64_t>() : nullptr);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void embedding_bag_backward_rows(const Tensor& grad, const Tensor& rows, const Tensor& seg, const Tensor& bag_of,
                                 const Tensor& scale, const Tensor& gw) {
  const int64_t D = gw.size(1), n = rows.numel() * D;
  if (n == 0) return;
  DeviceGuard guard(gw.device().index);
  Stream s = current_stream(gw.device().index);
  visit_grad(grad.dtype(), gw.dtype(), [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    bag_backward_rows_kernel<T, A><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        grad.device_data<T>(), rows.device_data<int64_t>(), seg.device_data<int64_t>(), bag_of.device_data<int64_t>(),
        scale.device_data<A>(), gw.device_data<A>(), D, n);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void embedding_bag_backward_max(const Tensor& grad, const Tensor& bag_size, const Tensor& winners, const Tensor& gw) {
  const int64_t D = gw.size(1), n = grad.numel();
  if (n == 0 || D == 0) return;
  DeviceGuard guard(gw.device().index);
  Stream s = current_stream(gw.device().index);
  visit_grad(grad.dtype(), gw.dtype(), [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    bag_backward_max_kernel<T, A><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        grad.device_data<T>(), bag_size.device_data<int64_t>(), winners.device_data<int64_t>(), gw.device_data<A>(),
        gw.size(0), D, n);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& index,
                                               const Tensor& bag_of, int64_t pad, const Tensor& out) {
  const int64_t n = out.numel(), D = weight.size(1);
  if (n == 0) return;
  DeviceGuard guard(out.device().index);
  Stream s = current_stream(out.device().index);
  visit_weight(weight.dtype(), [&](auto t) {
    using T = decltype(t);
    psw_backward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        grad.device_data<T>(), weight.device_data<T>(), index.device_data<int64_t>(), bag_of.device_data<int64_t>(),
        pad, D, n, out.device_data<T>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void embedding_renorm(const Tensor& self, const Tensor& rows, double max_norm, double norm_type) {
  const int64_t n = rows.numel();
  if (n == 0) return;
  const NormKind kind = norm_type == 2            ? NormKind::Two
                        : std::isinf(norm_type)   ? (norm_type > 0 ? NormKind::Max : NormKind::Min)
                        : norm_type == 0          ? NormKind::Zero
                                                  : NormKind::P;
  DeviceGuard guard(self.device().index);
  Stream s = current_stream(self.device().index);
  visit_weight(self.dtype(), [&](auto t) {
    using T = decltype(t);
    renorm_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(self.device_data<T>(), rows.device_data<int64_t>(),
                                                                    n, self.size(1), self.stride(0), self.stride(1),
                                                                    max_norm, norm_type, kind);
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
