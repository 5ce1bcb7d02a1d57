// The CUDA random ops' per-element transforms (Note [Philox streams] in philox.h), written
// once for the kernels and for the host reference that tests compare them with.
//
// A sampler serves K = kPerBlock consecutive elements from one Philox block:
// `s(block, i0, count)` writes elements i0 .. i0 + count - 1 of its output(s). The
// `dispatch_*` functions turn an op's arguments into the sampler for a dtype and hand it
// to `run` (a kernel launch in csrc/cuda/random_*.cu, a host loop in the reference).
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/portable_math.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace tp::philox {

// ---------------------------------------------------------------- element access
/// The arithmetic type of a dtype's transforms: double for float64, float otherwise.
template <class T> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };
template <class T> using acc_t = typename AccOf<T>::type;

TP_HD uint16_t half_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(v));
#else
  return Half::from_float(v);
#endif
}
TP_HD uint16_t bfloat16_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
#else
  return BFloat16::from_float(v);
#endif
}
TP_HD float half_value(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return Half::to_float(h);
#endif
}
TP_HD float bfloat16_value(uint16_t h) { return pmath::float_from_bits(uint32_t(h) << 16); }

/// Stores a floating value, rounded to the element type.
TP_HD void store(float* p, float v) { *p = v; }
TP_HD void store(double* p, double v) { *p = v; }
TP_HD void store(Half* p, float v) { p->x = half_bits(v); }
TP_HD void store(BFloat16* p, float v) { p->x = bfloat16_bits(v); }

TP_HD float load(const float* p) { return *p; }
TP_HD double load(const double* p) { return *p; }
TP_HD float load(const Half* p) { return half_value(p->x); }
TP_HD float load(const BFloat16* p) { return bfloat16_value(p->x); }

/// v rounded to T's precision (and back to the arithmetic type).
template <class T>
TP_HD acc_t<T> round_to(acc_t<T> v) {
  if constexpr (std::is_same_v<T, Half>) return half_value(half_bits(v));
  else if constexpr (std::is_same_v<T, BFloat16>) return bfloat16_value(bfloat16_bits(v));
  else return v;
}

/// Stores slots 0 .. count - 1 of v at out + i0. On the GPU a whole aligned block of K
/// slots goes out as one vector store (16 bytes for float / double, 8 for the half types):
/// four scalar stores per thread would quadruple the store instructions of a fill that
/// is bound by write bandwidth.
template <class T, class A, int K>
TP_HD void store_slots(T* out, int64_t i0, const A (&v)[K], int count) {
#if defined(__CUDA_ARCH__)
  T* p = out + i0;
  if (count == K && reinterpret_cast<uintptr_t>(p) % (sizeof(T) * K) == 0) {
    if constexpr (std::is_same_v<T, float> && K == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
      return;
    } else if constexpr (std::is_same_v<T, double> && K == 2) {
      *reinterpret_cast<double2*>(p) = make_double2(v[0], v[1]);
      return;
    } else if constexpr ((std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) && K == 4) {
      auto bits = [](float x) -> uint32_t {
        if constexpr (std::is_same_v<T, Half>) return half_bits(x);
        else return bfloat16_bits(x);
      };
      *reinterpret_cast<uint2*>(p) =
          make_uint2(bits(v[0]) | bits(v[1]) << 16, bits(v[2]) | bits(v[3]) << 16);
      return;
    }
  }
#endif
  for (int j = 0; j < count; ++j) store(out + i0 + j, v[j]);
}

/// Stores an integer value: integers wrap (in range by construction), bool is v != 0,
/// floating types round once (int64 -> float -> 16-bit for the 16-bit types).
template <class T>
TP_HD void store_int(T* p, int64_t v) {
  if constexpr (std::is_same_v<T, bool>) *p = v != 0;
  else if constexpr (std::is_integral_v<T>) *p = T(v);
  else if constexpr (std::is_same_v<T, double>) *p = double(v);
  else store(p, float(v));
}

/// Stores a double holding an integral value >= 1 (or inf): integer types saturate at
/// their maximum, floating types round.
template <class T>
TP_HD void store_count(T* p, double v) {
  if constexpr (std::is_integral_v<T>) {
    constexpr double top = double(std::numeric_limits<T>::max());
    *p = v >= top ? std::numeric_limits<T>::max() : T(int64_t(v));
  } else if constexpr (std::is_same_v<T, double>) {
    *p = v;
  } else {
    store(p, float(v));
  }
}

