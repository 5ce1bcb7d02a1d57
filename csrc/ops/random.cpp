// Random sampling ops (csrc/ops/random.yaml). Each checks its arguments with PyTorch's
// messages, then makes exactly the draws PyTorch's CPU kernels make, in their order, so a
// seed reproduces PyTorch's numbers (docs/random.md lists the draws per op).
//
// Speed comes from drawing the generator's words in blocks (random/mt19937.h fills a
// buffer per twist) and transforming them in tight loops, rather than one virtual call
// per element; where PyTorch transforms a whole tensor after drawing (normal's
// Box-Muller), the transform runs on all threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "random/capability.h"
#include "random/cpu_generator.h"
#include "random/distributions.h"
#include "random/vec_avx2.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/random.h"
#endif

namespace tp {

using random::CPUGenerator;

namespace {

constexpr int64_t kChunk = 2048;  // words drawn per block

// ------------------------------------------------------------------ element order
/// The order PyTorch's serial kernels visit a lone output: memory order, i.e. dims by
/// decreasing stride (outermost first). `sizes`/`strides` come back in that order.
void iteration_geometry(const Tensor& t, DimVector& sizes, DimVector& strides) {
  DimVector perm(t.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  sizes.resize(0);
  strides.resize(0);
  for (int64_t d : perm) {
    sizes.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
}

/// Calls f(k, offset) for the elements of a (sizes, strides) geometry in row-major order.
template <class F>
void walk(IntArrayRef sizes, IntArrayRef strides, F&& f) {
  const int64_t nd = int64_t(sizes.size());
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  DimVector idx(nd, 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    f(k, off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) { off += strides[d]; break; }
      off -= strides[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

bool dense_in_order(IntArrayRef sizes, IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

/// Runs fill(T* p, n), which produces t's n elements in iteration order, writing them
/// straight into t when that order is dense, else through a buffer scattered back.
template <class T, class Fill>
void fill_ordered(const Tensor& t, Fill&& fill) {
  const int64_t n = t.numel();
  if (t.is_contiguous()) return fill(t.data<T>(), n);
  DimVector sizes, strides;
  iteration_geometry(t, sizes, strides);
  if (dense_in_order(sizes, strides)) return fill(t.data<T>(), n);
  std::unique_ptr<T[]> buf(new T[size_t(n)]);
  fill(buf.get(), n);
  T* base = t.data<T>();
  walk(sizes, strides, [&](int64_t k, int64_t off) { base[off] = buf[size_t(k)]; });
}

void check_no_internal_overlap(const Tensor& t) {
  if (t.numel() <= 1 || t.impl()->is_non_overlapping_and_dense()) return;
  for (int64_t d = 0; d < t.dim(); ++d)
    TP_CHECK(!(t.stride(d) == 0 && t.size(d) > 1),
             "unsupported operation: more than one element of the written-to tensor refers to a "
             "single memory location. Please clone() the tensor before performing the operation.");
}

void check_cpu(const Tensor& t) {
  TP_CHECK(t.device().is_cpu(), "no ", t.device().str(), " kernel yet");
}

/// Whether t is a CUDA tensor (the ops marked `cuda: true` in random.yaml branch on it
/// after the argument checks they share with the CPU path).
bool on_cuda([[maybe_unused]] const Tensor& t) {
#ifdef TP_USE_CUDA
  return t.device().is_cuda();
#else
  return false;
#endif
}

/// The ops with CUDA kernels accept CPU and CUDA tensors; every op takes meta tensors, on
/// which it checks its arguments, makes its outputs and returns before drawing anything
/// (PyTorch's meta samplers leave the generators alone too).
void check_device(const Tensor& t) {
  if (!on_cuda(t) && !is_meta(t)) check_cpu(t);
}

[[noreturn]] void not_implemented(const char* kernel, DType dt) {
  TP_FAIL_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

void require_floating(const Tensor& t, const char* kernel) {
  if (!is_floating(t.dtype())) not_implemented(kernel, t.dtype());
}

/// Calls f(T{}) for floating dtypes (float16, bfloat16, float32, float64).
template <class F>
void visit_floating(DType dt, const char* kernel, F&& f) {
  switch (dt) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    default: not_implemented(kernel, dt);
  }
}

template <class T> constexpr int mantissa_digits() { return std::numeric_limits<T>::digits; }
template <> constexpr int mantissa_digits<Half>() { return 11; }
template <> constexpr int mantissa_digits<BFloat16>() { return 8; }

template <class T> double lowest_of() { return double(std::numeric_limits<T>::lowest()); }
template <> double lowest_of<Half>() { return -65504.0; }
template <> double lowest_of<BFloat16>() { return -3.3895313892515355e38; }
template <class T> double max_of() { return double(std::numeric_limits<T>::max()); }
template <> double max_of<Half>() { return 65504.0; }
template <> double max_of<BFloat16>() { return 3.3895313892515355e38; }

// ------------------------------------------------------------------ bulk draws
/// Calls f(words, i0, m) over blocks of n consecutive 32-bit draws.
template <class F>
void draw32(CPUGenerator& g, int64_t n, F&& f) {
  uint32_t w[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    g.engine.fill(w, m);
    f(w, i, m);
  }
}

/// Calls f(words, i0, m) over blocks of n consecutive 64-bit draws (random64()).
template <class F>
void draw64(CPUGenerator& g, int64_t n, F&& f) {
  uint32_t w[2 * kChunk];
  uint64_t v[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    g.engine.fill(w, 2 * m);
    for (int64_t j = 0; j < m; ++j) v[j] = (uint64_t(w[2 * j]) << 32) | w[2 * j + 1];
    f(v, i, m);
  }
}

// ------------------------------------------------------------------ uniform
/// n samples of uniform_real_distribution<float>(from, to) (one word each).
void uniform_floats(CPUGenerator& g, float* out, int64_t n, float from, float to, bool fused) {
  const float span = to - from;
  const bool identity = from == 0.0f && span == 1.0f;  // x * 1 + 0 == x, fused or not
  draw32(g, n, [&](const uint32_t* w, int64_t i0, int64_t m) {
    float* o = out + i0;
    if (identity) {
      for (int64_t j = 0; j < m; ++j) o[j] = random::uniform24(w[j]);
    } else if (fused) {
      random::uniform_float_fma_avx2(w, o, m, from, span);
    } else {
      for (int64_t j = 0; j < m; ++j) o[j] = random::uniform24(w[j]) * span + from;
    }
  });
}

template <class T>
void uniform_kernel(const Tensor& self, double from, double to, CPUGenerator& g) {
  const bool fused = random::vector_capability();
  fill_ordered<T>(self, [&](T* out, int64_t n) {
    if constexpr (std::is_same_v<T, double>) {
      const double span = to - from;
      draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
        for (int64_t j = 0; j < m; ++j) {
          double v = random::muladd(random::uniform53(w[j]), span, from, fused);
          out[i0 + j] = v == to ? from : v;
        }
      });
    } else {
      // float math (PyTorch's opmath); a half result that rounds up to `to` becomes `from`
      const float f = float(from), t = float(to);
      const T t_cast = T(float(to)), f_cast = T(float(from));
      float buf[kChunk];
      for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        uniform_floats(g, buf, m, f, t, fused);
        for (int64_t j = 0; j < m; ++j) {
          T v = T(buf[j]);
          out[i + j] = v == t_cast ? f_cast : v;
        }
      }
    }
  });
}

void check_uniform_bounds(const Tensor& self, double& from, double& to) {
  visit_floating(self.dtype(), "check_uniform_bounds", [&](auto v) {
    using T = decltype(v);
    const double lo = lowest_of<T>(), hi = max_of<T>();
    const char* name = cpp_type_name(self.dtype());
    TP_CHECK(from >= lo && from <= hi, "from is out of bounds for ", name);
    TP_CHECK(to >= lo && to <= hi, "to is out of bounds for ", name);
    TP_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
             " > to=", to);
    TP_CHECK(to - from <= hi, "uniform_ expects to-from <= std::numeric_limits<",
             dtype_scalar_name(self.dtype()), ">::max(), but found to=", to, " and from=", from,
             " which result in to-from to exceed the limit");
  });
}

void uniform_fill(const Tensor& self, double from, double to, const std::optional<Generator>& gen) {
  check_uniform_bounds(self, from, to);
  if (self.numel() == 0) return;
  check_no_internal_overlap(self);
  if (is_meta(self)) return;
#ifdef TP_USE_CUDA
  if (on_cuda(self)) return cuda::uniform_(self, from, to, gen);
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_floating(self.dtype(), "uniform_kernel_cpu", [&](auto v) {
    uniform_kernel<decltype(v)>(self, from, to, g);
  });
}

// ------------------------------------------------------------------ normal
/// The scalar Box-Muller of PyTorch's baseline build on one block of 16 (opmath T).
template <class T>
void box_muller16_scalar(T* d, T mean, T std) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - d[j];
    const T u2 = d[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = T(2.0f * random::kPi * u2);
    d[j] = std::fma(radius * std::cos(theta), std, mean);
    d[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}

/// Box-Muller over `nblocks` blocks of 16 in place, on all threads for large fills.
void box_muller_float(float* d, int64_t nblocks, float mean, float std, bool vec) {
  parallel_for(0, nblocks, 2048, [&](int64_t b0, int64_t b1) {
    if (vec) {
      random::box_muller16_avx2(d + 16 * b0, b1 - b0, mean, std);
    } else {
      for (int64_t b = b0; b < b1; ++b) box_muller16_scalar<float>(d + 16 * b, mean, std);
    }
  });
}

/// normal_fill: n uniforms, Box-Muller per block of 16, then (n % 16 != 0) 16 fresh
/// uniforms for the last 16 elements, transformed again.
template <class T>
void normal_fill(T* data, int64_t n, double mean, double std, CPUGenerator& g) {
  const bool vec = random::vector_capability();
  const int64_t nblocks = n / 16;
  if constexpr (std::is_same_v<T, double>) {
    draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
      for (int64_t j = 0; j < m; ++j) data[i0 + j] = random::uniform53(w[j]);
    });
    double tail[16];
    if (n % 16) {
      draw64(g, 16, [&](const uint64_t* w, int64_t, int64_t m) {
        for (int64_t j = 0; j < m; ++j) tail[j] = random::uniform53(w[j]);
      });
    }
    parallel_for(0, nblocks, 1024, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) box_muller16_scalar<double>(data + 16 * b, mean, std);
    });
    if (n % 16) {
      box_muller16_scalar<double>(tail, mean, std);
      std::memcpy(data + n - 16, tail, sizeof(tail));
    }
  } else if constexpr (std::is_same_v<T, float>) {
    uniform_floats(g, data, n, 0.0f, 1.0f, false);
    float tail[16];
    if (n % 16) uniform_floats(g, tail, 16, 0.0f, 1.0f, false);
    box_muller_float(data, nblocks, float(mean), float(std), vec);
    if (n % 16) {
      box_muller_float(tail, 1, float(mean), float(std), vec);
      std::memcpy(data + n - 16, tail, sizeof(tail));
    }
  } else {  // float16 / bfloat16: float math per block, then rounded
    std::vector<float> buf(size_t(std::min<int64_t>(n, 1 << 16)) + 16);
    for (int64_t i = 0; i < nblocks * 16; i += int64_t(buf.size()) - 16) {
      const int64_t m = std::min<int64_t>(int64_t(buf.size()) - 16, nblocks * 16 - i);
      uniform_floats(g, buf.data(), m, 0.0f, 1.0f, false);
      box_muller_float(buf.data(), m / 16, float(mean), float(std), vec);
      for (int64_t j = 0; j < m; ++j) data[i + j] = T(buf[size_t(j)]);
    }
    if (n % 16) {
      float tail[16];
      uniform_floats(g, tail, 16, 0.0f, 1.0f, false);
      box_muller_float(tail, 1, float(mean), float(std), vec);
      for (int j = 0; j < 16; ++j) data[n - 16 + j] = T(tail[j]);
    }
  }
}

void normal_fill_tensor(const Tensor& self, double mean, double std,
                        const std::optional<Generator>& gen) {
  TP_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return;
  if (is_meta(self)) {  // the CPU kernel's dtype check, then no draws
    if (!is_floating(self.dtype())) not_implemented("normal_kernel_cpu", self.dtype());
    return;
  }
#ifdef TP_USE_CUDA
  if (on_cuda(self)) return cuda::normal_(self, mean, std, gen);
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_floating(self.dtype(), "normal_kernel_cpu", [&](auto v) {
    using T = decltype(v);
    const int64_t n = self.numel();
    if (n >= 16 && self.is_contiguous()) return normal_fill<T>(self.data<T>(), n, mean, std, g);
    const bool fused = random::vector_capability();
    fill_ordered<T>(self, [&](T* out, int64_t m) {
      for (int64_t i = 0; i < m; ++i) out[i] = T(random::normal_draw(g, mean, std, fused));
    });
  });
}

// ------------------------------------------------------------------ per-element samplers
/// Fills self in iteration order with f(g) (a double, converted to T).
template <class F>
void fill_each(const Tensor& self, CPUGenerator& g, F&& f) {
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_dtype(self.dtype(), [&](auto v) {
    using T = decltype(v);
    fill_ordered<T>(self, [&](T* out, int64_t n) {
      for (int64_t i = 0; i < n; ++i) out[i] = T(f());
    });
  });
}

// ------------------------------------------------------------------ bernoulli
template <class T>
void bernoulli_scalar_kernel(const Tensor& self, double p, CPUGenerator& g) {
  // u < p on 53-bit uniforms u = k 2^-53 is k < p 2^53, i.e. k < ceil(p 2^53): exact
  const uint64_t k_limit = uint64_t(std::ceil(p * 9007199254740992.0));
  const uint64_t mask = (uint64_t(1) << 53) - 1;
  fill_ordered<T>(self, [&](T* out, int64_t n) {
    draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
      T* o = out + i0;
      for (int64_t j = 0; j < m; ++j) o[j] = static_cast<T>((w[j] & mask) < k_limit);
    });
  });
}

