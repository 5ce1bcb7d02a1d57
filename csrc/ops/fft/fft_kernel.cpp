// The CPU FFT kernel: pocketfft driven over our thread pool, and the four-step split of long
// 1-D complex transforms (Note [FFT on the CPU]). Compiled once per CPU capability level
// (CMakeLists.txt adds it to the per-level kernel files), so pocketfft's vectors across
// lines are 4 floats wide at the baseline (SSE2) and 8 at AVX2 and AVX-512.
//
// Note [FFT on the CPU]
// pocketfft transforms one line at a time with scalar code, or VLEN lines at once, one per
// SIMD lane (its multi-transform path: lines gathered into a vector buffer, transformed,
// scattered back). Its thread pool spreads a batch's lines; a single long 1-D transform ran
// on one thread with scalar code, 1.3x (1 thread) to 2.3x (2 threads) MKL's time for 1M
// points. So:
// - pocketfft is compiled per capability level. Its namespace is renamed per level (the
//   `pocketfft` macro below), so the levels' copies of its inline functions and templates
//   are distinct symbols (Note [CPU capability], one-definition rule); only std:: code on
//   non-pocketfft types is shared, and that means the same at every level. The levels
//   differ by rounding only (vector width, FMA contraction), as MKL's paths do by CPU.
//   The AVX-512 level keeps AVX2's 8-float vectors (pocketfft would take 16): on this
//   project's AVX-512 machine (AMD EPYC) 16 lanes made rfft2 of 1024^2 1.5x and the 1M
//   four-step 1.1x slower (twice the buffer per vector of lines; 512-bit ops run as two
//   halves there), as the rest of the AVX-512 level prefers 256-bit vectors.
// - Threads are ours (parallel_for over OpenMP, tp.get_num_threads()): every 1-D pass over
//   an array splits its lines into one contiguous block per thread, each block one
//   single-threaded pocketfft call (pocketfft's own pool is compiled out, so no second pool
//   competes with OpenMP's spinning workers and nothing needs fork handlers).
// - A 1-D complex transform of N >= 4096 points with fewer lines than SIMD lanes times
//   threads takes the four-step (Bailey) split N = N1 * N2, with n = N2 n1 + n2 and
//   k = k1 + N1 k2:
//     X[k1 + N1 k2] = sum_n2 w_N2^(n2 k2) [ w_N^(n2 k1) sum_n1 w_N1^(n1 k1) x[N2 n1 + n2] ]
//   (1) the N2 strided columns' length-N1 transforms, VLEN columns per pocketfft vector
//   call, each result multiplied by its twiddle w_N^(n2 k1) on the way out into a scratch
//   matrix; (2) the N1 rows' length-N2 transforms, VLEN rows per call, written transposed
//   (X[k1 + N1 k2]: consecutive outputs per k2). Both steps are SIMD across lines and split
//   over threads; the transpose is folded into (2)'s scatter. A task gathers 4 vectors of
//   lines at once, so each strided row access moves 4 adjacent cache lines rather than one
//   (1M points: 8.2 ms instead of 10.8 at one thread); N1 and N2 are the most balanced
//   factors that are multiples of VLEN where possible (1M: 1024 x 1024). The twiddles are a
//   table of N values per size, exact to double rounding (pocketfft's sincos_2pibyn), cached
//   for the last few sizes; the scratch matrix is kept per calling thread. Each output is
//   the same sum as the direct transform's, in another order: errors stay O(log N) ulps.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/parallel.h"
#include "ops/fft/fft_cpu.h"

// Note [FFT on the CPU]: each level's pocketfft in its own namespace.
#if TP_CPU_CAPABILITY == 0
#define pocketfft pocketfft_cap_default
#elif TP_CPU_CAPABILITY == 1
#define pocketfft pocketfft_cap_avx2
#else
#define pocketfft pocketfft_cap_avx512
#endif
#if TP_CPU_CAPABILITY == 2
// 256-bit vectors at the AVX-512 level too (Note [FFT on the CPU]): pocketfft picks its
// vector width from this macro alone; the compiler still has AVX-512VL's 32 registers
#undef __AVX512F__
#endif
#define POCKETFFT_CACHE_SIZE 16
#define POCKETFFT_NO_MULTITHREADING
#include <pocketfft_hdronly.h>

