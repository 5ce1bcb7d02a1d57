#pragma once
// LAPACK routines from the bundled OpenBLAS (scipy-openblas32: `scipy_` prefix, 32-bit
// integers, gfortran convention: every argument by pointer, one hidden trailing size_t
// length per character argument), with overloads picking the float/double routine.
// All matrices are column-major. Complex routines take tp::Complex, whose layout is
// Fortran's COMPLEX (Note [Complex layout and arithmetic]); those with real workspaces
// (gesdd, heevd, gelsy/gelsd/gelss) take an extra rwork, and ungqr is wrapped as orgqr. Calls run on tp's thread budget: never call these from
// inside an OpenMP parallel region (Note [One thread pool]).
#include <cstddef>

#include "core/complex.h"

extern "C" {
#define TP_LAPACK_DECLARE(T, p)                                                               \
  void scipy_##p##getrf_(const int* m, const int* n, T* a, const int* lda, int* ipiv, int* info); \
  void scipy_##p##getrs_(const char* trans, const int* n, const int* nrhs, const T* a,         \
                         const int* lda, const int* ipiv, T* b, const int* ldb, int* info,     \
                         size_t trans_len);                                                   \
  void scipy_##p##potrf_(const char* uplo, const int* n, T* a, const int* lda, int* info,     \
                         size_t uplo_len);                                                    \
  void scipy_##p##geqrf_(const int* m, const int* n, T* a, const int* lda, T* tau, T* work,   \
                         const int* lwork, int* info);                                        \
  void scipy_##p##orgqr_(const int* m, const int* n, const int* k, T* a, const int* lda,      \
                         const T* tau, T* work, const int* lwork, int* info);                 \
  void scipy_##p##gesdd_(const char* jobz, const int* m, const int* n, T* a, const int* lda,  \
                         T* s, T* u, const int* ldu, T* vt, const int* ldvt, T* work,         \
                         const int* lwork, int* iwork, int* info, size_t jobz_len);           \
  void scipy_##p##syevd_(const char* jobz, const char* uplo, const int* n, T* a,              \
                         const int* lda, T* w, T* work, const int* lwork, int* iwork,         \
                         const int* liwork, int* info, size_t jobz_len, size_t uplo_len);     \
  void scipy_##p##gels_(const char* trans, const int* m, const int* n, const int* nrhs, T* a, \
                        const int* lda, T* b, const int* ldb, T* work, const int* lwork,      \
                        int* info, size_t trans_len);                                         \
  void scipy_##p##gelsy_(const int* m, const int* n, const int* nrhs, T* a, const int* lda,   \
                         T* b, const int* ldb, int* jpvt, const T* rcond, int* rank, T* work, \
                         const int* lwork, int* info);                                        \
  void scipy_##p##gelsd_(const int* m, const int* n, const int* nrhs, T* a, const int* lda,   \
                         T* b, const int* ldb, T* s, const T* rcond, int* rank, T* work,      \
                         const int* lwork, int* iwork, int* info);                            \
  void scipy_##p##gelss_(const int* m, const int* n, const int* nrhs, T* a, const int* lda,   \
                         T* b, const int* ldb, T* s, const T* rcond, int* rank, T* work,      \
                         const int* lwork, int* info);                                          \
  void scipy_##p##sytrf_(const char* uplo, const int* n, T* a, const int* lda, int* ipiv,     \
                         T* work, const int* lwork, int* info, size_t uplo_len);              \
  void scipy_##p##sytrs_(const char* uplo, const int* n, const int* nrhs, const T* a,         \
                         const int* lda, const int* ipiv, T* b, const int* ldb, int* info,    \
                         size_t uplo_len);                                                    \
  void scipy_##p##trsm_(const char* side, const char* uplo, const char* transa,               \
                        const char* diag, const int* m, const int* n, const T* alpha,         \
                        const T* a, const int* lda, T* b, const int* ldb, size_t side_len,    \
                        size_t uplo_len, size_t transa_len, size_t diag_len);
TP_LAPACK_DECLARE(float, s)
TP_LAPACK_DECLARE(double, d)
#undef TP_LAPACK_DECLARE
// General eigenproblem: real routines return conjugate pairs as (wr, wi) and pack a pair's
// eigenvectors into two real columns; complex ones take a real workspace rwork (2n).
#define TP_LAPACK_DECLARE_GEEV(T, p)                                                          \
  void scipy_##p##geev_(const char* jobvl, const char* jobvr, const int* n, T* a,             \
                        const int* lda, T* wr, T* wi, T* vl, const int* ldvl, T* vr,          \
                        const int* ldvr, T* work, const int* lwork, int* info,                \
                        size_t jobvl_len, size_t jobvr_len);