// ------------------------------------------------------------------ random_
/// [from, from + range) per element: a 64-bit draw from range 2^28 on (PyTorch 2.13's
/// cut, for every dtype; found by probing it), else a 32-bit draw.
template <class T>
void random_from_to_kernel(const Tensor& self, uint64_t range, int64_t base, CPUGenerator& g) {
  auto cast = [](int64_t x) -> T {
    if constexpr (std::is_same_v<T, bool>) return x != 0;
    else return T(x);
  };
  fill_ordered<T>(self, [&](T* out, int64_t n) {
    if (range >= (uint64_t(1) << 28)) {
      draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
        for (int64_t j = 0; j < m; ++j) out[i0 + j] = cast(int64_t(w[j] % range + uint64_t(base)));
      });
    } else {
      const uint32_t r32 = uint32_t(range);
      draw32(g, n, [&](const uint32_t* w, int64_t i0, int64_t m) {
        for (int64_t j = 0; j < m; ++j)
          out[i0 + j] = cast(int64_t(uint64_t(w[j] % r32) + uint64_t(base)));
      });
    }
  });
}

/// static_cast<T>(x) of an int64 as PyTorch's types do it (one rounding; the 16-bit floats
/// through float).
template <class T>
T from_int(int64_t x) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(x));
  else return T(x);
}