namespace tp::cpu::TP_CPU_NS {

namespace {

namespace pd = pocketfft::detail;
using pd::cmplx;

template <class T>
constexpr size_t kLanes = pd::VLEN<T>::val;

using Shape = std::vector<int64_t>;

pocketfft::shape_t ushape(const Shape& s) { return pocketfft::shape_t(s.begin(), s.end()); }
pocketfft::stride_t sstride(const Shape& s) { return pocketfft::stride_t(s.begin(), s.end()); }

int64_t prod(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// Runs `call(sub_shape, in, out)` over the lines of a 1-D pass along `axis` (sizes `shape`
/// on the input side; `oshape` on the output side, which may differ along `axis` only), the
/// lines split into one contiguous block per thread along the largest other dim.
template <class T, class F>
void over_lines(const Shape& shape, const Shape& si, const Shape& so, int64_t axis, const char* in, char* out,
                const F& call) {
  const int64_t len = shape[size_t(axis)], lines = len ? prod(shape) / len : 0;
  int64_t d = -1;
  for (int64_t k = 0; k < int64_t(shape.size()); ++k)
    if (k != axis && (d < 0 || shape[size_t(k)] > shape[size_t(d)])) d = k;
  if (d < 0 || lines <= 1) return call(shape, in, out);
  const int64_t n = shape[size_t(d)], per = lines / n;
  // a block holds at least one vector of lines and ~64K points (thread start-up is ~us)
  const int64_t grain = std::max<int64_t>((int64_t(kLanes<T>) + per - 1) / per,
                                          (int64_t(1) << 16) / std::max<int64_t>(per * len, 1) + 1);
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    Shape sub = shape;
    sub[size_t(d)] = hi - lo;
    call(sub, in + lo * si[size_t(d)], out + lo * so[size_t(d)]);
  });
}

// ---- four-step ----

/// N = N1 * N2 for the four-step split, or {0, 0} where none is worth it: both factors at
/// least 16, multiples of the lane count preferred, then the most balanced.
std::pair<int64_t, int64_t> four_step_split(int64_t n, size_t lanes) {
  std::pair<int64_t, int64_t> best{0, 0};
  int best_score = -1;
  for (int64_t a = 16; a * a <= n; ++a) {
    if (n % a) continue;
    const int64_t b = n / a;
    if (b < 16) continue;
    // N1 (columns' length) = a or b; N2 (the number of columns) a multiple of the lanes
    // fills every vector of step 1, N1 one of step 2
    for (auto [n1, n2] : {std::pair{a, b}, std::pair{b, a}}) {
      const int score = 2 * (n2 % int64_t(lanes) == 0) + (n1 % int64_t(lanes) == 0);
      // a grows towards sqrt(n): later divisors are more balanced, so ties go to them
      if (score >= best_score) best_score = score, best = {n1, n2};
    }
  }
  return best;
}

/// The twiddles w^(k1 n2) = exp(2 pi i k1 n2 / N) for k1 < N1, n2 < N2 (row k1 dense), the
/// last few sizes cached (Note [FFT on the CPU]).
template <class T>
std::shared_ptr<const std::vector<cmplx<T>>> twiddles(int64_t n1, int64_t n2) {
  struct Entry {
    int64_t n1, n2;
    std::shared_ptr<const std::vector<cmplx<T>>> table;
  };
  static std::mutex mut;
  static std::vector<Entry> cache;  // most recent last
  {
    std::lock_guard<std::mutex> g(mut);
    for (size_t i = 0; i < cache.size(); ++i)
      if (cache[i].n1 == n1 && cache[i].n2 == n2) {
        Entry e = cache[i];
        cache.erase(cache.begin() + int64_t(i));
        cache.push_back(e);
        return e.table;
      }
  }
  const int64_t n = n1 * n2;
  pd::sincos_2pibyn<T> roots(static_cast<size_t>(n));
  auto table = std::make_shared<std::vector<cmplx<T>>>(size_t(n));
  cmplx<T>* w = table->data();
  parallel_for(0, n1, std::max<int64_t>(1, 65536 / n2), [&](int64_t lo, int64_t hi) {
    for (int64_t k1 = lo; k1 < hi; ++k1) {
      int64_t e = 0;  // k1 * n2 mod n, stepped
      for (int64_t j = 0; j < n2; ++j) {
        w[k1 * n2 + j] = roots[size_t(e)];
        e += k1;
        if (e >= n) e -= n;
      }
    }
  });
  std::lock_guard<std::mutex> g(mut);
  cache.push_back({n1, n2, table});
  if (cache.size() > 4) cache.erase(cache.begin());
  return table;
}

/// Per calling thread: the scratch matrix of the four-step, grown as needed.
template <class T>
cmplx<T>* four_step_scratch(int64_t n) {
  struct Buf {
    cmplx<T>* p = nullptr;
    int64_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf buf;
  if (buf.n < n) {
    std::free(buf.p);
    buf.p = static_cast<cmplx<T>*>(std::malloc(size_t(n) * sizeof(cmplx<T>)));
    buf.n = buf.p ? n : 0;
    if (!buf.p) throw std::bad_alloc();
  }
  return buf.p;
}

/// One length-(n1*n2) complex transform, x (byte stride sx) into y (byte stride sy), in
/// the four steps of Note [FFT on the CPU].
template <class T>
void four_step(const char* x, int64_t sx, char* y, int64_t sy, int64_t n1, int64_t n2, bool forward, T fct,
               const cmplx<T>* tw, cmplx<T>* t) {
  using V = pd::vtype_t<T>;
  constexpr int64_t L = int64_t(kLanes<T>);
  auto p1 = pd::get_plan<pd::pocketfft_c<T>>(size_t(n1));
  auto p2 = pd::get_plan<pd::pocketfft_c<T>>(size_t(n2));
  auto at = [](const char* base, int64_t i, int64_t s) { return reinterpret_cast<const cmplx<T>*>(base + i * s); };
  // Each task takes kBlock vectors of lines (kBlock * L adjacent columns or rows), so every
  // strided gather (1) and transposed scatter (2) moves 4 cache lines per row, not one.
  constexpr int64_t kBlock = 4, W = kBlock * L;
  // (1) columns c0 .. c0+W-1: transform over n1, times w^(k1 n2), into t[k1][n2]
  parallel_for(0, (n2 + W - 1) / W, std::max<int64_t>(1, 16384 / (n1 * W)), [&](int64_t lo, int64_t hi) {
    pd::arr<cmplx<V>> buf{size_t(kBlock * n1)};
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t c0 = b * W, w = std::min(W, n2 - c0), nv = (w + L - 1) / L;
      if (w < nv * L)  // a last, partial vector: its unused lanes zero
        for (int64_t i = 0; i < nv * n1; ++i) buf[size_t(i)].r = buf[size_t(i)].i = V{};
      for (int64_t i = 0; i < n1; ++i) {
        const char* src = x + (i * n2 + c0) * sx;
        for (int64_t c = 0; c < w; ++c) {
          const cmplx<T> v = *reinterpret_cast<const cmplx<T>*>(src + c * sx);
          cmplx<V>& d = buf[size_t((c / L) * n1 + i)];
          d.r[c % L] = v.r;
          d.i[c % L] = v.i;
        }
      }
      for (int64_t m = 0; m < nv; ++m) p1->exec(buf.data() + m * n1, T(1), forward);
      const T sgn = forward ? T(-1) : T(1);  // the table holds exp(+...)
      for (int64_t k = 0; k < n1; ++k) {
        const cmplx<T>* wr = tw + k * n2 + c0;
        cmplx<T>* tr = t + k * n2 + c0;
        for (int64_t m = 0; m < nv; ++m) {
          const cmplx<V>& v = buf[size_t(m * n1 + k)];
          const int64_t j0 = m * L;
          if (j0 + L <= w) {
            for (int64_t j = 0; j < L; ++j) {
              const T re = v.r[j], im = v.i[j], wre = wr[j0 + j].r, wim = sgn * wr[j0 + j].i;
              tr[j0 + j].r = re * wre - im * wim;
              tr[j0 + j].i = re * wim + im * wre;
            }
          } else {
            for (int64_t j = 0; j0 + j < w; ++j) {
              const T re = v.r[j], im = v.i[j], wre = wr[j0 + j].r, wim = sgn * wr[j0 + j].i;
              tr[j0 + j].r = re * wre - im * wim;
              tr[j0 + j].i = re * wim + im * wre;
            }
          }
        }
      }
    }
  });
  // (2) rows r0 .. r0+W-1: transform over n2, written to y[k1 + n1 k2]
  parallel_for(0, (n1 + W - 1) / W, std::max<int64_t>(1, 16384 / (n2 * W)), [&](int64_t lo, int64_t hi) {
    pd::arr<cmplx<V>> buf{size_t(kBlock * n2)};
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t r0 = b * W, w = std::min(W, n1 - r0), nv = (w + L - 1) / L;
      if (w < nv * L)
        for (int64_t i = 0; i < nv * n2; ++i) buf[size_t(i)].r = buf[size_t(i)].i = V{};
      for (int64_t r = 0; r < w; ++r) {
        const cmplx<T>* row = t + (r0 + r) * n2;
        cmplx<V>* d = buf.data() + (r / L) * n2;
        const int64_t j = r % L;
        for (int64_t i = 0; i < n2; ++i) {
          d[i].r[j] = row[i].r;
          d[i].i[j] = row[i].i;
        }
      }
      for (int64_t m = 0; m < nv; ++m) p2->exec(buf.data() + m * n2, fct, forward);
      for (int64_t k = 0; k < n2; ++k) {
        char* dst = y + (k * n1 + r0) * sy;
        for (int64_t r = 0; r < w; ++r) {
          const cmplx<V>& v = buf[size_t((r / L) * n2 + k)];
          auto* o = reinterpret_cast<cmplx<T>*>(dst + r * sy);
          o->r = v.r[r % L];
          o->i = v.i[r % L];
        }
      }
    }
  });
}