TP_LAPACK_DECLARE_GEEV(float, s)
TP_LAPACK_DECLARE_GEEV(double, d)
#undef TP_LAPACK_DECLARE_GEEV
#define TP_LAPACK_DECLARE_COMPLEX(C, R, p)                                                    \
  void scipy_##p##getrf_(const int* m, const int* n, C* a, const int* lda, int* ipiv, int* info); \
  void scipy_##p##getrs_(const char* trans, const int* n, const int* nrhs, const C* a,         \
                         const int* lda, const int* ipiv, C* b, const int* ldb, int* info,     \
                         size_t trans_len);                                                   \
  void scipy_##p##geev_(const char* jobvl, const char* jobvr, const int* n, C* a,             \
                        const int* lda, C* w, C* vl, const int* ldvl, C* vr, const int* ldvr, \
                        C* work, const int* lwork, R* rwork, int* info, size_t jobvl_len,     \
                        size_t jobvr_len);                                                    \
  void scipy_##p##potrf_(const char* uplo, const int* n, C* a, const int* lda, int* info,     \
                         size_t uplo_len);                                                    \
  void scipy_##p##geqrf_(const int* m, const int* n, C* a, const int* lda, C* tau, C* work,   \
                         const int* lwork, int* info);                                        \
  void scipy_##p##ungqr_(const int* m, const int* n, const int* k, C* a, const int* lda,      \
                         const C* tau, C* work, const int* lwork, int* info);                 \
  void scipy_##p##gesdd_(const char* jobz, const int* m, const int* n, C* a, const int* lda,  \
                         R* s, C* u, const int* ldu, C* vt, const int* ldvt, C* work,         \
                         const int* lwork, R* rwork, int* iwork, int* info, size_t jobz_len); \
  void scipy_##p##heevd_(const char* jobz, const char* uplo, const int* n, C* a,              \
                         const int* lda, R* w, C* work, const int* lwork, R* rwork,           \
                         const int* lrwork, int* iwork, const int* liwork, int* info,         \
                         size_t jobz_len, size_t uplo_len);                                   \
  void scipy_##p##gels_(const char* trans, const int* m, const int* n, const int* nrhs, C* a, \
                        const int* lda, C* b, const int* ldb, C* work, const int* lwork,      \
                        int* info, size_t trans_len);                                         \
  void scipy_##p##gelsy_(const int* m, const int* n, const int* nrhs, C* a, const int* lda,   \
                         C* b, const int* ldb, int* jpvt, const R* rcond, int* rank, C* work, \
                         const int* lwork, R* rwork, int* info);                              \
  void scipy_##p##gelsd_(const int* m, const int* n, const int* nrhs, C* a, const int* lda,   \
                         C* b, const int* ldb, R* s, const R* rcond, int* rank, C* work,      \
                         const int* lwork, R* rwork, int* iwork, int* info);                  \
  void scipy_##p##gelss_(const int* m, const int* n, const int* nrhs, C* a, const int* lda,   \
                         C* b, const int* ldb, R* s, const R* rcond, int* rank, C* work,      \
                         const int* lwork, R* rwork, int* info);                              \
  void scipy_##p##sytrf_(const char* uplo, const int* n, C* a, const int* lda, int* ipiv,     \
                         C* work, const int* lwork, int* info, size_t uplo_len);              \
  void scipy_##p##sytrs_(const char* uplo, const int* n, const int* nrhs, const C* a,         \
                         const int* lda, const int* ipiv, C* b, const int* ldb, int* info,    \
                         size_t uplo_len);                                                    \
  void scipy_##p##hetrf_(const char* uplo, const int* n, C* a, const int* lda, int* ipiv,     \
                         C* work, const int* lwork, int* info, size_t uplo_len);              \
  void scipy_##p##hetrs_(const char* uplo, const int* n, const int* nrhs, const C* a,         \
                         const int* lda, const int* ipiv, C* b, const int* ldb, int* info,    \
                         size_t uplo_len);                                                    \
  void scipy_##p##trsm_(const char* side, const char* uplo, const char* transa,               \
                        const char* diag, const int* m, const int* n, const C* alpha,         \
                        const C* a, const int* lda, C* b, const int* ldb, size_t side_len,    \
                        size_t uplo_len, size_t transa_len, size_t diag_len);
TP_LAPACK_DECLARE_COMPLEX(tp::complex64_t, float, c)
TP_LAPACK_DECLARE_COMPLEX(tp::complex128_t, double, z)
#undef TP_LAPACK_DECLARE_COMPLEX
}