template <class T>
int64_t update_from(int64_t from) {
  const int64_t from_plus_1 = int64_t(double(from_int<T>(from + 1)));
  if (from_plus_1 < from) {
    int64_t f = std::abs(from + 1);
    int n = 0;
    while (f >>= 1) ++n;
    from = from_plus_1 + (int64_t(1) << (n - mantissa_digits<T>() + 1));
  }
  return from;
}

template <class T>
int64_t update_to(int64_t to) {
  const int64_t to_minus_1 = int64_t(double(from_int<T>(to - 1)));
  if (to_minus_1 >= to) {
    int64_t t = std::abs(to - 1);
    int n = 0;
    while (t >>= 1) ++n;
    to = to_minus_1 - (int64_t(1) << (n - mantissa_digits<T>() + 1));
  }
  return to;
}

void check_from_to_in_range(int64_t from, int64_t to_inc, DType dt) {
  const char* name = cpp_type_name(dt);
  if (is_floating(dt)) {
    visit_floating(dt, "check_random_fp_bounds", [&](auto v) {
      using T = decltype(v);
      const double lo = lowest_of<T>(), hi = max_of<T>();
      TP_CHECK(double(from) >= lo && double(from) <= hi, "from is out of bounds for ", name);
      TP_CHECK(double(to_inc) >= lo && double(to_inc) <= hi, "to - 1 is out of bounds for ", name);
    });
    return;
  }
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_integral_v<T>) {
      const int64_t lo = int64_t(std::numeric_limits<T>::lowest());
      const int64_t hi = int64_t(std::numeric_limits<T>::max());
      TP_CHECK(from >= lo && from <= hi, "from is out of bounds for ", name);
      TP_CHECK(to_inc >= lo && to_inc <= hi, "to - 1 is out of bounds for ", name);
    }
  });
}

void random_from_to(const Tensor& self, int64_t from, std::optional<int64_t> to_opt,
                    const std::optional<Generator>& gen) {
  const DType dt = self.dtype();
  uint64_t range = 0;
  if (to_opt) {
    int64_t to = *to_opt;
    TP_CHECK(from < to, "random_ expects 'from' to be less than 'to', but got from=", from,
             " >= to=", to);
    if (is_floating(dt)) {
      visit_floating(dt, "random_update_from_to", [&](auto v) {
        using T = decltype(v);
        from = update_from<T>(from);
        to = update_to<T>(to);
        TP_CHECK(from < to, "random_ expects 'from' casted to dtype to be less than 'to' casted "
                 "to dtype, but got from=", from, " >= to=", to);
      });
    }
    check_from_to_in_range(from, to - 1, dt);
    if (self.numel() == 0 || is_meta(self)) return;
    range = uint64_t(to) - uint64_t(from);
  } else if (from != std::numeric_limits<int64_t>::lowest()) {
    int64_t to_inc = 0;
    if (is_floating(dt)) {
      visit_floating(dt, "random_from_to_range_calc", [&](auto v) {
        using T = decltype(v);
        to_inc = int64_t(1) << mantissa_digits<T>();
        from = update_from<T>(from);
        TP_CHECK(from < to_inc, "random_ expects 'from' casted to dtype to be less than or equal "
                 "to 'to_inc' casted to dtype, but got from=", from, " > to_inc=", to_inc);
      });
    } else {
      visit_dtype(dt, [&](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, bool>) to_inc = 1;
        else if constexpr (std::is_integral_v<T>) to_inc = int64_t(std::numeric_limits<T>::max());
      });
    }
    check_from_to_in_range(from, to_inc, dt);
    if (self.numel() == 0 || is_meta(self)) return;
    range = uint64_t(to_inc) - uint64_t(from) + 1;
  } else {
    // the full int64 range: the 64-bit draw itself
    if (self.numel() == 0) return;
    if (dt != DType::Int64 && dt != DType::Float64 && dt != DType::Float32 && dt != DType::BFloat16)
      TP_FAIL("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16");
    check_no_internal_overlap(self);
    if (is_meta(self)) return;
#ifdef TP_USE_CUDA
    if (on_cuda(self)) return cuda::random_(self, 0, 0, gen);  // range 0: all 2^64 values
#endif
    CPUGenerator& g = random::cpu_generator(gen);
    std::lock_guard<std::mutex> lock(g.mutex);
    visit_dtype(dt, [&](auto v) {
      using T = decltype(v);
      fill_ordered<T>(self, [&](T* out, int64_t n) {
        draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
          for (int64_t j = 0; j < m; ++j) {
            out[i0 + j] = from_int<T>(int64_t(w[j]));
          }
        });
      });
    });
    return;
  }
  check_no_internal_overlap(self);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) return cuda::random_(self, from, range, gen);
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_dtype(dt, [&](auto v) { random_from_to_kernel<decltype(v)>(self, range, from, g); });
}

