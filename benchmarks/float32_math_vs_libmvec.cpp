// Our vector float32 math (csrc/kernels/functors/vec_math.h) against glibc's libmvec, which
// it replaced (issue 32), at one CPU level, single-threaded, interleaved in one process:
// a sampled ulp check of both against glibc's double functions first, then 16M elements.
//
//   g++ -O2 -std=c++20 -fno-math-errno -w [-march=x86-64-v3 | -march=x86-64-v4 \
//       -mprefer-vector-width=256] -Icsrc benchmarks/float32_math_vs_libmvec.cpp -lmvec -lm \
//       -o /tmp/vs_libmvec && /tmp/vs_libmvec
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#if defined(__AVX512F__)
#define TP_VEC_LANES 16
namespace tp::functors { using vec_f = __m512; }
#define MV(fn) _ZGVeN16v_##fn
#elif defined(__AVX2__)
#define TP_VEC_LANES 8
namespace tp::functors { using vec_f = __m256; }
#define MV(fn) _ZGVdN8v_##fn
#else
#define TP_VEC_LANES 4
namespace tp::functors { using vec_f = __m128; }
#define MV(fn) _ZGVbN4v_##fn
#endif
#include "kernels/functors/vec_math.h"
using tp::functors::vec_f;
namespace vm = tp::functors::vmath;
extern "C" {
vec_f MV(expf)(vec_f);
vec_f MV(logf)(vec_f);
vec_f MV(sinf)(vec_f);
vec_f MV(cosf)(vec_f);
vec_f MV(tanhf)(vec_f);
}

static const char* kNames[] = {"exp", "log", "sin", "cos", "tanh", "sigmoid"};
static const float kLo[] = {-80, 1e-6f, -100, -100, -5, -20}, kHi[] = {80, 1e4f, 100, 100, 5, 20};

static double reference(int f, double x) {
  switch (f) {
    case 0: return std::exp(x);
    case 1: return std::log(x);
    case 2: return std::sin(x);
    case 3: return std::cos(x);
    case 4: return std::tanh(x);
    default: return 1.0 / (1.0 + std::exp(-x));
  }
}
static vec_f ours(int f, vec_f v) {
  switch (f) {
    case 0: return vm::exp(v);
    case 1: return vm::log(v);
    case 2: return vm::sin(v);
    case 3: return vm::cos(v);
    case 4: return vm::tanh(v);
    default: return vm::sigmoid(v);
  }
}
static vec_f libmvec(int f, vec_f v) {
  const vec_f one = vec_f{} + 1.f;
  switch (f) {
    case 0: return MV(expf)(v);
    case 1: return MV(logf)(v);
    case 2: return MV(sinf)(v);
    case 3: return MV(cosf)(v);
    case 4: return MV(tanhf)(v);
    default: return one / (one + MV(expf)(-v));  // what the sigmoid kernel did
  }
}
static double ulp_error(float y, double r) {
  int e;
  std::frexp(std::fabs(r), &e);
  return std::fabs(double(y) - r) / std::ldexp(1.0, std::max(e - 24, -149));
}

template <class F>
static double run(F fn, int f, const std::vector<float>& a, std::vector<float>& o) {
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < a.size(); i += TP_VEC_LANES) {
    vec_f v, y;
    std::memcpy(&v, &a[i], sizeof v);
    y = fn(f, v);
    std::memcpy(&o[i], &y, sizeof y);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
}

int main() {
  const size_t n = size_t(1) << 24;
  std::vector<float> a(n), o1(n), o2(n);
  std::mt19937 gen(0);
  printf("%d lanes; 16M elements, min of 9 interleaved rounds\n", TP_VEC_LANES);
  for (int f = 0; f < 6; ++f) {
    std::uniform_real_distribution<float> dist(kLo[f], kHi[f]);
    for (auto& v : a) v = dist(gen);
    run(ours, f, a, o1);
    run(libmvec, f, a, o2);
    double u1 = 0, u2 = 0;
    for (size_t i = 0; i < n; i += 7) {
      const double r = reference(f, a[i]);
      u1 = std::max(u1, ulp_error(o1[i], r));
      u2 = std::max(u2, ulp_error(o2[i], r));
    }
    if (u1 > 1.0) {
      printf("%s: ours %.2f ulp off\n", kNames[f], u1);
      return 1;
    }
    double t1 = 1e9, t2 = 1e9;
    for (int rep = 0; rep < 9; ++rep) {
      t1 = std::min(t1, run(ours, f, a, o1));
      t2 = std::min(t2, run(libmvec, f, a, o2));
    }
    printf("%-8s ours %6.2f ms (max %.2f ulp)  libmvec %6.2f ms (max %.2f ulp)  ratio %.2f\n", kNames[f], t1, u1,
           t2, u2, t1 / t2);
  }
}