// ---------------------------------------------------------------- words to numbers
/// (w >> 8) 2^-24 in [0, 1).
TP_HD float unit24(uint32_t w) { return pmath::mul(float(w >> 8), 0x1p-24f); }
/// (x >> 11) 2^-53 in [0, 1).
TP_HD double unit53(uint64_t x) { return pmath::mul(double(x >> 11), 0x1p-53); }
/// fl((w + 1) 2^-32) in (0, 1].
TP_HD float open_unit32(uint32_t w) { return pmath::mul(float(int64_t(w) + 1), 0x1p-32f); }
/// ((x >> 11) + 1) 2^-53 in (0, 1].
TP_HD double open_unit53(uint64_t x) { return pmath::mul(double((x >> 11) + 1), 0x1p-53); }

/// The unit draw of slot j: 24 bits of w_j for float math (K = 4), 53 of x_j for double.
template <class A>
TP_HD A unit(const Block& b, int j) {
  if constexpr (std::is_same_v<A, double>) return unit53(draw64(b, j));
  else return unit24(b.w[j]);
}
template <class A>
TP_HD A open_unit(const Block& b, int j) {
  if constexpr (std::is_same_v<A, double>) return open_unit53(draw64(b, j));
  else return open_unit32(b.w[j]);
}

/// Elements per block for a transform in A: one word each in float, two in double.
template <class A> constexpr int per_block() { return std::is_same_v<A, double> ? 2 : 4; }

/// Box-Muller: two standard normals from u1 in (0, 1] and u2 in [0, 1).
template <class A>
TP_HD void box_muller(A u1, A u2, A* z0, A* z1) {
  const A r = pmath::sqrt(pmath::mul(A(-2), pmath::log(u1)));
  A s, c;
  pmath::sincospi(pmath::add(u2, u2), &s, &c);
  *z0 = pmath::mul(r, c);
  *z1 = pmath::mul(r, s);
}

// ---------------------------------------------------------------- samplers
template <class T>
struct Uniform {
  using A = acc_t<T>;
  static constexpr int kPerBlock = per_block<A>();
  T* out;
  A from, span, to_rounded, from_rounded;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    A v[kPerBlock];
    for (int j = 0; j < kPerBlock; ++j) {
      v[j] = round_to<T>(pmath::fma(unit<A>(b, j), span, from));
      if (v[j] == to_rounded) v[j] = from_rounded;
    }
    store_slots(out, i0, v, count);
  }
};

/// normal_ (log_normal_ with kExp: e to the power of the normal value).
template <class T, bool kExp>
struct Normal {
  using A = acc_t<T>;
  static constexpr int kPerBlock = per_block<A>();
  T* out;
  A mean, std;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    A z[kPerBlock];
    if constexpr (std::is_same_v<A, double>) {
      box_muller(open_unit53(draw64(b, 0)), unit53(draw64(b, 1)), &z[0], &z[1]);
    } else {
      box_muller(open_unit32(b.w[0]), unit24(b.w[1]), &z[0], &z[1]);
      box_muller(open_unit32(b.w[2]), unit24(b.w[3]), &z[2], &z[3]);
    }
    for (int j = 0; j < kPerBlock; ++j) {
      z[j] = pmath::fma(z[j], std, mean);
      if constexpr (kExp) z[j] = pmath::exp(z[j]);
    }
    store_slots(out, i0, z, count);
  }
};

template <class T>
struct Exponential {
  using A = acc_t<T>;
  static constexpr int kPerBlock = per_block<A>();
  T* out;
  A lambda;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j)
      store(out + i0 + j, pmath::div(pmath::sub(A(0), pmath::log(open_unit<A>(b, j))), lambda));
  }
};

template <class T>
struct Cauchy {
  using A = acc_t<T>;
  static constexpr int kPerBlock = per_block<A>();
  T* out;
  A median, sigma;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      A t;  // an odd multiple of 2^-24 (2^-53) in (-1/2, 1/2)
      if constexpr (std::is_same_v<A, double>)
        t = pmath::mul(double(int64_t(draw64(b, j) >> 12) * 2 - (int64_t(1) << 52) + 1), 0x1p-53);
      else
        t = pmath::mul(float(int32_t(b.w[j] >> 9) * 2 - (1 << 23) + 1), 0x1p-24f);
      A s, c;
      pmath::sincospi(t, &s, &c);
      store(out + i0 + j, pmath::fma(sigma, pmath::div(s, c), median));
    }
  }
};

