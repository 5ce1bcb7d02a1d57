// Writes by index on the GPU (index_put, index_add/copy/fill/reduce, put, the scatter
// family): one thread per written element; reductions combine through atomics (native
// adds where the hardware has them, compare-and-swap loops on the enclosing 32- or 64-bit
// word otherwise), so duplicate targets are all folded in, in no fixed order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/index.h"
#include "cuda/launch.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

constexpr int kThreads = kLoopThreads;
constexpr int kMaxK = 16;


template <class T> constexpr bool kHalfLike =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T>
__device__ __forceinline__ auto to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}
template <class T, class A>
__device__ __forceinline__ T from_acc(A v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return T(v);
}

/// d op s with the CPU's rules: bool sums/maxima are "or", products/minima "and";
/// half types combine in float; amax/amin let a NaN in.
template <WriteOp R, class T>
__device__ __forceinline__ T combined(T d, T s) {
  if constexpr (R == WriteOp::Assign) {
    return s;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (R == WriteOp::Prod || R == WriteOp::Min) return d && s;
    else return d || s;
  } else {
    auto a = to_acc(d), b = to_acc(s);
    if constexpr (R == WriteOp::Sum || R == WriteOp::Mean) return from_acc<T>(a + b);
    else if constexpr (R == WriteOp::Prod) return from_acc<T>(a * b);
    else if constexpr (R == WriteOp::Max) return (b != b || b > a) ? s : d;
    else return (b != b || b < a) ? s : d;
  }
}

template <class W, class T>
__device__ __forceinline__ W bits_of(T v) {
  W w = 0;
  memcpy(&w, &v, sizeof(T));
  return w;
}
template <class T, class W>
__device__ __forceinline__ T value_of(W w) {
  T v;
  memcpy(&v, &w, sizeof(T));
  return v;
}

template <WriteOp R, class T>
__device__ __forceinline__ void atomic_combine(T* d, T s) {
  if constexpr (R == WriteOp::Assign) {
    *d = s;
  } else if constexpr ((R == WriteOp::Sum || R == WriteOp::Mean) &&
                       (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                        std::is_same_v<T, int32_t>)) {
    atomicAdd(d, s);
  } else if constexpr ((R == WriteOp::Sum || R == WriteOp::Mean) && std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(d), static_cast<unsigned long long>(s));
  } else if constexpr (sizeof(T) == 8) {
    auto* w = reinterpret_cast<unsigned long long*>(d);
    unsigned long long old = *w, assumed;
    do {
      assumed = old;
      T nv = combined<R>(value_of<T>(assumed), s);
      old = atomicCAS(w, assumed, bits_of<unsigned long long>(nv));
    } while (assumed != old);
  } else if constexpr (sizeof(T) == 4) {
    auto* w = reinterpret_cast<unsigned int*>(d);
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      T nv = combined<R>(value_of<T>(assumed), s);
      old = atomicCAS(w, assumed, bits_of<unsigned int>(nv));
    } while (assumed != old);
  } else {  // 1 or 2 bytes: a lane of the enclosing aligned 32-bit word
    uintptr_t addr = reinterpret_cast<uintptr_t>(d);
    auto* w = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    unsigned shift = unsigned(addr & 3) * 8;
    unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      using L = std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>;
      T cur = value_of<T>(L((assumed & mask) >> shift));
      unsigned nv = unsigned(bits_of<L>(combined<R>(cur, s))) << shift;
      old = atomicCAS(w, assumed, (assumed & ~mask) | nv);
    } while (assumed != old);
  }
}

struct RowGeom {
  int k;
  int64_t n, inner, val_outer;
  const int64_t* idx[kMaxK];
  int64_t size[kMaxK];
  int64_t stride[kMaxK];
};

template <WriteOp R, class T>
__global__ void row_write_kernel(T* dst, const T* val, RowGeom g, const int64_t* dst_inner,
                                 const int64_t* val_inner) {
  int64_t total = g.n * g.inner;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = e / g.inner, q = e - p * g.inner, off = 0;
    for (int m = 0; m < g.k; ++m) {
      int64_t j = g.idx[m][p];
      off += (j < 0 ? j + g.size[m] : j) * g.stride[m];
    }
    atomic_combine<R>(dst + off + dst_inner[q], val[p * g.val_outer + val_inner[q]]);
  }
}