// ------------------------------------------------------------------ randperm
template <class T>
void randperm_kernel(T* r, int64_t n, CPUGenerator& g) {
  if (n < int64_t(std::numeric_limits<uint32_t>::max() / 20)) {
    for (int64_t i = 0; i < n; ++i) r[i] = T(double(i));
    // swap i with i + (random() % (n - i)), for i < n - 1
    draw32(g, std::max<int64_t>(n - 1, 0), [&](const uint32_t* w, int64_t i0, int64_t m) {
      for (int64_t j = 0; j < m; ++j) {
        const int64_t i = i0 + j;
        const int64_t z = int64_t(w[j] % uint32_t(n - i));
        std::swap(r[i], r[i + z]);
      }
    });
    return;
  }
  // large n: the inside-out shuffle with 64-bit draws (PyTorch's path from 2^32 / 20 on)
  draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = i0 + j;
      const int64_t z = int64_t(w[j] % uint64_t(i + 1));
      r[i] = r[z];
      r[z] = T(double(i));
    }
  });
}

// ------------------------------------------------------------------ factories
Tensor new_result(IntArrayRef size, DType dtype, const std::optional<Device>& device,
                  bool requires_grad, OutArg out) {
  if (out.tensor) {
    resize_out(*out.tensor, size);
    return *out.tensor;
  }
  Tensor t = empty_tensor(size, dtype, device ? *device : Device(DeviceType::CPU));
  if (requires_grad) {
    TP_CHECK(is_floating_or_complex(dtype),
             "Only Tensors of floating point and complex dtype can require gradients");
    t.impl()->set_requires_grad(true);
  }
  return t;
}

/// empty_like with PyTorch's preserve_format: a dense input's strides, else dense strides in
/// the order of the input's (its infer_dense_strides: a stepped, transposed or expanded input).
Tensor empty_like_preserving(const Tensor& self, DType dtype, const std::optional<Device>& device) {
  Device dev = device ? *device : self.device();
  if (self.is_contiguous()) return empty_tensor(self.sizes(), dtype, dev);
  return empty_strided_tensor(self.sizes(), preserving_strides(self.sizes(), self.strides()), dtype, dev);
}

/// A tensor laid out like self (preserve_format) filled with `value`.
Tensor full_like_preserving(const Tensor& self, DType dtype, bool value) {
  Tensor t = empty_like_preserving(self, dtype, std::nullopt);
  fill_impl(t, Scalar(value), OutArg{&t, true, false});
  return t;
}

Tensor like_result(const Tensor& self, const std::optional<DType>& dtype,
                   const std::optional<Device>& device, bool requires_grad) {
  Tensor t = empty_like_preserving(self, dtype.value_or(self.dtype()), device);
  if (requires_grad) {
    TP_CHECK(is_floating_or_complex(t.dtype()),
             "Only Tensors of floating point and complex dtype can require gradients");
    t.impl()->set_requires_grad(true);
  }
  return t;
}

/// normal's check of a tensor std on any device: PyTorch's std.min() >= 0, so a NaN fails.
void check_std_tensor(const Tensor& std) {
  if (std.numel() == 0 || is_meta(std)) return;  // meta: no values to check
  const Tensor lo = _to_dtype(host_copy(tp::min(std)), DType::Float64, false);
  TP_CHECK(lo.data<double>()[0] >= 0, "normal expects all elements of std >= 0.0");
}

constexpr const char* kBadProbabilities =
    "probability tensor contains either `inf`, `nan` or element < 0";
constexpr const char* kZeroSumProbabilities =
    "invalid multinomial distribution (sum of probabilities <= 0)";
constexpr const char* kNegativeProbability =
    "invalid multinomial distribution (encountering probability entry < 0)";
constexpr const char* kInfiniteProbability =
    "invalid multinomial distribution (encountering probability entry = infinity or NaN)";
constexpr const char* kBadPoissonRate = "invalid Poisson rate, expected rate to be non-negative";

[[noreturn]] void fail_bernoulli_p() {
  TP_FAIL("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
          "be improved?  If so, please report an enhancement request to PyTorch.)");
}

/// A CPU copy of t.
Tensor to_host(const Tensor& t) {
  Tensor h = empty_tensor(t.sizes(), t.dtype());
  copy_impl(h, t, false, OutArg{});
  return h;
}

void bump(const Tensor& self, OutArg out) {
  if (out.tensor && out.bump_version) self.impl()->bump_version();
}

/// An in-place sampler's return once its checks passed: self, counted as written.
Tensor written(const Tensor& self, OutArg out) {
  bump(self, out);
  return self;
}

}  // namespace

// ------------------------------------------------------------------ ops
Tensor uniform_impl(const Tensor& self, double from, double to,
                    const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  uniform_fill(self, from, to, gen);
  bump(self, out);
  return self;
}

Tensor normal_inplace_impl(const Tensor& self, double mean, double std,
                           const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  normal_fill_tensor(self, mean, std, gen);
  bump(self, out);
  return self;
}

Tensor bernoulli_scalar_impl(const Tensor& self, double p, const std::optional<Generator>& gen,
                             OutArg out) {
  check_device(self);
  TP_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  if (self.numel() == 0) return self;
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    cuda::bernoulli_(self, p, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    visit_dtype(self.dtype(), [&](auto v) { bernoulli_scalar_kernel<decltype(v)>(self, p, g); });
  }
  bump(self, out);
  return self;
}

