// CUDA loops for the pointwise functors of kernels/functors/: a vectorised kernel for
// contiguous operands and an offset-computing kernel for strided and broadcast ones.
// Included only by the generated cuda_kernels_N.cu files (Note [CUDA elementwise engine]).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/driver_launch.cuh"
#include "cuda/pointwise.h"
#include "cuda/runtime.h"
#include "kernels/functors/pointwise.h"

namespace tp::cuda {

// ---------------------------------------------------------------- element access
// Memory holds S; the functor computes in T. Bools are read as bytes compared with 0.
template <class T, class S>
__device__ __forceinline__ T load_as(const S* p) {
  if constexpr (std::is_same_v<S, __half>) return T(__half2float(*p));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return T(__bfloat162float(*p));
  else if constexpr (std::is_same_v<S, bool>) return T(*reinterpret_cast<const uint8_t*>(p) != 0);
  else return T(*p);
}
template <class S, class T>
__device__ __forceinline__ S to_storage(T v) {
  if constexpr (std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>) return round_half<S>(float(v));
  else return S(v);
}

/// The operand roles of a functor F computing in T: input k's compute type (where's
/// condition is C) and storage type (S for T-typed operands), and the output's.
template <class F, class T, class C, class S>
struct Roles {
  using O = typename F::out_t;
  static_assert(std::is_same_v<O, T> || std::is_same_v<O, bool>, "functor output type");
  static constexpr bool kCond = !std::is_same_v<C, T>;
  template <int k> using In = std::conditional_t<k == 0 && kCond, C, T>;
  template <int k> using SIn = std::conditional_t<k == 0 && kCond, C, S>;
  using SO = std::conditional_t<std::is_same_v<O, T>, S, bool>;
};

/// Kernel arguments: operand pointers (0 = output) and the CPU scalars' values.
template <int N, class T, class C>
struct PwArgs {
  char* ptr[N + 1];
  bool scalar[N + 1];
  C c0;          // input 0's value when it is where's condition and a scalar
  T val[N + 1];  // the other scalar inputs' values (index = operand)
};

template <int k, class R, class T, class C, int N>
__device__ __forceinline__ typename R::template In<k> scalar_of(const PwArgs<N, T, C>& a) {
  if constexpr (k == 0 && R::kCond) return a.c0;
  else return a.val[k + 1];
}

/// Whether input k is a CPU scalar. SL < 0: read from the arguments at run time; SL >= 0:
/// input SL is known at compile time to be the only scalar (Note [Baked scalar operand]).
template <int k, int SL, int N, class T, class C>
__device__ __forceinline__ bool is_scalar(const PwArgs<N, T, C>& a) {
  if constexpr (SL >= 0) return k == SL;
  else return a.scalar[k + 1];
}

template <class F, class... A>
__device__ __forceinline__ auto call(const F& f, A... a) {
  return f(a...);
}

// ---------------------------------------------------------------- contiguous kernel
constexpr int kContigThreads = 256;
constexpr int kContigUnroll = 2;  // vectors per thread and operand

/// Elements per 16-byte vector of the widest stored operand.
template <class R, int N>
constexpr int vec_width() {
  size_t w = sizeof(typename R::SO);
  if constexpr (N > 0) w = w > sizeof(typename R::template SIn<0>) ? w : sizeof(typename R::template SIn<0>);
  if constexpr (N > 1) w = w > sizeof(typename R::template SIn<1>) ? w : sizeof(typename R::template SIn<1>);
  if constexpr (N > 2) w = w > sizeof(typename R::template SIn<2>) ? w : sizeof(typename R::template SIn<2>);
  return int(16 / w);
}

template <class S, int V>
struct alignas(sizeof(S) * V) Pack {
  S v[V];
};

template <int k, class R, int V, int SL, class T, class C, int N>
__device__ __forceinline__ void load_pack(const PwArgs<N, T, C>& a, int64_t i,
                                          typename R::template In<k> (&out)[V]) {
  using SI = typename R::template SIn<k>;
  if (is_scalar<k, SL>(a)) {
    auto v = scalar_of<k, R>(a);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = v;
    return;
  }
  Pack<SI, V> p = *reinterpret_cast<const Pack<SI, V>*>(reinterpret_cast<const SI*>(a.ptr[k + 1]) + i);
#pragma unroll
  for (int j = 0; j < V; ++j) out[j] = load_as<typename R::template In<k>>(&p.v[j]);
}

template <int k, class R, int SL, class T, class C, int N>
__device__ __forceinline__ typename R::template In<k> load_one(const PwArgs<N, T, C>& a, int64_t i) {
  using SI = typename R::template SIn<k>;
  if (is_scalar<k, SL>(a)) return scalar_of<k, R>(a);
  return load_as<typename R::template In<k>>(reinterpret_cast<const SI*>(a.ptr[k + 1]) + i);
}

template <int N, class F, class R, int SL, class T, class C>
__device__ __forceinline__ typename R::O apply_at(const F& f, const PwArgs<N, T, C>& a, int64_t i) {
  if constexpr (N == 0) return f();
  else if constexpr (N == 1) return f(load_one<0, R, SL>(a, i));
  else if constexpr (N == 2) return f(load_one<0, R, SL>(a, i), load_one<1, R, SL>(a, i));
  else return f(load_one<0, R, SL>(a, i), load_one<1, R, SL>(a, i), load_one<2, R, SL>(a, i));
}

/// Operands' vector at element i (a multiple of V) through f, stored as one pack.
template <int N, class F, class R, int V, int SL, class T, class C>
__device__ __forceinline__ void pack_at(const F& f, const PwArgs<N, T, C>& a, int64_t i) {
  using SO = typename R::SO;
  typename R::template In<0> x0[V];
  typename R::template In<(N > 1 ? 1 : 0)> x1[V];
  typename R::template In<(N > 2 ? 2 : 0)> x2[V];
  if constexpr (N > 0) load_pack<0, R, V, SL>(a, i, x0);
  if constexpr (N > 1) load_pack<1, R, V, SL>(a, i, x1);
  if constexpr (N > 2) load_pack<2, R, V, SL>(a, i, x2);
  Pack<SO, V> r;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if constexpr (N == 0) r.v[j] = to_storage<SO>(f());
    else if constexpr (N == 1) r.v[j] = to_storage<SO>(f(x0[j]));
    else if constexpr (N == 2) r.v[j] = to_storage<SO>(f(x0[j], x1[j]));
    else r.v[j] = to_storage<SO>(f(x0[j], x1[j], x2[j]));
  }
  *reinterpret_cast<Pack<SO, V>*>(reinterpret_cast<SO*>(a.ptr[0]) + i) = r;
}