template <class T>
struct Geometric {
  static constexpr int kPerBlock = 2;
  T* out;
  double log1m_p;  // log1p(-p) < 0
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      const double u = pmath::mul(double((draw64(b, j) >> 12) * 2 + 1), 0x1p-53);  // (0, 1)
      store_count(out + i0 + j, pmath::ceil(pmath::div(pmath::log(u), log1m_p)));
    }
  }
};

/// random_: base + draw % range, with 32-bit draws (range <= 2^32; range 2^32 is stored
/// as 0) or 64-bit ones (kWide; range 0 means 2^64).
template <class T, bool kWide>
struct RandomRange {
  static constexpr int kPerBlock = kWide ? 2 : 4;
  T* out;
  uint64_t base;
  uint64_t range;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      uint64_t r;
      if constexpr (kWide) {
        const uint64_t x = draw64(b, j);
        r = range ? x % range : x;
      } else {
        const uint32_t w = b.w[j], r32 = uint32_t(range);
        r = r32 ? w % r32 : w;
      }
      store_int(out + i0 + j, int64_t(base + r));
    }
  }
};

/// A hit when the draw is below `threshold` = p 2^32 (32-bit words) or p 2^53 (the top 53
/// bits of a 64-bit draw, kWide): probability p up to 2^-32 (2^-53), exactly 0 and 1 at
/// the ends.
template <bool kWide>
TP_HD bool bernoulli_hit(const Block& b, int j, double threshold) {
  if constexpr (kWide) return double(draw64(b, j) >> 11) < threshold;
  else return double(b.w[j]) < threshold;
}
constexpr double kScale32 = 4294967296.0;        // 2^32
constexpr double kScale53 = 9007199254740992.0;  // 2^53

template <class T, bool kWide>
struct BernoulliScalar {
  static constexpr int kPerBlock = kWide ? 2 : 4;
  T* out;
  double threshold;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j)
      store_int(out + i0 + j, bernoulli_hit<kWide>(b, j, threshold) ? 1 : 0);
  }
};

/// p per element (float, or double for float64 outputs), laid out like the output.
template <class T, class P>
struct BernoulliTensor {
  static constexpr bool kWide = std::is_same_v<P, double>;
  static constexpr int kPerBlock = kWide ? 2 : 4;
  T* out;
  const P* p;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      const double threshold = double(p[i0 + j]) * (kWide ? kScale53 : kScale32);
      store_int(out + i0 + j, bernoulli_hit<kWide>(b, j, threshold) ? 1 : 0);
    }
  }
};

/// native_dropout: keep with probability 1 - p; out = x * (keep * scale), the scale rounded
/// to T first (PyTorch's CPU path scales the mask in x's dtype), mask = keep.
template <class T>
struct Dropout {
  using A = acc_t<T>;
  static constexpr int kPerBlock = 4;
  const T* in;
  T* out;
  bool* mask;
  double threshold;  // (1 - p) 2^32
  A scale;           // 1 / (1 - p) rounded to T
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      const bool keep = bernoulli_hit<false>(b, j, threshold);
      store(out + i0 + j, pmath::mul(load(in + i0 + j), keep ? scale : A(0)));
      mask[i0 + j] = keep;
    }
  }
};

// ---------------------------------------------------------------- launches
/// Philox blocks a launch of n elements uses.
template <class S>
constexpr int64_t blocks_for(int64_t n) {
  return (n + S::kPerBlock - 1) / S::kPerBlock;
}

/// Block `blk` of a launch over n elements (the body of every kernel and of the host loop).
template <class S>
TP_HD void run_block(const S& s, LaunchArgs a, int64_t blk, int64_t n) {
  const int64_t i0 = blk * S::kPerBlock;
  const int64_t left = n - i0;
  s(block_at(a.seed, a.counter + uint64_t(blk)), i0,
    int(left < S::kPerBlock ? left : S::kPerBlock));
}

