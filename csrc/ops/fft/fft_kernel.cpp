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
// - Threads and buffers are ours: a 1-D pass over an array (`batched`) splits its lines
//   into one contiguous range per thread (parallel_for over OpenMP, tp.get_num_threads());
//   each thread gathers VLEN lines into a buffer it keeps, runs pocketfft's plan on them
//   (one line per lane) and scatters the result, the last lines one at a time. pocketfft's
//   own driver allocated that buffer per call: above glibc's mmap threshold (VLEN x 4096
//   points) each call page-faulted it in again, which cost more than the transform (8 lines
//   of 65536: 8.0 ms against 1.3 ms now). Its thread pool is compiled out, so no second pool
//   competes with OpenMP's spinning workers and nothing needs fork handlers.
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


int64_t prod(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
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

/// Per thread: a buffer of at least n elements of E, grown as needed and kept (Tag tells
/// the buffers of one thread apart). Large blocks from malloc come from fresh mmap pages each
/// time (beyond glibc's mmap threshold), whose page faults cost as much as a pass of the
/// transform, so the four-step keeps its scratch matrix and line buffers.
template <class E, int Tag>
E* thread_buffer(int64_t n) {
  struct Buf {
    void* p = nullptr;
    int64_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf buf;
  if (buf.n < n) {
    std::free(buf.p);
    buf.p = nullptr;
    buf.n = 0;
    if (posix_memalign(&buf.p, 64, size_t(n) * sizeof(E)) != 0) throw std::bad_alloc();
    buf.n = n;
  }
  return static_cast<E*>(buf.p);
}

// ---- a 1-D pass over many lines ----

/// The byte offsets of the lines of a 1-D pass along `axis` (the other dims as an odometer,
/// last fastest), from line `first` on.
struct LineWalk {
  Shape size, sin, sout, idx;
  int64_t in = 0, out = 0;
  LineWalk(const Shape& shape, const Shape& si, const Shape& so, int64_t axis, int64_t first) {
    for (int64_t k = 0; k < int64_t(shape.size()); ++k)
      if (k != axis) size.push_back(shape[size_t(k)]), sin.push_back(si[size_t(k)]), sout.push_back(so[size_t(k)]);
    idx.assign(size.size(), 0);
    for (size_t k = size.size(); k-- > 0;) {
      idx[k] = first % size[k];
      first /= size[k];
      in += idx[k] * sin[k];
      out += idx[k] * sout[k];
    }
  }
  void next() {
    for (size_t k = size.size(); k-- > 0;) {
      in += sin[k];
      out += sout[k];
      if (++idx[k] < size[k]) return;
      in -= size[k] * sin[k];
      out -= size[k] * sout[k];
      idx[k] = 0;
    }
  }
};

/// A 1-D pass of `kind` along `axis`: `len` points per line (the real side's for r2c/c2r),
/// `shape` the input side's sizes. The lines are split over the threads in contiguous ranges;
/// each thread transforms VLEN lines at a time (one per SIMD lane, pocketfft's multi-line
/// form) in a buffer it keeps (thread_buffer), the remaining lines one by one.
template <class T>
void batched(tp::fft::Kind kind, const Shape& shape, const Shape& si, const Shape& so, int64_t axis, int64_t len,
             const char* in, char* out, bool forward, T fct) {
  using tp::fft::Kind;
  using V = pd::vtype_t<T>;
  constexpr int64_t L = int64_t(kLanes<T>);
  const int64_t lines = shape[size_t(axis)] ? prod(shape) / shape[size_t(axis)] : 0;
  if (lines == 0) return;
  const int64_t ai = si[size_t(axis)], ao = so[size_t(axis)];
  std::shared_ptr<pd::pocketfft_c<T>> pc;
  std::shared_ptr<pd::pocketfft_r<T>> pr;
  if (kind == Kind::C2C)
    pc = pd::get_plan<pd::pocketfft_c<T>>(size_t(len));
  else
    pr = pd::get_plan<pd::pocketfft_r<T>>(size_t(len));
  const int64_t grain = std::max<int64_t>(L, (int64_t(1) << 16) / std::max<int64_t>(len, 1) + 1);
  parallel_for(0, lines, grain, [&](int64_t lo, int64_t hi) {
    LineWalk w(shape, si, so, axis, lo);
    int64_t io[L], oo[L];
    auto cin = [&](int64_t base, int64_t i) { return *reinterpret_cast<const cmplx<T>*>(in + base + i * ai); };
    auto rin = [&](int64_t base, int64_t i) { return *reinterpret_cast<const T*>(in + base + i * ai); };
    auto cout_ = [&](int64_t base, int64_t i) { return reinterpret_cast<cmplx<T>*>(out + base + i * ao); };
    auto rout = [&](int64_t base, int64_t i) { return reinterpret_cast<T*>(out + base + i * ao); };
    int64_t l = lo;
    if (kind == Kind::C2C) {
      cmplx<V>* buf = thread_buffer<cmplx<V>, 2>(len);
      for (; l + L <= hi; l += L) {
        for (int64_t j = 0; j < L; ++j, w.next()) io[j] = w.in, oo[j] = w.out;
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < L; ++j) {
            const cmplx<T> v = cin(io[j], i);
            buf[i].r[j] = v.r;
            buf[i].i[j] = v.i;
          }
        pc->exec(buf, fct, forward);
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < L; ++j) *cout_(oo[j], i) = cmplx<T>(buf[i].r[j], buf[i].i[j]);
      }
      cmplx<T>* b1 = reinterpret_cast<cmplx<T>*>(buf);
      for (; l < hi; ++l, w.next()) {
        for (int64_t i = 0; i < len; ++i) b1[i] = cin(w.in, i);
        pc->exec(b1, fct, forward);
        for (int64_t i = 0; i < len; ++i) *cout_(w.out, i) = b1[i];
      }
    } else if (kind == Kind::R2C) {
      // pocketfft's real transform leaves r0, r1, i1, r2, i2, ... (i of n/2 absent for even n)
      V* buf = thread_buffer<V, 2>(len);
      for (; l + L <= hi; l += L) {
        for (int64_t j = 0; j < L; ++j, w.next()) io[j] = w.in, oo[j] = w.out;
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < L; ++j) buf[i][j] = rin(io[j], i);
        pr->exec(buf, fct, true);
        for (int64_t j = 0; j < L; ++j) *cout_(oo[j], 0) = cmplx<T>(buf[0][j], T(0));
        int64_t i = 1, k = 1;
        for (; i < len - 1; i += 2, ++k)
          for (int64_t j = 0; j < L; ++j) *cout_(oo[j], k) = cmplx<T>(buf[i][j], buf[i + 1][j]);
        if (i < len)
          for (int64_t j = 0; j < L; ++j) *cout_(oo[j], k) = cmplx<T>(buf[i][j], T(0));
      }
      T* b1 = reinterpret_cast<T*>(buf);
      for (; l < hi; ++l, w.next()) {
        for (int64_t i = 0; i < len; ++i) b1[i] = rin(w.in, i);
        pr->exec(b1, fct, true);
        *cout_(w.out, 0) = cmplx<T>(b1[0], T(0));
        int64_t i = 1, k = 1;
        for (; i < len - 1; i += 2, ++k) *cout_(w.out, k) = cmplx<T>(b1[i], b1[i + 1]);
        if (i < len) *cout_(w.out, k) = cmplx<T>(b1[i], T(0));
      }
    } else {
      // C2R: the inverse of that packing (imaginary parts of bins 0 and n/2 ignored)
      V* buf = thread_buffer<V, 2>(len);
      for (; l + L <= hi; l += L) {
        for (int64_t j = 0; j < L; ++j, w.next()) io[j] = w.in, oo[j] = w.out;
        for (int64_t j = 0; j < L; ++j) buf[0][j] = cin(io[j], 0).r;
        int64_t i = 1, k = 1;
        for (; i < len - 1; i += 2, ++k)
          for (int64_t j = 0; j < L; ++j) {
            const cmplx<T> v = cin(io[j], k);
            buf[i][j] = v.r;
            buf[i + 1][j] = v.i;
          }
        if (i < len)
          for (int64_t j = 0; j < L; ++j) buf[i][j] = cin(io[j], k).r;
        pr->exec(buf, fct, false);
        for (int64_t i2 = 0; i2 < len; ++i2)
          for (int64_t j = 0; j < L; ++j) *rout(oo[j], i2) = buf[i2][j];
      }
      T* b1 = reinterpret_cast<T*>(buf);
      for (; l < hi; ++l, w.next()) {
        b1[0] = cin(w.in, 0).r;
        int64_t i = 1, k = 1;
        for (; i < len - 1; i += 2, ++k) {
          const cmplx<T> v = cin(w.in, k);
          b1[i] = v.r;
          b1[i + 1] = v.i;
        }
        if (i < len) b1[i] = cin(w.in, k).r;
        pr->exec(b1, fct, false);
        for (int64_t i2 = 0; i2 < len; ++i2) *rout(w.out, i2) = b1[i2];
      }
    }
  });
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
  // Each task takes kBlock vectors of lines (kBlock * L adjacent columns or rows), so every
  // strided gather (1) and transposed scatter (2) moves 4 cache lines per row, not one.
  constexpr int64_t kBlock = 4, W = kBlock * L;
  // (1) columns c0 .. c0+W-1: transform over n1, times w^(k1 n2), into t[k1][n2]
  parallel_for(0, (n2 + W - 1) / W, std::max<int64_t>(1, 16384 / (n1 * W)), [&](int64_t lo, int64_t hi) {
    cmplx<V>* buf = thread_buffer<cmplx<V>, 1>(kBlock * n1);
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
      for (int64_t m = 0; m < nv; ++m) p1->exec(buf + m * n1, T(1), forward);
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
    cmplx<V>* buf = thread_buffer<cmplx<V>, 1>(kBlock * n2);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t r0 = b * W, w = std::min(W, n1 - r0), nv = (w + L - 1) / L;
      if (w < nv * L)
        for (int64_t i = 0; i < nv * n2; ++i) buf[size_t(i)].r = buf[size_t(i)].i = V{};
      for (int64_t r = 0; r < w; ++r) {
        const cmplx<T>* row = t + (r0 + r) * n2;
        cmplx<V>* d = buf + (r / L) * n2;
        const int64_t j = r % L;
        for (int64_t i = 0; i < n2; ++i) {
          d[i].r[j] = row[i].r;
          d[i].i[j] = row[i].i;
        }
      }
      for (int64_t m = 0; m < nv; ++m) p2->exec(buf + m * n2, fct, forward);
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
    cmplx<T>* t = thread_buffer<cmplx<T>, 0>(n1 * n2);
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
  batched<T>(tp::fft::Kind::C2C, shape, si, so, axis, shape[size_t(axis)], in, out, forward, fct);
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
    batched<T>(Kind::R2C, shape, t.stride_in, t.stride_out, last, shape[size_t(last)], in, out, true, T(t.fct));
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
  batched<T>(Kind::C2R, hs, ss, t.stride_out, last, shape[size_t(last)], src, out, false, T(t.fct));
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
