#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "core/error.h"

// Note [One thread pool]
// OpenBLAS (the scipy-openblas32 build) would start its own pthreads, which busy-wait
// after each call and then compete with our OpenMP threads for the same cores. Instead
// we hand OpenBLAS a threads callback: every parallel BLAS/LAPACK call runs its jobs on
// our OpenMP team, so kernels and BLAS share one pool and one budget. OpenBLAS's jobs
// wait on one another (level-3 threading), so all `numjobs` of them must run at once:
// the team has exactly numjobs threads. BLAS is never called multi-threaded from inside
// our own parallel regions (a nested team would have one thread and the jobs would wait
// forever): code that calls BLAS from a parallel region (blas::gemm_batched, one product
// per thread) holds a BlasSingleThreaded for the region's duration. Ops run under the
// GIL, so no other thread changes the BLAS thread count meanwhile.

extern "C" {
typedef void (*openblas_dojob_callback)(int thread_num, void* jobdata, int dojob_data);
typedef void (*openblas_threads_callback)(int sync, openblas_dojob_callback dojob, int numjobs,
                                          size_t jobdata_elsize, void* jobdata, int dojob_data);
void scipy_openblas_set_threads_callback_function(openblas_threads_callback callback);
void scipy_openblas_set_num_threads(int num_threads);
}

namespace tp {
namespace {

int g_num_threads = 0;

void run_blas_jobs(int /*sync*/, openblas_dojob_callback dojob, int numjobs, size_t elsize,
                   void* jobdata, int dojob_data) {
  char* base = static_cast<char*>(jobdata);
  if (numjobs <= 1) {
    if (numjobs == 1) dojob(0, base, dojob_data);
    return;
  }
#pragma omp parallel num_threads(numjobs)
  {
    int team = omp_get_num_threads();
    for (int i = omp_get_thread_num(); i < numjobs; i += team)
      dojob(i, base + size_t(i) * elsize, dojob_data);
  }
}

void apply(int n) {
  g_num_threads = n;
  static bool hooked = [] {
    scipy_openblas_set_threads_callback_function(run_blas_jobs);
    return true;
  }();
  (void)hooked;
  scipy_openblas_set_num_threads(n);
}

}  // namespace

int get_num_threads() {
  if (g_num_threads <= 0) apply(std::max(1, omp_get_max_threads()));
  return g_num_threads;
}

BlasSingleThreaded::BlasSingleThreaded() {
  get_num_threads();
  scipy_openblas_set_num_threads(1);
}

BlasSingleThreaded::~BlasSingleThreaded() { scipy_openblas_set_num_threads(g_num_threads); }

void set_num_threads(int n) {
  TP_CHECK(n > 0, "set_num_threads expects a positive integer");
  apply(n);
}

}  // namespace tp