namespace tp::lapack {

// One overload per precision; arguments as in the Fortran routines, by value where LAPACK
// only reads them. `info` follows LAPACK: < 0 a bad argument, > 0 a routine-specific failure.
#define TP_LAPACK_WRAP(T, p)                                                                  \
  inline void getrf(int m, int n, T* a, int lda, int* ipiv, int* info) {                      \
    scipy_##p##getrf_(&m, &n, a, &lda, ipiv, info);                                           \
  }                                                                                           \
  inline void getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b,  \
                    int ldb, int* info) {                                                     \
    scipy_##p##getrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);                    \
  }                                                                                           \
  inline void potrf(char uplo, int n, T* a, int lda, int* info) {                             \
    scipy_##p##potrf_(&uplo, &n, a, &lda, info, 1);                                           \
  }                                                                                           \
  inline void geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info) {     \
    scipy_##p##geqrf_(&m, &n, a, &lda, tau, work, &lwork, info);                              \
  }                                                                                           \
  inline void orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork,     \
                    int* info) {                                                              \
    scipy_##p##orgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);                          \
  }                                                                                           \
  inline void gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt,       \
                    int ldvt, T* work, int lwork, int* iwork, int* info) {                    \
    scipy_##p##gesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork,     \
                      info, 1);                                                               \
  }                                                                                           \
  inline void syevd(char jobz, char uplo, int n, T* a, int lda, T* w, T* work, int lwork,     \
                    int* iwork, int liwork, int* info) {                                      \
    scipy_##p##syevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1); \
  }                                                                                           \
  inline void gels(char trans, int m, int n, int nrhs, T* a, int lda, T* b, int ldb, T* work, \
                   int lwork, int* info) {                                                    \
    scipy_##p##gels_(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, work, &lwork, info, 1);         \
  }                                                                                           \
  inline void gelsy(int m, int n, int nrhs, T* a, int lda, T* b, int ldb, int* jpvt, T rcond, \
                    int* rank, T* work, int lwork, int* info) {                               \
    scipy_##p##gelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork, info); \
  }                                                                                           \
  inline void gelsd(int m, int n, int nrhs, T* a, int lda, T* b, int ldb, T* s, T rcond,      \
                    int* rank, T* work, int lwork, int* iwork, int* info) {                   \
    scipy_##p##gelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork,  \
                      info);                                                                  \
  }                                                                                           \
  inline void gelss(int m, int n, int nrhs, T* a, int lda, T* b, int ldb, T* s, T rcond,      \
                    int* rank, T* work, int lwork, int* info) {                               \
    scipy_##p##gelss_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, info);  \
  }                                                                                           \
  inline void sytrf(char uplo, int n, T* a, int lda, int* ipiv, T* work, int lwork, int* info) { \
    scipy_##p##sytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);                       \
  }                                                                                           \
  inline void sytrs(char uplo, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b,   \
                    int ldb, int* info) {                                                     \
    scipy_##p##sytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);                     \
  }                                                                                           \
  /* BLAS trsm: op(A) X = alpha B (side 'L') or X op(A) = alpha B ('R'), X over B */          \
  inline void trsm(char side, char uplo, char transa, char diag, int m, int n, T alpha,       \
                   const T* a, int lda, T* b, int ldb) {                                      \
    scipy_##p##trsm_(&side, &uplo, &transa, &diag, &m, &n, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1); \
  }
TP_LAPACK_WRAP(float, s)
TP_LAPACK_WRAP(double, d)
#undef TP_LAPACK_WRAP

/* Right eigenvectors only (jobvl 'N'); vr may be a dummy with ldvr 1 when jobvr is 'N'. */
#define TP_LAPACK_WRAP_GEEV(T, p)                                                             \
  inline void geev(char jobvr, int n, T* a, int lda, T* wr, T* wi, T* vr, int ldvr, T* work,  \
                   int lwork, int* info) {                                                    \
    char jobvl = 'N';                                                                         \
    int ldvl = 1;                                                                             \
    scipy_##p##geev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, nullptr, &ldvl, vr, &ldvr, work,   \
                     &lwork, info, 1, 1);                                                     \
  }
TP_LAPACK_WRAP_GEEV(float, s)
TP_LAPACK_WRAP_GEEV(double, d)
#undef TP_LAPACK_WRAP_GEEV