Tensor bernoulli_tensor_impl(const Tensor& self, const Tensor& p, const std::optional<Generator>& gen,
                             OutArg out) {
  check_device(self);
  if (self.numel() == 0) return self;
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    if (!cuda::bernoulli_(self, p, gen)) fail_bernoulli_p();
    bump(self, out);
    return self;
  }
#endif
  TP_CHECK(is_floating(p.dtype()), "\"bernoulli_tensor_cpu_p_\" not implemented for '",
           dtype_scalar_name(p.dtype()), "'");
  // p broadcast to self's shape (on the host), read in self's iteration order
  Tensor pe = expand(p.device().is_cpu() ? p : to_host(p), self.sizes());
  DimVector sizes, strides, psizes, pstrides;
  iteration_geometry(self, sizes, strides);
  {
    DimVector perm(self.dim());
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
    for (int64_t d : perm) pstrides.push_back(pe.stride(d));
  }
  std::vector<double> pv(size_t(self.numel()));
  if (p.dtype() == DType::Float64) {
    const double* base = pe.data<double>();
    walk(sizes, pstrides, [&](int64_t k, int64_t off) { pv[size_t(k)] = base[off]; });
  } else {
    visit_floating(p.dtype(), "bernoulli_tensor_cpu_p_", [&](auto v) {
      using P = decltype(v);
      const P* base = pe.data<P>();
      walk(sizes, pstrides, [&](int64_t k, int64_t off) { pv[size_t(k)] = double(float(base[off])); });
    });
  }
  const bool p_double = p.dtype() == DType::Float64;
  CPUGenerator& g = random::cpu_generator(gen);
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    visit_dtype(self.dtype(), [&](auto v) {
      using T = decltype(v);
      fill_ordered<T>(self, [&](T* o, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const double pi = pv[size_t(i)];
          if (!(pi >= 0 && pi <= 1)) fail_bernoulli_p();
          bool hit = p_double ? random::uniform53(g.random64()) < pi
                              : random::uniform24(g.random()) < float(pi);
          o[i] = T(hit ? 1 : 0);
        }
      });
    });
  }
  bump(self, out);
  return self;
}