// ---------------------------------------------------------------- op -> sampler
// Arguments arrive checked (csrc/ops/random.cpp); `out` is n dense elements of `dt`.

[[noreturn]] inline void unsupported(const char* op, DType dt) {
  TP_FAIL_NOT_IMPLEMENTED("\"", op, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// Calls f(T{}) for the floating dtypes.
template <class F>
void visit_floating(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    default: unsupported(op, dt);
  }
}

template <class Run>
void dispatch_uniform(Run&& run, DType dt, void* out, double from, double to) {
  visit_floating(dt, "uniform_kernel_cuda", [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    const A f = A(from), t = A(to);
    run(Uniform<T>{static_cast<T*>(out), f, pmath::sub(t, f), round_to<T>(t), round_to<T>(f)});
  });
}

template <class Run>
void dispatch_normal(Run&& run, DType dt, void* out, double mean, double std, bool log_normal) {
  visit_floating(dt, log_normal ? "log_normal_cuda" : "normal_kernel_cuda", [&](auto v) {
    using T = decltype(v);
    using A = acc_t<T>;
    if (log_normal) run(Normal<T, true>{static_cast<T*>(out), A(mean), A(std)});
    else run(Normal<T, false>{static_cast<T*>(out), A(mean), A(std)});
  });
}

template <class Run>
void dispatch_exponential(Run&& run, DType dt, void* out, double lambda) {
  visit_floating(dt, "exponential_cuda", [&](auto v) {
    using T = decltype(v);
    run(Exponential<T>{static_cast<T*>(out), acc_t<T>(lambda)});
  });
}

template <class Run>
void dispatch_cauchy(Run&& run, DType dt, void* out, double median, double sigma) {
  visit_floating(dt, "cauchy_cuda", [&](auto v) {
    using T = decltype(v);
    run(Cauchy<T>{static_cast<T*>(out), acc_t<T>(median), acc_t<T>(sigma)});
  });
}

template <class Run>
void dispatch_geometric(Run&& run, DType dt, void* out, double p) {
  if (dt == DType::Bool) unsupported("geometric_cuda", dt);
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, bool>) run(Geometric<T>{static_cast<T*>(out), std::log1p(-p)});
  });
}

/// random_ over [base, base + range) (range 0: every 64-bit value).
template <class Run>
void dispatch_random(Run&& run, DType dt, void* out, int64_t base, uint64_t range) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if (range != 0 && range <= (uint64_t(1) << 32))
      run(RandomRange<T, false>{static_cast<T*>(out), uint64_t(base), range});
    else
      run(RandomRange<T, true>{static_cast<T*>(out), uint64_t(base), range});
  });
}

template <class Run>
void dispatch_bernoulli_scalar(Run&& run, DType dt, void* out, double p) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if (dt == DType::Float64) run(BernoulliScalar<T, true>{static_cast<T*>(out), p * kScale53});
    else run(BernoulliScalar<T, false>{static_cast<T*>(out), p * kScale32});
  });
}

/// `p` holds n probabilities laid out like `out`: double for a float64 output, else float.
template <class Run>
void dispatch_bernoulli_tensor(Run&& run, DType dt, void* out, const void* p) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if (dt == DType::Float64)
      run(BernoulliTensor<T, double>{static_cast<T*>(out), static_cast<const double*>(p)});
    else
      run(BernoulliTensor<T, float>{static_cast<T*>(out), static_cast<const float*>(p)});
  });
}

/// native_dropout with keep probability 1 - p: `in`, `out` (dtype dt) and `mask` (bool)
/// are n dense elements in the same order.
template <class Run>
void dispatch_dropout(Run&& run, DType dt, const void* in, void* out, bool* mask, double p) {
  const double keep = 1.0 - p;
  const double scale = keep == 0.0 ? 0.0 : 1.0 / keep;
  visit_floating(dt, "native_dropout_cuda", [&](auto v) {
    using T = decltype(v);
    run(Dropout<T>{static_cast<const T*>(in), static_cast<T*>(out), mask, keep * kScale32,
                   round_to<T>(acc_t<T>(scale))});
  });
}

// ---------------------------------------------------------------- multinomial, poisson
// (randperm needs no sampler of its own: its keys are random_'s full-range int64 values.)