#define TP_LAPACK_WRAP_COMPLEX(C, R, p)                                                       \
  inline void getrf(int m, int n, C* a, int lda, int* ipiv, int* info) {                      \
    scipy_##p##getrf_(&m, &n, a, &lda, ipiv, info);                                           \
  }                                                                                           \
  inline void getrs(char trans, int n, int nrhs, const C* a, int lda, const int* ipiv, C* b,  \
                    int ldb, int* info) {                                                     \
    scipy_##p##getrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);                    \
  }                                                                                           \
  inline void geev(char jobvr, int n, C* a, int lda, C* w, C* vr, int ldvr, C* work,          \
                   int lwork, R* rwork, int* info) {                                          \
    char jobvl = 'N';                                                                         \
    int ldvl = 1;                                                                             \
    scipy_##p##geev_(&jobvl, &jobvr, &n, a, &lda, w, nullptr, &ldvl, vr, &ldvr, work, &lwork, \
                     rwork, info, 1, 1);                                                      \
  }                                                                                           \
  inline void potrf(char uplo, int n, C* a, int lda, int* info) {                             \
    scipy_##p##potrf_(&uplo, &n, a, &lda, info, 1);                                           \
  }                                                                                           \
  inline void geqrf(int m, int n, C* a, int lda, C* tau, C* work, int lwork, int* info) {     \
    scipy_##p##geqrf_(&m, &n, a, &lda, tau, work, &lwork, info);                              \
  }                                                                                           \
  /* ungqr: orgqr's unitary counterpart, under orgqr's name so templates call either */      \
  inline void orgqr(int m, int n, int k, C* a, int lda, const C* tau, C* work, int lwork,     \
                    int* info) {                                                              \
    scipy_##p##ungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);                          \
  }                                                                                           \
  inline void gesdd(char jobz, int m, int n, C* a, int lda, R* s, C* u, int ldu, C* vt,       \
                    int ldvt, C* work, int lwork, R* rwork, int* iwork, int* info) {          \
    scipy_##p##gesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork,     \
                      iwork, info, 1);                                                        \
  }                                                                                           \
  inline void heevd(char jobz, char uplo, int n, C* a, int lda, R* w, C* work, int lwork,     \
                    R* rwork, int lrwork, int* iwork, int liwork, int* info) {                \
    scipy_##p##heevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork,      \
                      &liwork, info, 1, 1);                                                   \
  }                                                                                           \
  inline void gels(char trans, int m, int n, int nrhs, C* a, int lda, C* b, int ldb, C* work, \
                   int lwork, int* info) {                                                    \
    scipy_##p##gels_(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, work, &lwork, info, 1);         \
  }                                                                                           \
  inline void gelsy(int m, int n, int nrhs, C* a, int lda, C* b, int ldb, int* jpvt, R rcond, \
                    int* rank, C* work, int lwork, R* rwork, int* info) {                     \
    scipy_##p##gelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork, rwork, \
                      info);                                                                  \
  }                                                                                           \
  inline void gelsd(int m, int n, int nrhs, C* a, int lda, C* b, int ldb, R* s, R rcond,      \
                    int* rank, C* work, int lwork, R* rwork, int* iwork, int* info) {         \
    scipy_##p##gelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, rwork,  \
                      iwork, info);                                                           \
  }                                                                                           \
  inline void gelss(int m, int n, int nrhs, C* a, int lda, C* b, int ldb, R* s, R rcond,      \
                    int* rank, C* work, int lwork, R* rwork, int* info) {                     \
    scipy_##p##gelss_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, rwork,  \
                      info);                                                                  \
  }                                                                                           \
  /* complex symmetric (A = A^T) Bunch-Kaufman, as the real sytrf/sytrs */                    \
  inline void sytrf(char uplo, int n, C* a, int lda, int* ipiv, C* work, int lwork, int* info) { \
    scipy_##p##sytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);                       \
  }                                                                                           \
  inline void sytrs(char uplo, int n, int nrhs, const C* a, int lda, const int* ipiv, C* b,   \
                    int ldb, int* info) {                                                     \
    scipy_##p##sytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);                     \
  }                                                                                           \
  /* Hermitian (A = A^H) Bunch-Kaufman */                                                     \
  inline void hetrf(char uplo, int n, C* a, int lda, int* ipiv, C* work, int lwork, int* info) { \
    scipy_##p##hetrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);                       \
  }                                                                                           \
  inline void hetrs(char uplo, int n, int nrhs, const C* a, int lda, const int* ipiv, C* b,   \
                    int ldb, int* info) {                                                     \
    scipy_##p##hetrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);                     \
  }                                                                                           \
  inline void trsm(char side, char uplo, char transa, char diag, int m, int n, C alpha,       \
                   const C* a, int lda, C* b, int ldb) {                                      \
    scipy_##p##trsm_(&side, &uplo, &transa, &diag, &m, &n, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1); \
  }
TP_LAPACK_WRAP_COMPLEX(complex64_t, float, c)
TP_LAPACK_WRAP_COMPLEX(complex128_t, double, z)
#undef TP_LAPACK_WRAP_COMPLEX

}  // namespace tp::lapack
