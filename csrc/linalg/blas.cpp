#include "linalg/blas.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/half.h"
#include "kernels/tensor_iterator.h"

namespace tp::blas {
namespace {

/// How BLAS reads an operand of `rows` x `cols`: transposed or not, leading dimension.
/// False when neither stride is a unit stride (the caller packs it first).
bool blas_layout(const MatrixRef& a, int64_t rows, int64_t cols, CBLAS_TRANSPOSE& trans,
                 int64_t& ld) {
  if ((cols == 1 || a.col_stride == 1) && (rows == 1 || a.row_stride >= std::max<int64_t>(cols, 1))) {
    trans = CblasNoTrans;
    ld = rows == 1 ? std::max<int64_t>(cols, 1) : a.row_stride;
    return true;
  }
  if ((rows == 1 || a.row_stride == 1) && (cols == 1 || a.col_stride >= std::max<int64_t>(rows, 1))) {
    trans = CblasTrans;
    ld = cols == 1 ? std::max<int64_t>(rows, 1) : a.col_stride;
    return true;
  }
  return false;
}

/// Copies a strided rows x cols operand into a dense row-major buffer of dtype `to`.
void pack(const MatrixRef& a, DType from, int64_t rows, int64_t cols, DType to, char* dst) {
  size_t fs = element_size(from), ts = element_size(to);
  for (int64_t i = 0; i < rows; ++i)
    cast_strided(static_cast<const char*>(a.data) + i * a.row_stride * int64_t(fs),
                 a.col_stride * int64_t(fs), from, dst + i * cols * int64_t(ts), int64_t(ts), to,
                 cols);
}

void check_blas_int(int64_t v) {
  TP_CHECK(v <= INT_MAX, "matrix dimension ", v, " exceeds the 32-bit BLAS limit");
}

template <class T>
void blas_gemm(int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
               double beta, T* c, int64_t ldc) {
  std::vector<T> pa, pb;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  // A conjugated operand read transposed is BLAS's conjugate transpose; read untransposed
  // (BLAS has no conjugate-only mode) it is packed and conjugated first.
  auto read = [](MatrixRef& x, int64_t rows, int64_t cols, CBLAS_TRANSPOSE& t, int64_t& ld, std::vector<T>& buf) {
    const bool direct = blas_layout(x, rows, cols, t, ld);
    if (direct && (!x.conj || t == CblasTrans)) {
      if (x.conj) t = CblasConjTrans;
      return;
    }
    buf.resize(size_t(rows * cols));
    pack(x, dtype_of<T>::value, rows, cols, dtype_of<T>::value, reinterpret_cast<char*>(buf.data()));
    if constexpr (kComplex<T>)
      if (x.conj)
        for (T& v : buf) v.im = -v.im;
    x = {buf.data(), cols, 1};
    t = CblasNoTrans, ld = std::max<int64_t>(cols, 1);
  };
  read(a, m, k, ta, lda, pa);
  read(b, k, n, tb, ldb, pb);
  for (int64_t v : {m, n, k, lda, ldb, ldc}) check_blas_int(v);
  ldc = std::max<int64_t>(ldc, std::max<int64_t>(n, 1));
  if constexpr (kComplex<T>) {
    const T al(real_t<T>(alpha), real_t<T>(0)), be(real_t<T>(beta), real_t<T>(0));
    auto gemm = std::is_same_v<T, complex64_t> ? scipy_cblas_cgemm : scipy_cblas_zgemm;
    gemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), &al, a.data, int(lda), b.data, int(ldb), &be, c,
         int(ldc));
  } else if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), float(alpha),
                      static_cast<const float*>(a.data), int(lda), static_cast<const float*>(b.data),
                      int(ldb), float(beta), c, int(ldc));
  else
    scipy_cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), alpha,
                      static_cast<const double*>(a.data), int(lda),
                      static_cast<const double*>(b.data), int(ldb), beta, c, int(ldc));
}

/// Integers have no BLAS: each row of C accumulates in int64 (wrapping like PyTorch's).
template <class T>
void loop_gemm(int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
               double beta, T* c, int64_t ldc) {
  const T* ap = static_cast<const T*>(a.data);
  const T* bp = static_cast<const T*>(b.data);
  int64_t al = int64_t(alpha), be = int64_t(beta);
#pragma omp parallel num_threads(get_num_threads()) if (m * n * k >= 32768 && m > 1)
  {
    std::vector<int64_t> acc(static_cast<size_t>(n));
#pragma omp for
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t p = 0; p < k; ++p) {
        int64_t x = int64_t(ap[i * a.row_stride + p * a.col_stride]);
        const T* brow = bp + p * b.row_stride;
        for (int64_t j = 0; j < n; ++j) acc[j] += x * int64_t(brow[j * b.col_stride]);
      }
      T* crow = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) crow[j] = T(al * acc[j] + (be ? be * int64_t(crow[j]) : 0));
    }
  }
}