Tensor exponential_impl(const Tensor& self, double lambd, const std::optional<Generator>& gen,
                        OutArg out) {
  check_device(self);
  TP_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  if (self.numel() == 0) return self;
  TP_CHECK(is_floating(self.dtype()), "Exponential distribution is a continuous probability "
           "distribution. dtype must be a floating point but you specified ",
           dtype_scalar_name(self.dtype()));
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    cuda::exponential_(self, lambd, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  fill_each(self, g, [&] { return -1.0 / lambd * std::log1p(-random::uniform53(g.random64())); });
  bump(self, out);
  return self;
}

Tensor geometric_impl(const Tensor& self, double p, const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  TP_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  if (self.numel() == 0) return self;
  if (self.dtype() == DType::Bool)
    not_implemented(on_cuda(self) ? "geometric_cuda" : "geometric_cpu", self.dtype());
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    cuda::geometric_(self, p, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  const double log1mp = std::log1p(-p);
  fill_each(self, g, [&] { return std::ceil(std::log(random::uniform53(g.random64())) / log1mp); });
  bump(self, out);
  return self;
}

Tensor log_normal_impl(const Tensor& self, double mean, double std,
                       const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  TP_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  if (self.numel() == 0) return self;
  require_floating(self, on_cuda(self) ? "log_normal_cuda" : "log_normal_cpu");
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    cuda::log_normal_(self, mean, std, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  const bool fused = random::vector_capability();
  fill_each(self, g, [&] { return std::exp(random::normal_draw(g, mean, std, fused)); });
  bump(self, out);
  return self;
}

Tensor cauchy_impl(const Tensor& self, double median, double sigma,
                   const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  TP_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  TP_CHECK(is_floating(self.dtype()), "Cauchy distribution is a continuous probability "
           "distribution. dtype must be a floating point but you specified ",
           dtype_scalar_name(self.dtype()));
  if (self.numel() == 0) return self;
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    cuda::cauchy_(self, median, sigma, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  const bool fused = random::vector_capability();
  fill_each(self, g, [&] {
    const double u = random::uniform53(g.random64());
    return random::muladd(sigma, std::tan(random::kPi * (u - 0.5)), median, fused);
  });
  bump(self, out);
  return self;
}

Tensor random_impl(const Tensor& self, const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  if (self.numel() == 0) return self;
  check_no_internal_overlap(self);
  if (is_meta(self)) return written(self, out);
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {  // [0, max] for integers, [0, 2^digits] for floats
    uint64_t range = 0;
    visit_dtype(self.dtype(), [&](auto v) {
      using T = decltype(v);
      if constexpr (std::is_same_v<T, bool>) range = 2;
      else if constexpr (std::is_integral_v<T>) range = uint64_t(std::numeric_limits<T>::max()) + 1;
      else range = (uint64_t(1) << mantissa_digits<T>()) + 1;
    });
    cuda::random_(self, 0, range, gen);
    bump(self, out);
    return self;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    visit_dtype(self.dtype(), [&](auto v) {
      using T = decltype(v);
      fill_ordered<T>(self, [&](T* o, int64_t n) {
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
          constexpr uint64_t mod = std::is_same_v<T, double> ? (uint64_t(1) << 53) + 1
                                                             : uint64_t(1) << 63;
          draw64(g, n, [&](const uint64_t* w, int64_t i0, int64_t m) {
            for (int64_t j = 0; j < m; ++j) o[i0 + j] = T(w[j] % mod);
          });
        } else {
          draw32(g, n, [&](const uint32_t* w, int64_t i0, int64_t m) {
            for (int64_t j = 0; j < m; ++j) {
              if constexpr (std::is_same_v<T, bool>) {
                o[i0 + j] = (w[j] & 1) != 0;
              } else if constexpr (std::is_integral_v<T>) {
                o[i0 + j] = T(uint64_t(w[j]) % (uint64_t(std::numeric_limits<T>::max()) + 1));
              } else {
                constexpr uint64_t mod = (uint64_t(1) << mantissa_digits<T>()) + 1;
                o[i0 + j] = T(float(uint64_t(w[j]) % mod));
              }
            }
          });
        }
      });
    });
  }
  bump(self, out);
  return self;
}

Tensor random_to_impl(const Tensor& self, int64_t to, const std::optional<Generator>& gen,
                      OutArg out) {
  check_device(self);
  random_from_to(self, 0, to, gen);
  bump(self, out);
  return self;
}

Tensor random_from_impl(const Tensor& self, int64_t from, const std::optional<int64_t>& to,
                        const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  random_from_to(self, from, to, gen);
  bump(self, out);
  return self;
}

Tensor rand_impl(IntArrayRef size, const std::optional<Generator>& gen,
                 const std::optional<DType>& dtype, const std::optional<Device>& device,
                 bool requires_grad, OutArg out) {
  Tensor t = new_result(size, dtype.value_or(default_dtype()), device, requires_grad, out);
  check_device(t);
  uniform_fill(t, 0.0, 1.0, gen);
  return t;
}

/// N(0, 1) samples into t; a complex t gets its real and imaginary parts each with variance
/// 1/2 (PyTorch's rule: the real view filled with std 1/sqrt(2), so seeded draws match).
static void normal_fill_complex_aware(const Tensor& t, const std::optional<Generator>& gen) {
  if (is_complex(t.dtype()))
    normal_fill_tensor(view_as_real(t), 0.0, 1.0 / std::sqrt(2.0), gen);
  else
    normal_fill_tensor(t, 0.0, 1.0, gen);
}

Tensor randn_impl(IntArrayRef size, const std::optional<Generator>& gen,
                  const std::optional<DType>& dtype, const std::optional<Device>& device,
                  bool requires_grad, OutArg out) {
  Tensor t = new_result(size, dtype.value_or(default_dtype()), device, requires_grad, out);
  check_device(t);
  normal_fill_complex_aware(t, gen);
  return t;
}

Tensor rand_like_impl(const Tensor& self, const std::optional<Generator>& gen,
                      const std::optional<DType>& dtype, const std::optional<Device>& device,
                      bool requires_grad, OutArg) {
  Tensor t = like_result(self, dtype, device, requires_grad);
  check_device(t);
  uniform_fill(t, 0.0, 1.0, gen);
  return t;
}

Tensor randn_like_impl(const Tensor& self, const std::optional<Generator>& gen,
                       const std::optional<DType>& dtype, const std::optional<Device>& device,
                       bool requires_grad, OutArg) {
  Tensor t = like_result(self, dtype, device, requires_grad);
  check_device(t);
  normal_fill_complex_aware(t, gen);
  return t;
}

Tensor randint_low_impl(int64_t low, int64_t high, IntArrayRef size,
                        const std::optional<Generator>& gen, const std::optional<DType>& dtype,
                        const std::optional<Device>& device, bool requires_grad, OutArg out) {
  Tensor t = new_result(size, dtype.value_or(DType::Int64), device, requires_grad, out);
  check_device(t);
  random_from_to(t, low, high, gen);
  return t;
}

Tensor randint_impl(int64_t high, IntArrayRef size, const std::optional<Generator>& gen,
                    const std::optional<DType>& dtype, const std::optional<Device>& device,
                    bool requires_grad, OutArg out) {
  return randint_low_impl(0, high, size, gen, dtype, device, requires_grad, out);
}

Tensor randint_like_low_impl(const Tensor& self, int64_t low, int64_t high,
                             const std::optional<Generator>& gen, const std::optional<DType>& dtype,
                             const std::optional<Device>& device, bool requires_grad, OutArg) {
  Tensor t = like_result(self, dtype, device, requires_grad);
  check_device(t);
  random_from_to(t, low, high, gen);
  return t;
}

Tensor randint_like_impl(const Tensor& self, int64_t high, const std::optional<Generator>& gen,
                         const std::optional<DType>& dtype, const std::optional<Device>& device,
                         bool requires_grad, OutArg out) {
  return randint_like_low_impl(self, 0, high, gen, dtype, device, requires_grad, out);
}

Tensor randperm_impl(int64_t n, const std::optional<Generator>& gen,
                     const std::optional<DType>& dtype, const std::optional<Device>& device,
                     bool requires_grad, OutArg out) {
  TP_CHECK(n >= 0, "Trying to create tensor with negative dimension ", n, ": [", n, "]");
  const DType dt = out.tensor ? out.tensor->dtype() : dtype.value_or(DType::Int64);
  if (dt == DType::Bool) not_implemented("randperm", dt);
  // n must fit the dtype's consecutive integers
  auto check_max = [&](int64_t maxv, const char* name) {
    TP_CHECK(n <= maxv, "n cannot be greater than ", maxv, " for ", name, " type.");
  };
  switch (dt) {
    case DType::Float16: check_max((int64_t(1) << 11) + 1, "Half"); break;
    case DType::BFloat16: check_max((int64_t(1) << 8) + 1, "BFloat16"); break;
    case DType::Float32: check_max((int64_t(1) << 24) + 1, "Float"); break;
    case DType::Float64: check_max((int64_t(1) << 53) + 1, "Double"); break;
    default:
      visit_dtype(dt, [&](auto v) {
        using T = decltype(v);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          TP_CHECK(n - 1 <= int64_t(std::numeric_limits<T>::max()), "value cannot be converted "
                   "to type ", std::is_signed_v<T> ? "int" : "uint", sizeof(T) * 8,
                   "_t without overflow");
      });
  }
  const int64_t shape[1] = {n};
  Tensor t = new_result(shape, dt, device, requires_grad, out);
  check_device(t);
  if (is_meta(t)) return t;
#ifdef TP_USE_CUDA
  if (on_cuda(t)) {
    cuda::randperm(t, gen);
    return t;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, bool>) {
      if (t.is_contiguous()) {
        randperm_kernel<T>(t.data<T>(), n, g);
      } else {
        std::vector<T> buf(static_cast<size_t>(n));
        randperm_kernel<T>(buf.data(), n, g);
        T* base = t.data<T>();
        for (int64_t i = 0; i < n; ++i) base[i * t.stride(0)] = buf[size_t(i)];
      }
    }
  });
  return t;
}

Tensor normal_tensor_float_impl(const Tensor& mean, double std, const std::optional<Generator>& gen,
                                OutArg out) {
  TP_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  check_device(mean);
  Tensor t;
  if (out.tensor) {
    t = *out.tensor;
    resize_out(t, broadcast_shapes_of(mean, t, "normal"));
  } else {
    t = empty_tensor(mean.sizes(), mean.dtype(), mean.device());
  }
  normal_fill_tensor(t, 0.0, std, gen);
  add_(t, mean);
  return t;
}

Tensor normal_float_tensor_impl(double mean, const Tensor& std, const std::optional<Generator>& gen,
                                OutArg out) {
  check_device(std);
  check_std_tensor(std);
  Tensor t;
  if (out.tensor) {
    t = *out.tensor;
    resize_out(t, std.sizes());
  } else {
    t = empty_tensor(std.sizes(), std.dtype(), std.device());
  }
  normal_fill_tensor(t, 0.0, 1.0, gen);
  mul_(t, std);
  add_(t, full({}, Scalar(mean), t.dtype()));
  return t;
}

Tensor normal_tensor_tensor_impl(const Tensor& mean, const Tensor& std,
                                 const std::optional<Generator>& gen, OutArg out) {
  check_device(mean);
  check_std_tensor(std);
  DimVector shape = broadcast_shapes_of(mean, std, "normal");
  Tensor t;
  if (out.tensor) {
    t = *out.tensor;
    resize_out(t, shape);
  } else {
    t = empty_tensor(shape, mean.dtype(), mean.device());
  }
  normal_fill_tensor(t, 0.0, 1.0, gen);
  mul_(t, std);
  add_(t, mean);
  return t;
}

Tensor normal_float_float_impl(double mean, double std, IntArrayRef size,
                               const std::optional<Generator>& gen, const std::optional<DType>& dtype,
                               const std::optional<Device>& device, bool requires_grad, OutArg out) {
  TP_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  Tensor t = new_result(size, dtype.value_or(default_dtype()), device, requires_grad, out);
  check_device(t);
  normal_fill_tensor(t, mean, std, gen);
  return t;
}

Tensor bernoulli_impl(const Tensor& self, const std::optional<Generator>& gen, OutArg out) {
  Tensor t;
  if (out.tensor) {
    t = *out.tensor;
    resize_out(t, self.sizes());
  } else {
    t = empty_tensor(self.sizes(), self.dtype(), self.device());
  }
  bernoulli_tensor_impl(t, self, gen, OutArg{});
  return t;
}

Tensor bernoulli_p_impl(const Tensor& self, double p, const std::optional<Generator>& gen, OutArg) {
  Tensor t = empty_tensor(self.sizes(), self.dtype(), self.device());
  return bernoulli_scalar_impl(t, p, gen, OutArg{});
}

Tensor multinomial_impl(const Tensor& self, int64_t n_sample, bool replacement,
                        const std::optional<Generator>& gen, OutArg out) {
  check_device(self);
  TP_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TP_CHECK(is_floating(self.dtype()), "multinomial only supports floating-point dtypes for input, "
           "got: ", dtype_scalar_name(self.dtype()));
  if (out.tensor)
    TP_CHECK(out.tensor->dtype() == DType::Int64, "multinomial expects Long tensor out, got: ",
             dtype_scalar_name(out.tensor->dtype()));
  TP_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.size(self.dim() - 1);
  TP_CHECK(replacement || n_sample <= n_categories,
           "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TP_CHECK(n_categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  DimVector shape;
  if (self.dim() == 2) shape.push_back(self.size(0));
  shape.push_back(n_sample);
  Tensor result;
  if (out.tensor) {
    result = *out.tensor;
    resize_out(result, shape);
  } else {
    result = empty_tensor(shape, DType::Int64, self.device());
  }
  if (result.numel() == 0 || is_meta(result)) return result;
  const int64_t rows = self.dim() == 2 ? self.size(0) : 1;
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    // the CPU path's checks and composition over the CUDA samplers (Note [Philox streams])
    const Tensor p = contiguous(_to_dtype(
        self, self.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, false));
    const cuda::ProbabilityIssues found = cuda::scan_probabilities(p, rows, n_categories);
    if (!replacement || n_sample == 1) {
      TP_CHECK(!found.bad_entry, kBadProbabilities);
      TP_CHECK(!found.zero_row, kZeroSumProbabilities);
      const Tensor keys = cuda::multinomial_keys(p, gen);
      copy_(result, n_sample == 1 ? argmax(keys, -1, true) : std::get<1>(topk(keys, n_sample)));
    } else {
      TP_CHECK(found.first_kind != cuda::kProbabilityNegative, kNegativeProbability);
      TP_CHECK(found.first_kind != cuda::kProbabilityInfinite, kInfiniteProbability);
      TP_CHECK(found.first_kind != cuda::kProbabilityZeroSum, kZeroSumProbabilities);
      cuda::multinomial_draws(contiguous(cumsum(p, -1, DType::Float64)), n_sample, gen, result);
    }
    return result;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  if (!replacement || n_sample == 1) {
    // argmax / top-k of p / q with q ~ Exp(1): the Gumbel trick, drawing q like exponential_
    // PyTorch's checks: every entry in [0, inf), then no row summing to 0 (read in place)
    const Tensor c = contiguous(self);
    bool valid = true, zero_row = false;
    visit_floating(self.dtype(), "multinomial", [&](auto v) {
      using T = decltype(v);
      const T* pv = c.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t j = 0; j < n_categories; ++j) {
          const double x = double(pv[r * n_categories + j]);
          valid = valid && x >= 0 && x < INFINITY;
          s += x;
        }
        zero_row = zero_row || s == 0;
      }
    });
    TP_CHECK(valid, kBadProbabilities);
    TP_CHECK(!zero_row, kZeroSumProbabilities);
    Tensor q = empty_like_preserving(self, self.dtype(), std::nullopt);
    exponential_impl(q, 1.0, gen, OutArg{});
    Tensor ratio = div(self, q);
    if (n_sample == 1) {
      copy_(result, argmax(ratio, -1, true));
    } else {
      copy_(result, std::get<1>(topk(ratio, n_sample)));
    }
    return result;
  }
  // with replacement: a binary search of the normalised cumulative sum per sample
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_floating(self.dtype(), "multinomial", [&](auto v) {
    using T = decltype(v);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const int64_t s0 = self.dim() == 2 ? self.stride(0) : 0, s1 = self.stride(self.dim() - 1);
    const int64_t r0 = result.dim() == 2 ? result.stride(0) : 0, r1 = result.stride(result.dim() - 1);
    const T* p = self.data<T>();
    int64_t* res = result.data<int64_t>();
    std::vector<Acc> cum(static_cast<size_t>(n_categories));
    for (int64_t i = 0; i < rows; ++i) {
      Acc sum = 0;
      for (int64_t j = 0; j < n_categories; ++j) {
        Acc val = Acc(p[i * s0 + j * s1]);
        TP_CHECK(val >= 0, kNegativeProbability);
        TP_CHECK(std::isfinite(val), kInfiniteProbability);
        sum += val;
        cum[size_t(j)] = sum;
      }
      TP_CHECK(sum > 0, kZeroSumProbabilities);
      for (int64_t j = 0; j < n_categories; ++j) cum[size_t(j)] /= sum;
      cum[size_t(n_categories - 1)] = 1;
      const Acc* first = cum.data();
      for (int64_t j = 0; j < n_sample; ++j) {
        const double u = random::uniform53(g.random64());
        // the first category with cum >= u, as PyTorch's binary search finds it, without
        // branches (a conditional move per halving: mispredicted branches took most of the
        // time: 52 -> 13 ns a draw over 10 categories, 131 -> 32 over 1000, 1 thread)
        const Acc* base = first;
        for (int64_t len = n_categories; len > 1; len -= len / 2)
          base = base[len / 2] < u ? base + len / 2 : base;
        res[i * r0 + j * r1] = (base - first) + (*base < u);
      }
    }
  });
  return result;
}