template <int N, class F, class R, int SL, class T, class C>
__global__ void __launch_bounds__(kContigThreads)
pw_contig_kernel(F f, PwArgs<N, T, C> a, int64_t n) {
  constexpr int V = vec_width<R, N>();
  constexpr int64_t kBlockWork = int64_t(kContigThreads) * kContigUnroll * V;
  using SO = typename R::SO;
  SO* out = reinterpret_cast<SO*>(a.ptr[0]);
  int64_t start = int64_t(blockIdx.x) * kBlockWork;
  if (n - start < kBlockWork) {
    // The last, partial block (the only one below kBlockWork elements): whole vectors, then
    // the few elements after the last. One element at a time, a thread's loads waited on its
    // previous store (they may alias), so a 1024-element op took 1.6 us on the H100 where
    // PyTorch's vectorised kernel takes 1.0 (a CUDA graph of 20 such ops replayed at 1.3x).
    // At most kContigUnroll vectors per thread, then fewer than V (< kContigThreads)
    // elements: 32-bit counters and no trip-count arithmetic (the 64-bit strided loops here
    // before took more instructions than a small op's multiply).
    const int nvec = int((n - start) / V);
#pragma unroll 1
    for (int u = 0; u < kContigUnroll; ++u) {
      const int q = u * kContigThreads + int(threadIdx.x);
      if (q < nvec) pack_at<N, F, R, V, SL>(f, a, start + int64_t(q) * V);
    }
    const int64_t i = start + int64_t(nvec) * V + threadIdx.x;
    if (i < n) out[i] = to_storage<SO>(apply_at<N, F, R, SL>(f, a, i));
    return;
  }
  typename R::template In<0> x0[kContigUnroll][V];
  typename R::template In<(N > 1 ? 1 : 0)> x1[kContigUnroll][V];
  typename R::template In<(N > 2 ? 2 : 0)> x2[kContigUnroll][V];
#pragma unroll
  for (int u = 0; u < kContigUnroll; ++u) {
    int64_t i = start + (int64_t(u) * kContigThreads + threadIdx.x) * V;
    if constexpr (N > 0) load_pack<0, R, V, SL>(a, i, x0[u]);
    if constexpr (N > 1) load_pack<1, R, V, SL>(a, i, x1[u]);
    if constexpr (N > 2) load_pack<2, R, V, SL>(a, i, x2[u]);
  }
#pragma unroll
  for (int u = 0; u < kContigUnroll; ++u) {
    int64_t i = start + (int64_t(u) * kContigThreads + threadIdx.x) * V;
    Pack<SO, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if constexpr (N == 0) r.v[j] = to_storage<SO>(f());
      else if constexpr (N == 1) r.v[j] = to_storage<SO>(f(x0[u][j]));
      else if constexpr (N == 2) r.v[j] = to_storage<SO>(f(x0[u][j], x1[u][j]));
      else r.v[j] = to_storage<SO>(f(x0[u][j], x1[u][j], x2[u][j]));
    }
    *reinterpret_cast<Pack<SO, V>*>(out + i) = r;
  }
}