/// The four-step split for a 1-D complex transform of `shape[axis]` points, if it applies
/// (Note [FFT on the CPU]); {0, 0} if not.
template <class T>
std::pair<int64_t, int64_t> four_step_plan(const Shape& shape, int64_t axis) {
  const int64_t n = shape[size_t(axis)], lines = n ? prod(shape) / n : 0;
  if (n < 4096 || lines == 0 || lines >= int64_t(kLanes<T>) * std::max(1, get_num_threads())) return {0, 0};
  return four_step_split(n, kLanes<T>);
}

// ---- the three primitives ----

template <class T>
void c2c_pass(const Shape& shape, const Shape& si, const Shape& so, int64_t axis, bool forward, const char* in,
              char* out, T fct) {
  if (auto [n1, n2] = four_step_plan<T>(shape, axis); n1) {
    auto tw = twiddles<T>(n1, n2);
    cmplx<T>* t = four_step_scratch<T>(n1 * n2);
    // each line (fewer than a vector's worth per thread) in turn
    const int64_t nd = int64_t(shape.size()), lines = prod(shape) / shape[size_t(axis)];
    for (int64_t l = 0; l < lines; ++l) {
      int64_t rem = l, oi = 0, oo = 0;
      for (int64_t k = nd; k-- > 0;) {
        if (k == axis) continue;
        const int64_t idx = rem % shape[size_t(k)];
        rem /= shape[size_t(k)];
        oi += idx * si[size_t(k)];
        oo += idx * so[size_t(k)];
      }
      four_step<T>(in + oi, si[size_t(axis)], out + oo, so[size_t(axis)], n1, n2, forward, fct, tw->data(), t);
    }
    return;
  }
  over_lines<T>(shape, si, so, axis, in, out, [&](const Shape& sub, const char* a, char* b) {
    pocketfft::c2c(ushape(sub), sstride(si), sstride(so), {size_t(axis)}, forward,
                   reinterpret_cast<const std::complex<T>*>(a), reinterpret_cast<std::complex<T>*>(b), fct, 1);
  });
}