/// A unit draw strictly inside (0, 1): (2 (w >> 9) + 1) 2^-24 from a word, (2 (x >> 12)
/// + 1) 2^-53 from a 64-bit draw (both odd multiples of the last bit, so log u < 0).
TP_HD float inner_unit24(uint32_t w) { return pmath::mul(float((w >> 9) * 2 + 1), 0x1p-24f); }
TP_HD double inner_unit53(uint64_t x) { return pmath::mul(double((x >> 12) * 2 + 1), 0x1p-53); }

/// multinomial without replacement (and with one sample): the key p_i / E_i of each
/// probability, E_i = -log u_i ~ Exp(1); the top keys of a row are the samples. E_i > 0,
/// so every key is finite or +inf and a zero probability's key is 0. P: float or double.
template <class P>
struct MultinomialKeys {
  static constexpr int kPerBlock = per_block<P>();
  const P* p;
  P* keys;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      P u;
      if constexpr (std::is_same_v<P, double>) u = inner_unit53(draw64(b, j));
      else u = inner_unit24(b.w[j]);
      keys[i0 + j] = pmath::div(p[i0 + j], pmath::sub(P(0), pmath::log(u)));
    }
  }
};

/// multinomial with replacement: sample i (of row r = i / n_sample) is the first category c
/// with cum[r, c] >= max(u cum[r, last], 2^-1074), a binary search of the row's inclusive
/// sums; the floor keeps categories of probability zero out even when u total underflows.
struct MultinomialDraws {
  static constexpr int kPerBlock = 2;
  const double* cum;  // rows x n_categories, contiguous
  int64_t* out;       // rows x n_sample, contiguous
  int64_t n_categories, n_sample;
  TP_HD void operator()(const Block& b, int64_t i0, int count) const {
    for (int j = 0; j < kPerBlock && j < count; ++j) {
      const int64_t i = i0 + j;
      const double* row = cum + (i / n_sample) * n_categories;
      double target = pmath::mul(inner_unit53(draw64(b, j)), row[n_categories - 1]);
      if (target < 0x1p-1074) target = 0x1p-1074;
      int64_t lo = 0, hi = n_categories - 1;  // the answer lies in [lo, hi]
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (row[mid] < target) lo = mid + 1;
        else hi = mid;
      }
      out[i] = lo;
    }
  }
};

/// The unit draws of element i's own stream (samplers with kOwnStreams): block t = 0, 1, ...
/// is Philox(counter = (lo32(c0 + i), hi32(c0 + i), t, 0)), each giving inner_unit53 of x_0
/// then of x_1.
class StreamUniforms {
 public:
  TP_HD StreamUniforms(LaunchArgs a, int64_t i)
      : seed_(a.seed), counter_(a.counter + uint64_t(i)) {}
  TP_HD double next() {
    if (slot_ == 2) {
      block_ = philox4x32_10(uint32_t(counter_), uint32_t(counter_ >> 32), t_++, 0u,
                             uint32_t(seed_), uint32_t(seed_ >> 32));
      slot_ = 0;
    }
    return inner_unit53(draw64(block_, slot_++));
  }

 private:
  uint64_t seed_, counter_;
  uint32_t t_ = 0;
  int slot_ = 2;
  Block block_{};
};

/// log(k!) for an integral k >= 0: a table below 16, else Stirling's series for log
/// Gamma(k + 1) up to its x^-7 term (error below 1e-14).
TP_HD double log_factorial(double k) {
  constexpr double table[16] = {
      0.0, 0.0, 0.6931471805599453, 1.791759469228055, 3.1780538303479458, 4.787491742782046,
      6.579251212010101, 8.525161361065415, 10.60460290274525, 12.801827480081469,
      15.104412573075516, 17.502307845873887, 19.987214495661885, 22.552163853123425,
      25.19122118273868, 27.89927138384089};
  if (k < 16) return table[int(k)];
  const double x = pmath::add(k, 1.0);
  const double r = pmath::div(1.0, x);
  constexpr double c[] = {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680};
  const double series = pmath::mul(r, pmath::horner(pmath::mul(r, r), c));
  constexpr double half_log_2pi = 0.9189385332046728;
  return pmath::add(pmath::add(pmath::fma(pmath::sub(x, 0.5), pmath::log(x), -x), half_log_2pi),
                    series);
}

constexpr int kPoissonMaxSteps = 1000;  // bounds both loops; never reached in practice

