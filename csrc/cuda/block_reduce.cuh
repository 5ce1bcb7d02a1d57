// Device helpers shared by the reduction and nn kernels: 16-byte packs, the accumulation
// type of each dtype, warp and thread-group reductions, and vectorised walks over a row.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace tp::cuda {

/// V elements of T loaded or stored as one aligned vector.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

/// Elements of T in a 16-byte pack.
template <class T>
constexpr int kPackOf = 16 / sizeof(T) < 1 ? 1 : int(16 / sizeof(T));

/// The type the nn kernels accumulate T in: double for double, float otherwise.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ acc_t<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return acc_t<T>(v);
}

/// out[0..V) = the pack's values as acc_t<T>. bfloat16 pairs as bit operations on their
/// 32-bit word (the low value shifted up, the high one masked: one instruction each, where
/// converting the values one by one extracts each half first); exact, as to_acc.
template <class T, int V>
__device__ __forceinline__ void unpack_acc(const Pack<T, V>& q, acc_t<T> (&out)[V]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && V % 2 == 0) {
    const uint32_t* u = reinterpret_cast<const uint32_t*>(q.v);
#pragma unroll
    for (int i = 0; i < V / 2; ++i) {
      out[2 * i] = __uint_as_float(u[i] << 16);
      out[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = to_acc(q.v[e]);
  }
}

/// v rounded to T (to nearest even for the half types).
template <class T, class A>
__device__ __forceinline__ T from_acc(A v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(float(v));
  else return T(v);
}

/// Stores r[0..V) rounded to T as one pack at the 16-byte aligned p (one 16-byte store; for
/// the half types ptxas already rounds pairs with one F2FP: an explicit cvt.rn.bf16x2.f32
/// per pair gave the same F2FP count and split the store into four 4-byte ones).
template <class T, int V, class A>
__device__ __forceinline__ void store_rounded(T* p, const A (&r)[V]) {
  Pack<T, V> o;
#pragma unroll
  for (int e = 0; e < V; ++e) o.v[e] = from_acc<T>(r[e]);
  *reinterpret_cast<Pack<T, V>*>(p) = o;
}

struct SumFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
/// max where a NaN wins (so a NaN in a row reaches every result of the row).
struct MaxFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return (a != a || a > b) ? a : b; }
};
/// MaxFn in one instruction for float (PTX max.NaN, sm_80 and later; MaxFn otherwise). It may
/// pick either zero of max(-0, +0), which a softmax does not see.
struct MaxNanFn {
  template <class A>
  __device__ A operator()(A a, A b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<A, float>) {
      float r;
      asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      return r;
    }
#endif
    return MaxFn{}(a, b);
  }
};