Tensor poisson_impl(const Tensor& self, const std::optional<Generator>& gen, OutArg) {
  check_device(self);
  Tensor t = empty_tensor(self.sizes(), self.dtype(), self.device());
  if (t.numel() == 0) return t;
  if (is_meta(t)) {  // the CPU kernel's dtype check, then no draws
    if (!is_floating(self.dtype())) not_implemented("poisson_cpu", self.dtype());
    return t;
  }
#ifdef TP_USE_CUDA
  if (on_cuda(self)) {
    TP_CHECK(cuda::poisson(self, t, gen), kBadPoissonRate);
    return t;
  }
#endif
  CPUGenerator& g = random::cpu_generator(gen);
  std::lock_guard<std::mutex> lock(g.mutex);
  visit_floating(self.dtype(), "poisson_cpu", [&](auto v) {
    using T = decltype(v);
    Tensor c = contiguous(self);
    const T* lam = c.data<T>();
    T* o = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) o[i] = T(double(random::poisson_draw(g, double(lam[i]))));
  });
  return t;
}

std::tuple<Tensor, Tensor> native_dropout_impl(const Tensor& input, double p,
                                               const std::optional<bool>& train, OutArg) {
  if (is_meta(input)) {  // PyTorch's meta function (its decomposition): train=None is eval, p is not checked;
    // without dropping (eval, p == 0) its output is the input itself: here an alias of it
    const bool drops = train.value_or(false) && p != 0;
    if (drops && p != 1 && !is_floating(input.dtype()))
      TP_FAIL("result type Float can't be cast to the desired output type ", dtype_scalar_name(input.dtype()));
    const DimVector strides = preserving_strides(input.sizes(), input.strides());
    Tensor mask = empty_strided_tensor(input.sizes(), strides, DType::Bool, input.device());
    if (!drops)
      return {make_view(input, DimVector(input.sizes().data(), input.sizes().size()),
                        DimVector(input.strides().data(), input.strides().size()), input.storage_offset()),
              mask};
    return {empty_strided_tensor(input.sizes(), strides, input.dtype(), input.device()), mask};
  }
  check_device(input);
  if (input.numel() == 0)  // PyTorch's CPU kernel gives an empty mask of input's dtype, its CUDA one bool
    return {clone(input), empty_like_preserving(input, on_cuda(input) ? DType::Bool : input.dtype(),
                                                std::nullopt)};
  if (train.has_value() && !*train)
    return {clone(input), full_like_preserving(input, DType::Bool, true)};
  const double keep = 1.0 - p;
  TP_CHECK(0 <= keep && keep <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", keep);
  if (!is_floating(input.dtype()))  // as the CPU path's in-place scaling of the masked input
    TP_FAIL("result type Float can't be cast to the desired output type ",
            dtype_scalar_name(input.dtype()));
#ifdef TP_USE_CUDA
  if (on_cuda(input)) return cuda::native_dropout(input, p, std::nullopt);
#endif
  // PyTorch's CPU composition: a Bernoulli(1 - p) mask in input's layout, scaled in
  // input's dtype (the scale rounds to it), times input
  Tensor mask = empty_like_preserving(input, DType::Bool, std::nullopt);
  bernoulli_scalar_impl(mask, keep, std::nullopt, OutArg{});
  Tensor noise = _to_dtype(mask, input.dtype(), false);
  mul_(noise, wrapped_scalar(Scalar(keep == 0.0 ? 0.0 : 1.0 / keep)));
  return {mul(input, noise), mask};
}

Tensor native_dropout_backward_impl(const Tensor& grad_output, const Tensor& mask, double scale,
                                    OutArg) {
  if (is_meta(grad_output)) {  // PyTorch's meta function (its decomposition): grad_output * (mask in its dtype *
    // scale), dense in the layout grad_output suggests
    Tensor r = mul(grad_output, mul(_to_dtype(mask, grad_output.dtype(), false), wrapped_scalar(Scalar(scale))));
    return with_layout(r, channels_last(grad_output));
  }
  check_device(grad_output);
#ifdef TP_USE_CUDA
  if (on_cuda(grad_output)) return cuda::native_dropout_backward(grad_output, mask, scale);
#endif
  return mul(mul(grad_output, mask), wrapped_scalar(Scalar(scale)));
}

namespace random {

int64_t poisson_draw(CPUGenerator& g, double lambda) {
  TP_CHECK(lambda >= 0, kBadPoissonRate);
  auto uniform = [&] { return uniform53(g.random64()); };
  if (lambda >= 10) {
    const double slam = std::sqrt(lambda);
    const double loglam = std::log(lambda);
    const double b = 0.931 + 2.53 * slam;
    const double a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    const double vr = 0.9277 - 3.6224 / (b - 2);
    while (true) {
      const double U = uniform() - 0.5;
      const double V = uniform();
      const double us = 0.5 - std::fabs(U);
      const double k = std::floor((2 * a / us + b) * U + lambda + 0.43);
      if (us >= 0.07 && V <= vr) return int64_t(k);
      if (k < 0 || (us < 0.013 && V > us)) continue;
      if (std::log(V) + std::log(invalpha) - std::log(a / (us * us) + b) <=
          -lambda + k * loglam - std::lgamma(k + 1))
        return int64_t(k);
    }
  }
  if (lambda == 0) return 0;
  const double enlam = std::exp(-lambda);
  int64_t x = 0;
  double prod = 1.0;
  while (true) {
    prod *= uniform();
    if (prod > enlam) ++x;
    else return x;
  }
}

}  // namespace random

}  // namespace tp