/// A Poisson(lambda) count from a stream of unit draws, in double math: the
/// multiplication method below rate 10, Hoermann's transformed rejection (PTRS) from 10 on.
/// lambda = 0 gives 0 without drawing (negative and NaN rates are refused before a launch).
TP_HD double poisson_value(double lambda, StreamUniforms& u) {
  if (!(lambda > 0)) return 0;
  if (lambda < 10) {
    const double limit = pmath::exp(-lambda);
    double prod = 1;
    int x = 0;
    for (; x < kPoissonMaxSteps; ++x) {
      prod = pmath::mul(prod, u.next());
      if (!(prod > limit)) break;
    }
    return x;
  }
  const double slam = pmath::sqrt(lambda), loglam = pmath::log(lambda);
  const double b = pmath::add(0.931, pmath::mul(2.53, slam));
  const double a = pmath::add(-0.059, pmath::mul(0.02483, b));
  const double log_invalpha =
      pmath::log(pmath::add(1.1239, pmath::div(1.1328, pmath::sub(b, 3.4))));
  const double vr = pmath::sub(0.9277, pmath::div(3.6224, pmath::sub(b, 2.0)));
  double k = 0;
  for (int step = 0; step < kPoissonMaxSteps; ++step) {
    const double U = pmath::sub(u.next(), 0.5);
    const double V = u.next();
    const double us = pmath::sub(0.5, U < 0 ? -U : U);
    const double slope = pmath::add(pmath::div(pmath::mul(2.0, a), us), b);
    k = pmath::floor(pmath::add(pmath::add(pmath::mul(slope, U), lambda), 0.43));
    if (us >= 0.07 && V <= vr) break;
    if (k < 0 || (us < 0.013 && V > us)) continue;
    const double lhs = pmath::sub(pmath::add(pmath::log(V), log_invalpha),
                                  pmath::log(pmath::add(pmath::div(a, pmath::mul(us, us)), b)));
    const double rhs = pmath::sub(pmath::add(-lambda, pmath::mul(k, loglam)), log_factorial(k));
    if (lhs <= rhs) break;
  }
  return k;
}

/// poisson: element i's count from its own stream; rates laid out like the output.
template <class T>
struct Poisson {
  static constexpr int kPerBlock = 1;  // one block counter per element: its stream
  static constexpr bool kOwnStreams = true;
  const T* rate;
  T* out;
  TP_HD void operator()(LaunchArgs a, int64_t i) const {
    StreamUniforms u(a, i);
    const double v = poisson_value(double(load(rate + i)), u);
    if constexpr (std::is_same_v<T, double>) store(out + i, v);
    else store(out + i, float(v));
  }
};

/// Unit `unit` of a launch over n elements (the body of every kernel and of the host loop):
/// Philox block `unit` of a K-element sampler, or element `unit` of a kOwnStreams one.
template <class S>
TP_HD void run_unit(const S& s, LaunchArgs a, int64_t unit, int64_t n) {
  if constexpr (requires { S::kOwnStreams; }) s(a, unit);
  else run_block(s, a, unit, n);
}

/// `p`: n contiguous probabilities, float (keys in float) or double; `keys` alike.
template <class Run>
void dispatch_multinomial_keys(Run&& run, DType dt, const void* p, void* keys) {
  if (dt == DType::Float64)
    run(MultinomialKeys<double>{static_cast<const double*>(p), static_cast<double*>(keys)});
  else
    run(MultinomialKeys<float>{static_cast<const float*>(p), static_cast<float*>(keys)});
}

/// `cum`: rows x n_categories float64 inclusive sums; `out`: rows x n_sample int64.
template <class Run>
void dispatch_multinomial_draws(Run&& run, const double* cum, int64_t* out, int64_t n_categories,
                                int64_t n_sample) {
  run(MultinomialDraws{cum, out, n_categories, n_sample});
}

/// `rate` and `out`: n dense elements of the floating dtype dt in the same order.
template <class Run>
void dispatch_poisson(Run&& run, DType dt, const void* rate, void* out) {
  visit_floating(dt, "poisson_cuda", [&](auto v) {
    using T = decltype(v);
    run(Poisson<T>{static_cast<const T*>(rate), static_cast<T*>(out)});
  });
}

}  // namespace tp::philox