/// float16/bfloat16: operands are widened to float32, multiplied by BLAS, rounded back.
void half_gemm(DType dt, int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
               double beta, void* c, int64_t ldc) {
  size_t es = element_size(dt);
  std::vector<float> fa(size_t(m * k)), fb(size_t(k * n)), fc(size_t(m * n));
  pack(a, dt, m, k, DType::Float32, reinterpret_cast<char*>(fa.data()));
  pack(b, dt, k, n, DType::Float32, reinterpret_cast<char*>(fb.data()));
  MatrixRef cref{c, ldc, 1};
  if (beta != 0) pack(cref, dt, m, n, DType::Float32, reinterpret_cast<char*>(fc.data()));
  blas_gemm<float>(m, n, k, alpha, {fa.data(), k, 1}, {fb.data(), n, 1}, beta, fc.data(), n);
  for (int64_t i = 0; i < m; ++i)
    cast_strided(reinterpret_cast<const char*>(fc.data() + i * n), 4, DType::Float32,
                 static_cast<char*>(c) + i * ldc * int64_t(es), int64_t(es), dt, n);
}

}  // namespace

namespace {

/// Tall, skinny products (C has few columns) are bound by reading A: each thread takes a
/// block of rows with a single-threaded BLAS call, which streams A better than OpenBLAS's
/// own split of such shapes. False when the shape is not of that kind.
template <class T>
bool gemm_by_row_blocks(int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
                        double beta, T* c, int64_t ldc) {
  int threads = get_num_threads();
  if (threads < 2 || omp_in_parallel() || n > 256 || m < int64_t(threads) * 256 ||
      m * n * k < (int64_t(1) << 24))
    return false;
  for (int64_t v : {m, n, k, a.row_stride, a.col_stride, b.row_stride, b.col_stride, ldc})
    if (v > INT_MAX || v < -INT_MAX) return false;  // nothing may throw inside the team
  BlasSingleThreaded single;
  int64_t block = (m + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    int64_t r0 = t * block, rows = std::min(block, m - r0);
    if (rows <= 0) continue;
    MatrixRef at{static_cast<const T*>(a.data) + r0 * a.row_stride, a.row_stride, a.col_stride, a.conj};
    blas_gemm<T>(rows, n, k, alpha, at, b, beta, c + r0 * ldc, ldc);
  }
  return true;
}

}  // namespace

void gemm(DType dt, int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
          double beta, void* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  switch (dt) {
    case DType::Float32:
      if (gemm_by_row_blocks<float>(m, n, k, alpha, a, b, beta, static_cast<float*>(c), ldc)) return;
      return blas_gemm<float>(m, n, k, alpha, a, b, beta, static_cast<float*>(c), ldc);
    case DType::Float64:
      if (gemm_by_row_blocks<double>(m, n, k, alpha, a, b, beta, static_cast<double*>(c), ldc)) return;
      return blas_gemm<double>(m, n, k, alpha, a, b, beta, static_cast<double*>(c), ldc);
    case DType::Float16:
    case DType::BFloat16: return half_gemm(dt, m, n, k, alpha, a, b, beta, c, ldc);
    case DType::Complex64: return blas_gemm<complex64_t>(m, n, k, alpha, a, b, beta, static_cast<complex64_t*>(c), ldc);
    case DType::Complex128: return blas_gemm<complex128_t>(m, n, k, alpha, a, b, beta, static_cast<complex128_t*>(c), ldc);
    default:
      visit_dtype(dt, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) loop_gemm<T>(m, n, k, alpha, a, b, beta, static_cast<T*>(c), ldc);
        else TP_CHECK_TYPE(false, "gemm: unsupported dtype ", dtype_name(dt));
      });
  }
}

void gemm_batched(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                  MatrixRef a, int64_t a_batch_stride, MatrixRef b, int64_t b_batch_stride,
                  double beta, void* c, int64_t ldc, int64_t c_batch_stride) {
  if (batch == 0 || m == 0 || n == 0) return;
  TP_CHECK_TYPE(dt != DType::Bool, "gemm: unsupported dtype ", dtype_name(dt));
  for (int64_t v : {m, n, k}) check_blas_int(v);
  int64_t es = int64_t(element_size(dt));
  auto one = [&](int64_t i) {
    MatrixRef ai{static_cast<const char*>(a.data) + i * a_batch_stride * es, a.row_stride, a.col_stride, a.conj};
    MatrixRef bi{static_cast<const char*>(b.data) + i * b_batch_stride * es, b.row_stride, b.col_stride, b.conj};
    gemm(dt, m, n, k, alpha, ai, bi, beta, static_cast<char*>(c) + i * c_batch_stride * es, ldc);
  };
  // Many small products: one whole product per thread, each a single-threaded BLAS call
  // (Note [One thread pool]). Few large ones: one after another, each threaded by BLAS.
  int threads = get_num_threads();
  bool over_batch = threads > 1 && batch >= threads && m * n * k <= (int64_t(1) << 24) &&
                    !omp_in_parallel();
  for (int64_t v : {a.row_stride, a.col_stride, b.row_stride, b.col_stride, ldc})
    over_batch = over_batch && v >= -INT_MAX && v <= INT_MAX;  // nothing may throw inside
  if (!over_batch) {
    for (int64_t i = 0; i < batch; ++i) one(i);
    return;
  }
  BlasSingleThreaded single;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < batch; ++i) one(i);
}

}  // namespace tp::blas