// ---------------------------------------------------------------- strided kernel
/// Division by a fixed divisor d (1 <= d < 2^31) through a multiply and a shift, exact
/// for dividends below 2^31: q = (hi32(n * m) + n) >> s with 2^s >= d and
/// m = floor(2^32 * (2^s - d) / d) + 1.
struct FastDivider {
  uint32_t d = 1, m = 0, s = 0;
  FastDivider() = default;
  explicit FastDivider(uint32_t div) : d(div) {
    while ((uint64_t(1) << s) < div) ++s;
    m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << s) - div)) / div + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

constexpr int kMaxIterDims = 16;

/// Byte offsets of element i in each operand of an N-operand iteration (dims fastest
/// first). 32-bit index arithmetic when every index fits, else 64-bit.
template <int NOPS>
struct OffsetCalc {
  int ndim = 0;
  bool small = true;
  FastDivider div[kMaxIterDims];
  int64_t size[kMaxIterDims];
  int64_t stride[kMaxIterDims][NOPS];

  __device__ __forceinline__ void get(int64_t i, int64_t (&off)[NOPS]) const {
#pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] = 0;
    if (small) {
      uint32_t rem = uint32_t(i);
#pragma unroll
      for (int d = 0; d < kMaxIterDims; ++d) {
        if (d == ndim) break;
        uint32_t q = div[d].div(rem);
        uint32_t idx = rem - q * div[d].d;
        rem = q;
#pragma unroll
        for (int k = 0; k < NOPS; ++k) off[k] += int64_t(idx) * stride[d][k];
      }
    } else {
      int64_t rem = i;
      for (int d = 0; d < ndim; ++d) {
        int64_t q = rem / size[d];
        int64_t idx = rem - q * size[d];
        rem = q;
#pragma unroll
        for (int k = 0; k < NOPS; ++k) off[k] += idx * stride[d][k];
      }
    }
  }
};

constexpr int kStridedThreads = 128;
constexpr int kStridedWork = 4;  // elements per thread

template <int k, class R, class T, class C, int N>
__device__ __forceinline__ typename R::template In<k> load_at(const PwArgs<N, T, C>& a,
                                                              int64_t off) {
  using SI = typename R::template SIn<k>;
  if (a.scalar[k + 1]) return scalar_of<k, R>(a);
  return load_as<typename R::template In<k>>(reinterpret_cast<const SI*>(a.ptr[k + 1] + off));
}

template <int N, class F, class R, class T, class C>
__global__ void __launch_bounds__(kStridedThreads)
pw_strided_kernel(F f, PwArgs<N, T, C> a, OffsetCalc<N + 1> oc, int64_t n) {
  using SO = typename R::SO;
  int64_t base = int64_t(blockIdx.x) * kStridedThreads * kStridedWork + threadIdx.x;
#pragma unroll
  for (int w = 0; w < kStridedWork; ++w) {
    int64_t i = base + int64_t(w) * kStridedThreads;
    if (i >= n) return;
    int64_t off[N + 1];
    oc.get(i, off);
    typename R::O r;
    if constexpr (N == 0) r = f();
    else if constexpr (N == 1) r = f(load_at<0, R>(a, off[1]));
    else if constexpr (N == 2) r = f(load_at<0, R>(a, off[1]), load_at<1, R>(a, off[2]));
    else r = f(load_at<0, R>(a, off[1]), load_at<1, R>(a, off[2]), load_at<2, R>(a, off[3]));
    *reinterpret_cast<SO*>(a.ptr[0] + off[0]) = to_storage<SO>(r);
  }
}

// ---------------------------------------------------------------- host side
template <class S> constexpr DType storage_dtype_of() {
  if constexpr (std::is_same_v<S, __half>) return DType::Float16;
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return DType::BFloat16;
  else return dtype_of<S>::value;
}