/// The half-spectrum's sizes: the last axis's n/2+1.
Shape halved(Shape s, int64_t axis) {
  s[size_t(axis)] = s[size_t(axis)] / 2 + 1;
  return s;
}

template <class T>
void run(const tp::fft::CpuTransform& t) {
  const Shape& shape = t.shape;
  const auto* in = static_cast<const char*>(t.in);
  auto* out = static_cast<char*>(t.out);
  const size_t na = t.axes.size();
  using tp::fft::Kind;
  if (t.kind == Kind::C2C) {
    // the first axis from the input into the result, the others in place
    for (size_t i = 0; i < na; ++i)
      c2c_pass<T>(shape, i ? t.stride_out : t.stride_in, t.stride_out, t.axes[i], t.forward, i ? out : in, out,
                  T(i ? 1.0 : t.fct));
    return;
  }
  const int64_t last = t.axes[na - 1];
  if (t.kind == Kind::R2C) {
    over_lines<T>(shape, t.stride_in, t.stride_out, last, in, out, [&](const Shape& sub, const char* a, char* b) {
      pocketfft::r2c(ushape(sub), sstride(t.stride_in), sstride(t.stride_out), size_t(last), t.forward,
                     reinterpret_cast<const T*>(a), reinterpret_cast<std::complex<T>*>(b), T(t.fct), 1);
    });
    const Shape hs = halved(shape, last);
    for (size_t i = 0; i + 1 < na; ++i)
      c2c_pass<T>(hs, t.stride_out, t.stride_out, t.axes[i], t.forward, out, out, T(1));
    return;
  }
  // C2R: the leading axes' inverse c2c into a dense scratch copy (the input is never
  // written), then the last axis's c2r from it
  const Shape hs = halved(shape, last);
  const char* src = in;
  Shape ss = t.stride_in;
  std::vector<cmplx<T>> scratch;
  if (na > 1) {
    scratch.resize(size_t(prod(hs)));
    Shape dense(hs.size());
    int64_t s = int64_t(sizeof(cmplx<T>));
    for (size_t k = hs.size(); k-- > 0;) {
      dense[k] = s;
      s *= hs[k];
    }
    for (size_t i = 0; i + 1 < na; ++i)
      c2c_pass<T>(hs, i ? dense : t.stride_in, dense, t.axes[i], t.forward, i ? reinterpret_cast<char*>(scratch.data()) : in,
                  reinterpret_cast<char*>(scratch.data()), T(1));
    src = reinterpret_cast<const char*>(scratch.data());
    ss = dense;
  }
  over_lines<T>(hs, ss, t.stride_out, last, src, out, [&](const Shape& sub, const char* a, char* b) {
    Shape full = sub;
    full[size_t(last)] = shape[size_t(last)];
    pocketfft::c2r(ushape(full), sstride(ss), sstride(t.stride_out), size_t(last), t.forward,
                   reinterpret_cast<const std::complex<T>*>(a), reinterpret_cast<T*>(b), T(t.fct), 1);
  });
}

void fft_kernel(const tp::fft::CpuTransform& t) {
  if (t.is_double)
    run<double>(t);
  else
    run<float>(t);
}

}  // namespace

TP_REGISTER_CPU_KERNEL(tp::fft::fft_cpu_stub, &fft_kernel);

}  // namespace tp::cpu::TP_CPU_NS
