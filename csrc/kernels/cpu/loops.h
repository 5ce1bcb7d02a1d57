// CPU inner loops for pointwise functors: contiguous fast paths the compiler vectorises
// (plus vec_math.h / libmvec for float32 transcendentals), scalar-broadcast paths, and strided paths.
// For the per-level kernel files only: its templates live in TP_CPU_NS (Note [CPU capability]).
#pragma once
#include <type_traits>

#include "kernels/functors/pointwise.h"

namespace tp::cpu::TP_CPU_NS {

#ifdef TP_VEC_LANES
// A functor with a float32 vector body: `vec(v)` (unary) or `vec(a, b)` (binary). The
// last partial vector of a contiguous run goes through the vector body too, zero-padded:
// a value's result is then the same wherever it sits and at every level's width
// (Note [float32 math]).
template <class F>
concept HasVec = requires(const F f, functors::vec_f v) { f.vec(v); };
template <class F>
concept HasVec2 = requires(const F f, functors::vec_f v) { f.vec(v, v); };
#endif

// Bools are read as bytes compared with 0: GCC vectorises that, not `bool` loads.
template <class T> using load_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
template <class T>
inline T load(const load_t<T>* p, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) return p[i] != 0;
  else return p[i];
}

template <template <class> class Fn, class T>
void nullary_loop(const KernelParams& p, char** d, const int64_t* s, int64_t n) {
  using F = Fn<T>;
  F f(p);
  if (s[0] == sizeof(T)) {
    T* o = reinterpret_cast<T*>(d[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = f();
  } else {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(d[0] + i * s[0]) = f();
  }
}

template <template <class> class Fn, class T>
void unary_loop(const KernelParams& p, char** d, const int64_t* s, int64_t n) {
  using F = Fn<T>;
  using O = typename F::out_t;
  F f(p);
  if (s[0] == sizeof(O) && s[1] == sizeof(T)) {
    O* __restrict o = reinterpret_cast<O*>(d[0]);
    const load_t<T>* __restrict a = reinterpret_cast<const load_t<T>*>(d[1]);
    int64_t i = 0;
#ifdef TP_VEC_LANES
    if constexpr (std::is_same_v<T, float> && HasVec<F>) {
      for (; i + TP_VEC_LANES <= n; i += TP_VEC_LANES) functors::vec_store(o + i, f.vec(functors::vec_load(a + i)));
      if (i < n) {
        float ta[TP_VEC_LANES] = {}, to[TP_VEC_LANES];
        for (int64_t j = i; j < n; ++j) ta[j - i] = a[j];
        functors::vec_store(to, f.vec(functors::vec_load(ta)));
        for (int64_t j = i; j < n; ++j) o[j] = to[j - i];
        i = n;
      }
    }
#endif
    for (; i < n; ++i) o[i] = f(load<T>(a, i));
  } else if (s[1] == 0) {
    O v = f(*reinterpret_cast<const T*>(d[1]));
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<O*>(d[0] + i * s[0]) = v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(d[0] + i * s[0]) = f(*reinterpret_cast<const T*>(d[1] + i * s[1]));
  }
}

template <template <class> class Fn, class T>
void binary_loop(const KernelParams& p, char** d, const int64_t* s, int64_t n) {
  using F = Fn<T>;
  using O = typename F::out_t;
  F f(p);
  O* __restrict o = reinterpret_cast<O*>(d[0]);
  const load_t<T>* __restrict a = reinterpret_cast<const load_t<T>*>(d[1]);
  const load_t<T>* __restrict b = reinterpret_cast<const load_t<T>*>(d[2]);
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
    int64_t i = 0;
#ifdef TP_VEC_LANES
    if constexpr (std::is_same_v<T, float> && HasVec2<F>) {
      for (; i + TP_VEC_LANES <= n; i += TP_VEC_LANES)
        functors::vec_store(o + i, f.vec(functors::vec_load(a + i), functors::vec_load(b + i)));
      if (i < n) {
        float ta[TP_VEC_LANES] = {}, tb[TP_VEC_LANES] = {}, to[TP_VEC_LANES];
        for (int64_t j = i; j < n; ++j) ta[j - i] = a[j], tb[j - i] = b[j];
        functors::vec_store(to, f.vec(functors::vec_load(ta), functors::vec_load(tb)));
        for (int64_t j = i; j < n; ++j) o[j] = to[j - i];
        i = n;
      }
    }
#endif
    for (; i < n; ++i) o[i] = f(load<T>(a, i), load<T>(b, i));
  } else if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == 0) {
    const T bv = load<T>(b, 0);
    for (int64_t i = 0; i < n; ++i) o[i] = f(load<T>(a, i), bv);
  } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(T)) {
    const T av = load<T>(a, 0);
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, load<T>(b, i));
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(d[0] + i * s[0]) = f(*reinterpret_cast<const T*>(d[1] + i * s[1]),
                                                 *reinterpret_cast<const T*>(d[2] + i * s[2]));
  }
}

/// Ternary loop; the first input's C++ type is C (bool for where's condition, else T).
template <template <class> class Fn, class T, class C = T>
void ternary_loop(const KernelParams& p, char** d, const int64_t* s, int64_t n) {
  using F = Fn<T>;
  using O = typename F::out_t;
  F f(p);
  if (s[0] == sizeof(O) && s[1] == sizeof(C) && s[2] == sizeof(T) && s[3] == sizeof(T)) {
    O* __restrict o = reinterpret_cast<O*>(d[0]);
    const load_t<C>* __restrict c = reinterpret_cast<const load_t<C>*>(d[1]);
    const load_t<T>* __restrict a = reinterpret_cast<const load_t<T>*>(d[2]);
    const load_t<T>* __restrict b = reinterpret_cast<const load_t<T>*>(d[3]);
    for (int64_t i = 0; i < n; ++i) o[i] = f(load<C>(c, i), load<T>(a, i), load<T>(b, i));
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(d[0] + i * s[0]) = f(*reinterpret_cast<const C*>(d[1] + i * s[1]),
                                                 *reinterpret_cast<const T*>(d[2] + i * s[2]),
                                                 *reinterpret_cast<const T*>(d[3] + i * s[3]));
  }
}

}  // namespace tp::cpu::TP_CPU_NS