template <int N, class F, class T, class C, class S>
void launch_with_storage(const KernelParams& p, const TensorIterator& it) {
  using R = Roles<F, T, C, S>;
  F f(p);
  PwArgs<N, T, C> a{};
  for (int k = 0; k <= N; ++k) {
    a.ptr[k] = it.base(k);
    a.scalar[k] = k > 0 && it.host_scalar(k);
  }
  if constexpr (N > 0) {
    for (int k = 1; k <= N; ++k) {
      if (!a.scalar[k]) continue;
      if (k == 1 && R::kCond) a.c0 = *reinterpret_cast<const C*>(it.base(k));
      else a.val[k] = *reinterpret_cast<const T*>(it.base(k));
    }
  }
  // Operand k's stored element size.
  auto elem = [](int k) -> int64_t {
    if (k == 0) return sizeof(typename R::SO);
    if (k == 1) return sizeof(typename R::template SIn<0>);
    return sizeof(S);
  };
  int64_t n = it.numel();
  const int dev = it.device().index;
  cudaStream_t stream = current_stream(dev).handle;
  constexpr int V = vec_width<R, N>();
  bool contig = it.ndim() == 1;
  for (int k = 0; k <= N && contig; ++k) {
    if (a.scalar[k]) continue;
    contig = it.strides(k)[0] == elem(k) && reinterpret_cast<uintptr_t>(a.ptr[k]) % (elem(k) * V) == 0;
  }
  if (contig) {
    constexpr int64_t kBlockWork = int64_t(kContigThreads) * kContigUnroll * V;
    int64_t blocks = (n + kBlockWork - 1) / kBlockWork;
    // launch-bound when tiny: the driver's launch (Note [Driver launches])
    // Note [Baked scalar operand]: `x * 1.5`, `x + 1` and the like (float math, the last
    // input a CPU scalar, the others tensors) run a kernel compiled for exactly that, which
    // reads no flag and holds no branch for the tensor loads of that input. The flag-reading
    // kernel took 1.22 us for `x * 1.001` on 1024 floats on the H100 where PyTorch's (the
    // scalar bound into a unary functor) took 1.10; instantiated for float math only, so
    // the 51 binary functors add 3 kernels each (float, half and bfloat16 storage) rather
    // than one per dtype.
    bool last_only = false;
    if constexpr (N >= 2 && std::is_same_v<T, float>) {
      last_only = a.scalar[N];
      for (int k = 1; k < N; ++k) last_only = last_only && !a.scalar[k];
      if (last_only)
        launch_kernel<pw_contig_kernel<N, F, R, N - 1, T, C>>(dev, dim3(unsigned(blocks)), dim3(kContigThreads), 0,
                                                              stream, f, a, n);
    }
    if (!last_only)
      launch_kernel<pw_contig_kernel<N, F, R, -1, T, C>>(dev, dim3(unsigned(blocks)), dim3(kContigThreads), 0, stream,
                                                         f, a, n);
  } else {
    TP_CHECK(it.ndim() <= kMaxIterDims, "CUDA kernels support up to ", kMaxIterDims,
             " dimensions");
    OffsetCalc<N + 1> oc;
    oc.ndim = it.ndim();
    oc.small = n <= INT32_MAX;
    for (int d = 0; d < oc.ndim; ++d) {
      oc.size[d] = it.shape()[d];
      if (oc.small) oc.div[d] = FastDivider(uint32_t(oc.size[d]));
      for (int k = 0; k <= N; ++k) oc.stride[d][k] = it.strides(k)[d];
    }
    int64_t work = int64_t(kStridedThreads) * kStridedWork;
    int64_t blocks = (n + work - 1) / work;
    launch_kernel<pw_strided_kernel<N, F, R, T, C>>(dev, dim3(unsigned(blocks)), dim3(kStridedThreads), 0, stream,
                                                    f, a, oc, n);
  }
  TP_CUDA_CHECK(cudaGetLastError());
}

/// The table entry for functor Fn of arity N computing in T (input 0 of type C).
template <int N, template <class> class Fn, class T, class C = T>
void launch_pointwise(const KernelParams& p, const TensorIterator& it) {
  DeviceGuard guard(it.device().index);
  if constexpr (std::is_same_v<T, float>) {
    if (it.storage_dtype() == DType::Float16)
      return launch_with_storage<N, Fn<T>, T, C, __half>(p, it);
    if (it.storage_dtype() == DType::BFloat16)
      return launch_with_storage<N, Fn<T>, T, C, __nv_bfloat16>(p, it);
  }
  launch_with_storage<N, Fn<T>, T, C, T>(p, it);
}

}  // namespace tp::cuda
