// Checking CUDA runtime calls: every call's status is checked; a failure raises a
// RuntimeError naming the call site and CUDA's own message ("CUDA error: ...").
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace tp::cuda {

/// A failed CUDA runtime call; Python's tp.AcceleratorError (a RuntimeError subclass, as
/// torch.AcceleratorError).
class AcceleratorError : public Error {
 public:
  explicit AcceleratorError(std::string msg) : Error(ErrorKind::Runtime, std::move(msg)) {}
};

[[noreturn]] void fail_cuda(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace tp::cuda

/// Runs a CUDA runtime call and raises RuntimeError if it fails (clearing the error).
#define TP_CUDA_CHECK(expr)                                                       \
  do {                                                                            \
    cudaError_t tp_cuda_err_ = (expr);                                            \
    if (__builtin_expect(tp_cuda_err_ != cudaSuccess, 0))                         \
      ::tp::cuda::fail_cuda(tp_cuda_err_, #expr, __FILE__, __LINE__);             \
  } while (0)

/// For destructors and deleters: a failure is reported on stderr, never thrown.
#define TP_CUDA_WARN(expr)                                                        \
  do {                                                                            \
    cudaError_t tp_cuda_err_ = (expr);                                            \
    if (tp_cuda_err_ != cudaSuccess) {                                            \
      (void)cudaGetLastError();                                                   \
      std::fprintf(stderr, "TensorPlay warning: CUDA error: %s (%s at %s:%d)\n",  \
                   cudaGetErrorString(tp_cuda_err_), #expr, __FILE__, __LINE__);  \
    }                                                                             \
  } while (0)
