// The CPU loop of sort / argsort / msort / topk (csrc/ops/sorting.cpp): each contiguous row
// sorted stably (radix sort of order-preserving keys for long rows), or its first k found by
// a partial sort, or PyTorch's selection for topk); rows in parallel. Compiled once per CPU capability level.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

/// std::allocator under this level's name: the std:: code that the vectors below bring in
/// (their constructors, stable_sort's merges and rotations) is then this level's own, never
/// a copy the linker may share with another level (Note [CPU capability]).
template <class T>
struct Allocator : std::allocator<T> {
  Allocator() = default;
  template <class U>
  Allocator(const Allocator<U>&) {}
};
template <class T>
using Vector = std::vector<T, Allocator<T>>;

/// An unsigned key with the same order as `v` (NaN above +inf, all NaNs equal, -0 == +0).
template <class T>
auto order_key(T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using U = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
    if (v != v) return ~U(0);
    if (v == T(0)) v = T(0);  // -0 sorts equal to +0, as comparisons say
    U u;
    std::memcpy(&u, &v, sizeof(U));
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    return (u & sign) ? U(~u) : U(u | sign);
  } else if constexpr (sizeof(T) == 8) {
    return uint64_t(v) ^ (std::is_signed_v<T> ? uint64_t(1) << 63 : 0);
  } else {
    int64_t w = int64_t(v);  // widen small types; the +2^31 shift keeps the order
    return uint32_t(uint64_t(w + (std::is_signed_v<T> ? int64_t(1) << 31 : 0)));
  }
}

/// Stable LSD radix sort of `idx` by `keys` (8-bit digits, passes with one digit skipped).
/// Every digit's histogram comes from one read of the keys (a pass does not change them).
template <class K>
void radix_sort(Vector<K>& keys, Vector<int64_t>& idx) {
  constexpr int kDigits = int(sizeof(K));
  size_t n = keys.size();
  size_t count[kDigits][256] = {};
  for (K k : keys)
    for (int d = 0; d < kDigits; ++d) ++count[d][(k >> (8 * d)) & 0xff];
  Vector<K> k2(n);
  Vector<int64_t> i2(n);
  for (int d = 0; d < kDigits; ++d) {
    const int shift = 8 * d;
    if (count[d][(keys[0] >> shift) & 0xff] == n) continue;  // every key shares this digit
    size_t pos[256], acc = 0;
    for (int b = 0; b < 256; ++b) { pos[b] = acc; acc += count[d][b]; }
    for (size_t j = 0; j < n; ++j) {
      size_t p = pos[(keys[j] >> shift) & 0xff]++;
      k2[p] = keys[j];
      i2[p] = idx[j];
    }
    keys.swap(k2);
    idx.swap(i2);
  }
}

/// PyTorch's CPU topk of one row (its topk_impl_loop): a partial sort where k * 64 <= len,
/// else nth_element at k - 1 and, when sorted, a sort of the k - 1 before it. Its order among
/// equal values is whatever these std:: algorithms leave, so the same calls reproduce it.
template <class Cmp>
void topk_select(Vector<int64_t>& idx, int64_t k, bool sorted, Cmp cmp) {
  if (k == 0) return;
  if (k * 64 <= int64_t(idx.size())) {
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp);
    return;
  }
  std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), cmp);
  if (sorted) std::sort(idx.begin(), idx.begin() + (k - 1), cmp);
}

template <class T>
void sort_rows(const T* in, int64_t rows, int64_t len, int64_t k, bool descending, int topk, T* ov,
               int64_t* oi) {
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = in + r * len;
      Vector<int64_t> idx(static_cast<size_t>(len));
      std::iota(idx.begin(), idx.end(), int64_t(0));
      auto less = [&](int64_t a, int64_t b) {
        T x = row[a], y = row[b];
        if constexpr (std::is_floating_point_v<T>) {
          if (y != y) return x == x;  // NaN is the largest
          if (x != x) return false;
        }
        return x < y;
      };
      auto cmp = [&](int64_t a, int64_t b) { return descending ? less(b, a) : less(a, b); };
      if (topk) {
        topk_select(idx, k, topk == 1, cmp);
      } else if (k < len) {
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
          return cmp(a, b) || (!cmp(b, a) && a < b);  // ties keep input order
        });
      } else if (len >= 256) {  // long rows: radix sort on order-preserving keys
        using K = decltype(order_key(T{}));
        Vector<K> keys(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) keys[size_t(i)] = descending ? K(~order_key(row[i])) : order_key(row[i]);
        radix_sort(keys, idx);
      } else {
        std::stable_sort(idx.begin(), idx.end(), cmp);
      }
      for (int64_t i = 0; i < k; ++i) {
        ov[r * k + i] = row[idx[size_t(i)]];
        oi[r * k + i] = idx[size_t(i)];
      }
    }
  });
}

void sort_kernel(DType dt, const void* in, int64_t rows, int64_t len, int64_t k, bool descending, int topk,
                 void* values, int64_t* indices) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>)
      sort_rows(static_cast<const T*>(in), rows, len, k, descending, topk, static_cast<T*>(values), indices);
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(sort_stub, &sort_kernel);

}  // namespace tp::cpu::TP_CPU_NS
