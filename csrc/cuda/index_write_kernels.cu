// Writes by index on the GPU (index_put, index_add/copy/fill/reduce, put, the scatter
// family): one thread per written element; reductions combine through atomics (native
// adds where the hardware has them, compare-and-swap loops on the enclosing 32- or 64-bit
// word otherwise), so duplicate targets are all folded in, in no fixed order; or, see
// Note [Deterministic index writes], through a sort of the targets.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/deterministic.h"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"
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

/// Element offset in dst of the row entry p writes.
__device__ __forceinline__ int64_t row_target(const RowGeom& g, int64_t p) {
  int64_t off = 0;
  for (int m = 0; m < g.k; ++m) {
    int64_t j = g.idx[m][p];
    off += (j < 0 ? j + g.size[m] : j) * g.stride[m];
  }
  return off;
}

template <WriteOp R, class T>
__global__ void row_write_kernel(T* dst, const T* val, RowGeom g, const int64_t* dst_inner,
                                 const int64_t* val_inner) {
  int64_t total = g.n * g.inner;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = e / g.inner, q = e - p * g.inner;
    atomic_combine<R>(dst + row_target(g, p) + dst_inner[q], val[p * g.val_outer + val_inner[q]]);
  }
}

struct ScatterGeom {
  int nd, dim;
  int64_t sizes[kMaxK];
  int64_t dst_strides[kMaxK];
  int64_t src_strides[kMaxK];
};

/// Index element e's offsets: in dst apart from dim (doff) and in src (soff).
__device__ __forceinline__ void scatter_offsets(const ScatterGeom& g, int64_t e, int64_t& doff,
                                                int64_t& soff) {
  int64_t rem = e;
  doff = soff = 0;
  for (int k = g.nd - 1; k >= 0; --k) {
    int64_t c = rem % g.sizes[k];
    rem /= g.sizes[k];
    if (k != g.dim) doff += c * g.dst_strides[k];
    soff += c * g.src_strides[k];
  }
}

template <WriteOp R, class T>
__global__ void scatter_kernel(T* dst, const T* src, const int64_t* index, int64_t n,
                               ScatterGeom g) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t doff, soff;
    scatter_offsets(g, e, doff, soff);
    atomic_combine<R>(dst + doff + index[e] * g.dst_strides[g.dim], src[soff]);
  }
}

// Note [Deterministic index writes]: with tp.use_deterministic_algorithms(True), and always
// for sums/products into float16/bfloat16 (which the CPU rounds after each addition, in
// index order), a write sorts its entries by target offset (a stable radix sort of
// (offset, entry) pairs, so equal targets keep entry order) and one thread per run of equal
// targets and inner position folds the run serially with the CPU's `combine`. The result
// is bitwise reproducible and equals the CPU's, which folds each target in entry order too
// (Note [Row writes]; scatter lines run in index order). Assignments keep the last entry.

/// The targets of a row write: keys[p] = row_target(p), order[p] = p.
__global__ void row_keys_kernel(RowGeom g, uint64_t* keys, int64_t* order) {
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < g.n;
       p += int64_t(gridDim.x) * blockDim.x) {
    keys[p] = uint64_t(row_target(g, p));
    order[p] = p;
  }
}

/// The targets of a scatter: keys[e] = the dst offset index element e writes, order[e] = e.
__global__ void scatter_keys_kernel(const int64_t* index, int64_t n, ScatterGeom g,
                                    uint64_t* keys, int64_t* order) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t doff, soff;
    scatter_offsets(g, e, doff, soff);
    keys[e] = uint64_t(doff + index[e] * g.dst_strides[g.dim]);
    order[e] = e;
  }
}

/// A row write's values: entry p, inner position q.
template <class T>
struct RowValues {
  const T* val;
  int64_t val_outer;
  const int64_t* dst_inner;
  const int64_t* val_inner;
  __device__ T value(int64_t p, int64_t q) const { return val[p * val_outer + val_inner[q]]; }
  __device__ int64_t dst_offset(int64_t q) const { return dst_inner[q]; }
};

/// A scatter's values: index element e (one inner position).
template <class T>
struct ScatterValues {
  const T* src;
  ScatterGeom g;
  __device__ T value(int64_t e, int64_t) const {
    int64_t doff, soff;
    scatter_offsets(g, e, doff, soff);
    return src[soff];
  }
  __device__ int64_t dst_offset(int64_t) const { return 0; }
};

