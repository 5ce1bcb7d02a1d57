// CPU reduction loops: a contiguous run reduced to one value ("inner"), and rows of
// a contiguous block reduced column-wise ("outer", vectorised across the kept dim).
// Compiled once per CPU capability level; reductions.cpp calls them through reduce_stub.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

// Reduction ops: acc_t accumulates, identity() starts, combine() adds one element.
// Float sums accumulate in float inside short blocks and in double across blocks (see
// reduce_contiguous), which keeps them within PyTorch's (cascade-summed) rounding.
template <class T> struct SumOp {
  using acc_t = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  using total_t = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  static acc_t identity() { return 0; }
  static acc_t combine(acc_t a, T x) { return a + acc_t(x); }
  static total_t merge(total_t a, acc_t b) { return a + total_t(b); }
};
template <class T> struct ProdOp {
  using acc_t = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  using total_t = acc_t;
  static acc_t identity() { return 1; }
  static acc_t combine(acc_t a, T x) { return a * acc_t(x); }
  static total_t merge(total_t a, acc_t b) { return a * b; }
};
template <class T> struct MaxOp {
  using acc_t = T;
  using total_t = T;
  static T identity() {
    if constexpr (std::is_same_v<T, bool>) return false;
    else if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  static T combine(T a, T x) {
    if constexpr (std::is_floating_point_v<T>) return (x != x || x > a) ? x : a;  // NaN sticks
    else return x > a ? x : a;
  }
  static T merge(T a, T b) { return combine(a, b); }
};
template <class T> struct MinOp {
  using acc_t = T;
  using total_t = T;
  static T identity() {
    if constexpr (std::is_same_v<T, bool>) return true;
    else if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  static T combine(T a, T x) {
    if constexpr (std::is_floating_point_v<T>) return (x != x || x < a) ? x : a;
    else return x < a ? x : a;
  }
  static T merge(T a, T b) { return combine(a, b); }
};
template <class T> struct AllOp {
  using acc_t = bool;
  using total_t = bool;
  static bool identity() { return true; }
  static bool combine(bool a, T x) { return a && x != T(0); }
  static bool merge(bool a, bool b) { return a && b; }
};
template <class T> struct AnyOp {
  using acc_t = bool;
  using total_t = bool;
  static bool identity() { return false; }
  static bool combine(bool a, T x) { return a || x != T(0); }
  static bool merge(bool a, bool b) { return a || b; }
};

constexpr int kLanes = 64;  // 8 AVX2 accumulators: enough independent adds to hide latency
constexpr int64_t kBlock = 8192;

/// Reduces x[0..n) with kLanes independent accumulators per block of kBlock elements
/// (vectorisable), merging block results into a total.
#if defined(__AVX2__)
/// float32 max (IsMax) or min with NaN propagation: vmaxps/vminps lanes plus an
/// unordered-compare mask, two accumulators for instruction-level parallelism.
template <bool IsMax>
float minmax_f32(const float* x, int64_t n) {
  const float init = IsMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m256 a0 = _mm256_set1_ps(init), a1 = a0, nan = _mm256_setzero_ps();
  auto step = [](__m256 a, __m256 v) { return IsMax ? _mm256_max_ps(a, v) : _mm256_min_ps(a, v); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    a0 = step(a0, v0);
    a1 = step(a1, v1);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, step(a0, a1));
  float r = init;
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  for (float v : lanes) r = IsMax ? (v > r ? v : r) : (v < r ? v : r);
  for (; i < n; ++i) {
    any_nan |= x[i] != x[i];
    r = IsMax ? (x[i] > r ? x[i] : r) : (x[i] < r ? x[i] : r);
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : r;
}
#endif

template <class Op, class T>
typename Op::total_t reduce_contiguous(const T* x, int64_t n) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<Op, MaxOp<float>>) return minmax_f32<true>(x, n);
  if constexpr (std::is_same_v<Op, MinOp<float>>) return minmax_f32<false>(x, n);
#endif
  if (n < kLanes) {  // a short row (Categorical's (N, 10) probabilities): the lanes' path adds
    // these in order into lanes[0] too; without setting up and merging 64 lanes (15x faster)
    typename Op::acc_t a = Op::identity();
    for (int64_t i = 0; i < n; ++i) a = Op::combine(a, x[i]);
    return Op::merge(Op::identity(), a);
  }
  typename Op::total_t total = Op::identity();
  for (int64_t b = 0; b < n; b += kBlock) {
    int64_t e = std::min(n, b + kBlock);
    typename Op::acc_t lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = Op::identity();
    int64_t i = b;
    for (; i + kLanes <= e; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] = Op::combine(lanes[j], x[i + j]);
    for (; i < e; ++i) lanes[0] = Op::combine(lanes[0], x[i]);
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) lanes[j] = Op::merge(lanes[j], lanes[j + w]);
    total = Op::merge(total, lanes[0]);
  }
  return total;
}