struct ScatterGeom {
  int nd, dim;
  int64_t sizes[kMaxK];
  int64_t dst_strides[kMaxK];
  int64_t src_strides[kMaxK];
};

template <WriteOp R, class T>
__global__ void scatter_kernel(T* dst, const T* src, const int64_t* index, int64_t n,
                               ScatterGeom g) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = e, doff = 0, soff = 0;
    for (int k = g.nd - 1; k >= 0; --k) {
      int64_t c = rem % g.sizes[k];
      rem /= g.sizes[k];
      if (k != g.dim) doff += c * g.dst_strides[k];
      soff += c * g.src_strides[k];
    }
    atomic_combine<R>(dst + doff + index[e] * g.dst_strides[g.dim], src[soff]);
  }
}


template <class F>
void visit_op(WriteOp op, F&& f) {
  switch (op) {
    case WriteOp::Assign: return f(std::integral_constant<WriteOp, WriteOp::Assign>{});
    case WriteOp::Sum: return f(std::integral_constant<WriteOp, WriteOp::Sum>{});
    case WriteOp::Prod: return f(std::integral_constant<WriteOp, WriteOp::Prod>{});
    case WriteOp::Mean: return f(std::integral_constant<WriteOp, WriteOp::Mean>{});
    case WriteOp::Max: return f(std::integral_constant<WriteOp, WriteOp::Max>{});
    case WriteOp::Min: return f(std::integral_constant<WriteOp, WriteOp::Min>{});
  }
}

}  // namespace

void row_write(const Tensor& dst, const std::vector<const int64_t*>& idx,
               const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t n,
               const std::vector<int64_t>& dst_inner, const Tensor& val, int64_t val_outer,
               const std::vector<int64_t>& val_inner, WriteOp op) {
  int64_t inner = int64_t(dst_inner.size());
  if (n == 0 || inner == 0) return;
  TP_CHECK(idx.size() <= size_t(kMaxK), "index_put: at most ", kMaxK, " index tensors on CUDA");
  DeviceGuard guard(dst.device().index);
  Stream s = current_stream(dst.device().index);
  RowGeom g{};
  g.k = int(idx.size());
  g.n = n;
  g.inner = inner;
  g.val_outer = val_outer;
  for (int m = 0; m < g.k; ++m) {
    g.idx[m] = idx[size_t(m)];
    g.size[m] = sizes[size_t(m)];
    g.stride[m] = strides[size_t(m)];
  }
  int64_t both = 2 * inner;
  Tensor offs = empty_tensor(IntArrayRef(&both, 1), DType::Int64, dst.device());
  TP_CUDA_CHECK(cudaMemcpyAsync(offs.data_ptr(), dst_inner.data(), size_t(inner) * 8,
                                cudaMemcpyHostToDevice, s.handle));
  TP_CUDA_CHECK(cudaMemcpyAsync(offs.data_ptr() + inner * 8, val_inner.data(), size_t(inner) * 8,
                                cudaMemcpyHostToDevice, s.handle));
  const int64_t* d_off = offs.device_data<int64_t>();
  visit_device_dtype(dst.dtype(), [&](auto v) {
    using T = decltype(v);
    visit_op(op, [&](auto rc) {
      row_write_kernel<decltype(rc)::value, T><<<loop_blocks(n * inner), kThreads, 0, s.handle>>>(
          dst.device_data<T>(), val.device_data<T>(), g, d_off, d_off + inner);
    });
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void scatter(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src,
             const std::vector<int64_t>& src_strides, WriteOp op) {
  int64_t n = index.numel();
  if (n == 0) return;
  TP_CHECK(index.dim() <= kMaxK, "scatter: at most ", kMaxK, " dimensions on CUDA");
  DeviceGuard guard(dst.device().index);
  Stream s = current_stream(dst.device().index);
  ScatterGeom g{};
  g.nd = int(index.dim());
  g.dim = int(dim);
  for (int k = 0; k < g.nd; ++k) {
    g.sizes[k] = index.size(k);
    g.dst_strides[k] = dst.stride(k);
    g.src_strides[k] = src_strides[size_t(k)];
  }
  visit_device_dtype(dst.dtype(), [&](auto v) {
    using T = decltype(v);
    visit_op(op, [&](auto rc) {
      scatter_kernel<decltype(rc)::value, T><<<loop_blocks(n), kThreads, 0, s.handle>>>(
          dst.device_data<T>(), src.device_data<T>(), index.device_data<int64_t>(), n, g);
    });
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
