// The CPU loops of embedding bags (Note [Embedding bags] in csrc/ops/nn_embedding.cpp): the
// forward's sum / mean / max of each bag's weight rows, the weight gradient (column blocks
// per thread) and the per_sample_weights gradient. Compiled once per CPU capability level.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/cpu_stubs.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

/// Calls f(T{}, A{}) for a floating dtype: its element type and its accumulation type
/// (float32 for float16 / bfloat16).
template <class F>
void visit_weight(DType dt, F&& f) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      f(t, std::conditional_t<std::is_floating_point_v<T>, T, float>{});
  });
}

/// Splits [0, n) into blocks for the threads (at least `min_block` long each).
int64_t blocks_for(int64_t n, int64_t min_block) {
  return std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / std::max<int64_t>(min_block, 1)));
}

template <class T, class A>
void bag_forward(const int64_t* ix, const int64_t* begin, int64_t nb, const T* w, int64_t D, const T* psw,
                 int64_t mode, int64_t pad, T* out, int64_t* bag_size, int64_t* max_idx) {
  const int64_t per_bag = std::max<int64_t>(1, nb ? (begin[nb] / nb + 1) * D : 1);  // D may be 0
  parallel_for(0, nb, std::max<int64_t>(1, 16384 / per_bag), [&](int64_t b0, int64_t b1) {
    std::vector<A> acc(static_cast<size_t>(D));
    std::vector<int64_t> arg(static_cast<size_t>(D));
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(acc.begin(), acc.end(), A(0));
      std::fill(arg.begin(), arg.end(), int64_t(0));
      int64_t count = 0;
      for (int64_t i = begin[b]; i < begin[b + 1]; ++i) {
        const int64_t r = ix[i];
        if (r == pad) continue;
        const T* row = w + r * D;
        if (mode == kMax) {
          for (int64_t d = 0; d < D; ++d) {
            const A v = A(row[d]);
            if (count == 0 || v > acc[size_t(d)]) {
              acc[size_t(d)] = v;
              arg[size_t(d)] = r;
            }
          }
        } else if (psw) {
          const A s = A(psw[i]);
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += A(row[d]) * s;
        } else {
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += A(row[d]);
        }
        ++count;
      }
      T* o = out + b * D;
      if (mode == kMean && count > 0) {
        for (int64_t d = 0; d < D; ++d) o[d] = T(acc[size_t(d)] / A(count));
      } else {
        for (int64_t d = 0; d < D; ++d) o[d] = T(acc[size_t(d)]);
      }
      if (mode != kSum) bag_size[b] = count;
      if (mode == kMax) std::copy(arg.begin(), arg.end(), max_idx + b * D);
    }
  });
}

void embedding_bag_kernel(DType dt, const int64_t* index, const int64_t* begin, int64_t num_bags,
                          const void* weight, int64_t D, const void* per_sample_weights, int64_t mode,
                          int64_t padding_idx, void* out, int64_t* bag_size, int64_t* max_indices) {
  visit_weight(dt, [&](auto t, auto a) {
    using T = decltype(t);
    bag_forward<T, decltype(a)>(index, begin, num_bags, static_cast<const T*>(weight), D,
                                static_cast<const T*>(per_sample_weights), mode, padding_idx, static_cast<T*>(out),
                                bag_size, max_indices);
  });
}

void embedding_bag_backward_kernel(DType dt, const void* grad, int64_t D, const int64_t* rows,
                                   const int64_t* bag_of, const void* scale, int64_t m, void* grad_weight) {
  visit_weight(dt, [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    const T* gp = static_cast<const T*>(grad);
    const A* sc = static_cast<const A*>(scale);
    A* out = static_cast<A*>(grad_weight);
    const int64_t blocks = blocks_for(D, 16), per = (D + blocks - 1) / blocks;
    parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
      const int64_t c0 = k0 * per, c1 = std::min(D, k1 * per);
      for (int64_t j = 0; j < m; ++j) {
        A* dst = out + rows[j] * D;
        const T* src = gp + bag_of[j] * D;
        const A s = sc[j];
        for (int64_t d = c0; d < c1; ++d) dst[d] += A(src[d]) * s;
      }
    });
  });
}

void embedding_bag_max_backward_kernel(DType dt, const void* grad, int64_t num_bags, int64_t D,
                                       const int64_t* bag_size, const int64_t* max_indices, void* grad_weight) {
  visit_weight(dt, [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    const T* gp = static_cast<const T*>(grad);
    A* out = static_cast<A*>(grad_weight);
    const int64_t blocks = blocks_for(D, 16), per = (D + blocks - 1) / blocks;
    parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
      const int64_t c0 = k0 * per, c1 = std::min(D, k1 * per);
      for (int64_t b = 0; b < num_bags; ++b)
        if (bag_size[b] > 0)
          for (int64_t d = c0; d < c1; ++d) out[max_indices[b * D + d] * D + d] += A(gp[b * D + d]);
    });
  });
}

void embedding_bag_per_sample_weights_backward_kernel(DType dt, const void* grad, const void* weight,
                                                      const int64_t* index, const int64_t* begin, int64_t num_bags,
                                                      int64_t D, int64_t padding_idx, void* out) {
  visit_weight(dt, [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    const T *gp = static_cast<const T*>(grad), *wp = static_cast<const T*>(weight);
    T* o = static_cast<T*>(out);
    const int64_t n = begin[num_bags];
    parallel_for(0, num_bags,
                 std::max<int64_t>(1, 16384 / std::max<int64_t>(D * (n / std::max<int64_t>(num_bags, 1) + 1), 1)),
                 [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t i = begin[b]; i < begin[b + 1]; ++i) {
          A acc = 0;
          if (index[i] != padding_idx) {
            const T *gr = gp + b * D, *wr = wp + index[i] * D;
            for (int64_t d = 0; d < D; ++d) acc += A(gr[d]) * A(wr[d]);
          }
          o[i] = T(acc);
        }
    });
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(embedding_bag_stub, &embedding_bag_kernel);
TP_REGISTER_CPU_KERNEL(embedding_bag_backward_stub, &embedding_bag_backward_kernel);
TP_REGISTER_CPU_KERNEL(embedding_bag_max_backward_stub, &embedding_bag_max_backward_kernel);
TP_REGISTER_CPU_KERNEL(embedding_bag_per_sample_weights_backward_stub,
                       &embedding_bag_per_sample_weights_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