/// out[r] = reduce(x[r * inner .. (r + 1) * inner)), rows in parallel; one long row is
/// split across threads instead.
template <class Op, class T, class Out>
void reduce_inner(const T* x, Out* out, int64_t outer, int64_t inner) {
  using Total = typename Op::total_t;
  int nth = get_num_threads();
  if (outer == 1 && inner >= 65536 && nth > 1) {
    std::vector<Total> part(size_t(nth), Total(Op::identity()));
#pragma omp parallel num_threads(nth)
    {
      int t = omp_get_thread_num(), T_ = omp_get_num_threads();
      int64_t per = ((inner + T_ - 1) / T_ + kBlock - 1) / kBlock * kBlock;
      int64_t b = std::min(inner, t * per), e = std::min(inner, b + per);
      if (b < e) part[size_t(t)] = reduce_contiguous<Op>(x + b, e - b);
    }
    Total total = Op::identity();
    for (Total v : part) total = Op::merge(total, v);
    out[0] = Out(total);
    return;
  }
  bool par = nth > 1 && outer * inner >= 65536 && outer >= nth;
#pragma omp parallel for num_threads(nth) if (par) schedule(static)
  for (int64_t r = 0; r < outer; ++r) out[r] = Out(reduce_contiguous<Op>(x + r * inner, inner));
}

/// out[k] = reduce over r of x[r * K + k] (k contiguous), columns in parallel.
template <class Op, class T, class Out>
void reduce_outer(const T* x, Out* out, int64_t R, int64_t K) {
  using Total = typename Op::total_t;
  int nth = get_num_threads();
  int64_t chunk = 1024;
  bool par = nth > 1 && R * K >= 65536 && K >= 2 * chunk;
#pragma omp parallel for num_threads(nth) if (par) schedule(static)
  for (int64_t k0 = 0; k0 < K; k0 += chunk) {
    int64_t kn = std::min(chunk, K - k0);
    Total acc[1024];
    for (int64_t k = 0; k < kn; ++k) acc[k] = Op::identity();
    for (int64_t r = 0; r < R; ++r) {
      const T* row = x + r * K + k0;
      for (int64_t k = 0; k < kn; ++k) acc[k] = Op::merge(acc[k], Op::combine(Op::identity(), row[k]));
    }
    for (int64_t k = 0; k < kn; ++k) out[k0 + k] = Out(acc[k]);
  }
}

template <template <class> class Op, class T>
void run(const T* x, void* out_ptr, int64_t B, int64_t R, int64_t K) {
  using Out = std::conditional_t<std::is_same_v<Op<T>, AllOp<T>> || std::is_same_v<Op<T>, AnyOp<T>>,
                                 bool, typename Op<T>::total_t>;
  using Store = std::conditional_t<std::is_floating_point_v<T> && !std::is_same_v<Op<T>, ProdOp<T>>,
                                   std::conditional_t<std::is_same_v<Out, bool>, bool, T>, Out>;
  Store* out = static_cast<Store*>(out_ptr);
  if (K == 1) {
    reduce_inner<Op<T>>(x, out, B, R);
    return;
  }
  for (int64_t i = 0; i < B; ++i) reduce_outer<Op<T>>(x + i * R * K, out + i * K, R, K);
}

void reduce_kernel(ReduceKind kind, DType dt, const void* data, void* out, int64_t B, int64_t R,
                   int64_t K) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>) {
      const T* x = static_cast<const T*>(data);
      switch (kind) {
        case ReduceKind::Sum: return run<SumOp>(x, out, B, R, K);
        case ReduceKind::Prod: return run<ProdOp>(x, out, B, R, K);
        case ReduceKind::Max: return run<MaxOp>(x, out, B, R, K);
        case ReduceKind::Min: return run<MinOp>(x, out, B, R, K);
        case ReduceKind::All: return run<AllOp>(x, out, B, R, K);
        case ReduceKind::Any: return run<AnyOp>(x, out, B, R, K);
      }
    }
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(reduce_stub, &reduce_kernel);

}  // namespace tp::cpu::TP_CPU_NS