/// Folds each run of equal sorted keys, per inner position, in entry order (the Note).
template <WriteOp R, class T, class V>
__global__ void sorted_fold_kernel(T* dst, const uint64_t* keys, const int64_t* order, int64_t n,
                                   int64_t inner, V values) {
  int64_t total = n * inner;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = e / inner, q = e - i * inner;
    uint64_t key = keys[i];
    if (i > 0 && keys[i - 1] == key) continue;  // not the first entry of its run
    T* d = dst + int64_t(key) + values.dst_offset(q);
    T acc = *d;
    for (int64_t j = i; j < n && keys[j] == key; ++j) acc = combined<R>(acc, values.value(order[j], q));
    *d = acc;
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

/// Whether a write takes the sorted path of Note [Deterministic index writes].
bool sorted_write(WriteOp op, DType dt) {
  bool half = dt == DType::Float16 || dt == DType::BFloat16;
  if (deterministic_algorithms())
    return op == WriteOp::Assign || half || dt == DType::Float32 || dt == DType::Float64;
  return half && (op == WriteOp::Sum || op == WriteOp::Mean || op == WriteOp::Prod);
}

/// Bits a radix sort of dst's element offsets needs (their largest value's width).
int offset_bits(const Tensor& dst) {
  uint64_t top = 0;
  for (int64_t d = 0; d < dst.dim(); ++d)
    if (dst.size(d) > 1) top += uint64_t(dst.size(d) - 1) * uint64_t(dst.stride(d));
  int bits = 1;
  while (bits < 64 && (top >> bits) != 0) ++bits;
  return bits;
}

/// Sorts n (keys, order) pairs by key, stably, into scratch buffers; returns them.
std::pair<Tensor, Tensor> sort_targets(const Tensor& keys, const Tensor& order, int64_t n,
                                       int end_bit, cudaStream_t s) {
  Device dev = keys.device();
  Tensor keys_out = scratch(n, DType::Int64, dev), order_out = scratch(n, DType::Int64, dev);
  const auto* kin = reinterpret_cast<const uint64_t*>(keys.data_ptr());
  auto* kout = reinterpret_cast<uint64_t*>(keys_out.data_ptr());
  const int64_t* oin = order.device_data<int64_t>();
  int64_t* oout = order_out.device_data<int64_t>();
  size_t bytes = 0;
  TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, oin, oout, n, 0, end_bit, s));
  Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
  TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), bytes, kin, kout, oin, oout, n, 0,
                                                end_bit, s));
  return {keys_out, order_out};
}

/// The sorted write: targets from `make_keys`, then one fold per run (the Note).
template <class MakeKeys, class Fold>
void sorted_write_run(const Tensor& dst, int64_t n, cudaStream_t s, MakeKeys&& make_keys,
                      Fold&& fold) {
  Tensor keys = scratch(n, DType::Int64, dst.device()), order = scratch(n, DType::Int64, dst.device());
  make_keys(reinterpret_cast<uint64_t*>(keys.data_ptr()), order.device_data<int64_t>());
  TP_CUDA_CHECK(cudaGetLastError());
  auto [skeys, sorder] = sort_targets(keys, order, n, offset_bits(dst), s);
  fold(reinterpret_cast<const uint64_t*>(skeys.data_ptr()), sorder.device_data<int64_t>());
  TP_CUDA_CHECK(cudaGetLastError());
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
  graphs::upload(offs.data_ptr(), dst_inner.data(), size_t(inner) * 8, s.handle);
  graphs::upload(offs.data_ptr() + inner * 8, val_inner.data(), size_t(inner) * 8, s.handle);
  const int64_t* d_off = offs.device_data<int64_t>();
  if (sorted_write(op, dst.dtype())) {
    sorted_write_run(dst, n, s.handle, [&](uint64_t* keys, int64_t* order) {
      row_keys_kernel<<<loop_blocks(n), kThreads, 0, s.handle>>>(g, keys, order);
    }, [&](const uint64_t* keys, const int64_t* order) {
      visit_device_dtype(dst.dtype(), [&](auto v) {
        using T = decltype(v);
        RowValues<T> values{val.device_data<T>(), val_outer, d_off, d_off + inner};
        visit_op(op, [&](auto rc) {
          sorted_fold_kernel<decltype(rc)::value, T><<<loop_blocks(n * inner), kThreads, 0, s.handle>>>(
              dst.device_data<T>(), keys, order, n, inner, values);
        });
      });
    });
    return;
  }
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
  if (sorted_write(op, dst.dtype())) {
    const int64_t* ip = index.device_data<int64_t>();
    sorted_write_run(dst, n, s.handle, [&](uint64_t* keys, int64_t* order) {
      scatter_keys_kernel<<<loop_blocks(n), kThreads, 0, s.handle>>>(ip, n, g, keys, order);
    }, [&](const uint64_t* keys, const int64_t* order) {
      visit_device_dtype(dst.dtype(), [&](auto v) {
        using T = decltype(v);
        ScatterValues<T> values{src.device_data<T>(), g};
        visit_op(op, [&](auto rc) {
          sorted_fold_kernel<decltype(rc)::value, T><<<loop_blocks(n), kThreads, 0, s.handle>>>(
              dst.device_data<T>(), keys, order, n, 1, values);
        });
      });
    });
    return;
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