/// Reduces v over the 32 lanes of the warp; every lane gets the result, combined in the
/// same order on every lane.
template <class A, class Op>
__device__ __forceinline__ A warp_reduce(A v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Block-shared scratch for a run of group_reduce / group_reduce2 calls that every thread of
/// the block joins (Note [Barrier-free rows]): two areas of `per` values taken in turn, so a
/// call needs one block barrier, not two. Call i + 2 writes call i's area only after every
/// thread has passed call i + 1's barrier, which each reaches after reading call i's result.
template <class A>
struct ReduceRing {
  A* smem;  // 2 * per values
  int per;
  int half = 0;
  __device__ __forceinline__ A* next() {
    A* p = smem + half * per;
    half ^= 1;
    return p;
  }
};

/// The block-level step of group_reduce2 / group_reduce over warp results: lane 0 of each
/// warp writes its C values (smem[c * nw + warp]), every thread combines its group's.
/// fence: a barrier first, for scratch an earlier call's readers may still be reading.
template <int C, class A, class Op>
__device__ __forceinline__ void group_exchange(A (&v)[C], int tpr, A* smem, bool fence, Op op) {
  const int warp = int(threadIdx.x >> 5), wpr = tpr >> 5, first = warp / wpr * wpr, nw = int(blockDim.x >> 5);
  if (fence) __syncthreads();  // the previous call's readers are done with smem
  if ((threadIdx.x & 31) == 0)
#pragma unroll
    for (int c = 0; c < C; ++c) smem[c * nw + warp] = v[c];
  __syncthreads();
#pragma unroll
  for (int c = 0; c < C; ++c) {
    A r = smem[c * nw + first];
    for (int i = 1; i < wpr; ++i) r = op(r, smem[c * nw + first + i]);
    v[c] = r;
  }
}

/// Reduces v over groups of `tpr` consecutive threads (tpr a multiple of 32 dividing
/// blockDim.x); every thread gets its group's result. Every thread of the block calls it
/// (it synchronises the block when tpr > 32); smem holds blockDim.x / 32 values, or a
/// ReduceRing of them (one barrier a call instead of two).
template <class A, class Op>
__device__ __forceinline__ A group_reduce(A v, int tpr, A* smem, Op op) {
  A r[1] = {warp_reduce(v, op)};
  if (tpr > 32) group_exchange(r, tpr, smem, true, op);
  return r[0];
}
template <class A, class Op>
__device__ __forceinline__ A group_reduce(A v, int tpr, ReduceRing<A>& ring, Op op) {
  A r[1] = {warp_reduce(v, op)};
  if (tpr > 32) group_exchange(r, tpr, ring.next(), false, op);
  return r[0];
}

/// group_reduce of two values at once: the same results (combined in the same order) with
/// one exchange through shared memory and the two shuffle chains interleaved; the ring's
/// areas hold 2 * blockDim.x / 32 values.
template <class A, class Op>
__device__ __forceinline__ void group_reduce2(A& a, A& b, int tpr, ReduceRing<A>& ring, Op op) {
  for (int o = 16; o > 0; o >>= 1) {
    a = op(a, __shfl_xor_sync(0xffffffffu, a, o));
    b = op(b, __shfl_xor_sync(0xffffffffu, b, o));
  }
  if (tpr <= 32) return;
  A r[2] = {a, b};
  group_exchange(r, tpr, ring.next(), false, op);
  a = r[0], b = r[1];
}

/// The pack of V elements of T at p (16-byte aligned).
template <class T>
__device__ __forceinline__ Pack<T, kPackOf<T>> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, kPackOf<T>>*>(p);
}

/// For each i in [0, n), thread `t` of `nt` taking its share: r = f(i, p0[i], p[i]...),
/// stored to y[i] unless Y is void (y then unused). When all pointers sit at the same
/// offset from a 16-byte boundary: a scalar head up to the boundary, 16-byte packs, a
/// scalar tail; otherwise scalar throughout. Each thread's share depends only on the
/// pointers, n, t and nt, so sums built with it are reproducible. The p's share one size.
template <class Y, class F, class T0, class... T>
__device__ __forceinline__ void zip_row(int64_t n, int t, int nt, Y* y, F f, const T0* p0, const T*... p) {
  constexpr int V = kPackOf<T0>;
  constexpr bool kStore = !std::is_void_v<Y>;
  const uintptr_t off = reinterpret_cast<uintptr_t>(p0) & 15;
  bool same = ((reinterpret_cast<uintptr_t>(p) & 15) == off && ...);
  if constexpr (kStore) same = same && (sizeof(Y) != sizeof(T0) || (reinterpret_cast<uintptr_t>(y) & 15) == off);
  int64_t head = same ? int64_t((16 - off) & 15) / int64_t(sizeof(T0)) : n;
  if (head > n) head = n;
  auto one = [&](int64_t i) {
    if constexpr (kStore) y[i] = f(i, p0[i], p[i]...);
    else f(i, p0[i], p[i]...);
  };
  for (int64_t i = t; i < head; i += nt) one(i);
  const int64_t nvec = (n - head) / V;
  for (int64_t j = t; j < nvec; j += nt) {
    const int64_t i0 = head + j * V;
    [&](auto a0, auto... a) {
      if constexpr (!kStore) {
#pragma unroll
        for (int k = 0; k < V; ++k) f(i0 + k, a0.v[k], a.v[k]...);
      } else if constexpr (sizeof(Y) == sizeof(T0)) {
        Pack<Y, V> out;
#pragma unroll
        for (int k = 0; k < V; ++k) out.v[k] = f(i0 + k, a0.v[k], a.v[k]...);
        *reinterpret_cast<Pack<Y, V>*>(y + i0) = out;
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) y[i0 + k] = f(i0 + k, a0.v[k], a.v[k]...);
      }
    }(load_pack(p0 + i0), load_pack(p + i0)...);
  }
  for (int64_t i = head + nvec * V + t; i < n; i += nt) one(i);
}

}  // namespace tp::cuda
