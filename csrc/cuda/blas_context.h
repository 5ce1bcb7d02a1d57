// cuBLAS / cuBLASLt handles for the matrix products: one pair per (device, thread), made on
// first use and never destroyed, bound to the current stream with a workspace from the
// caching allocator. See Note [cuBLAS handles and workspaces] in blas_context.cpp.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>

#include "core/error.h"

namespace tp::cuda::blas {

/// What one cuBLAS call on the current device needs.
struct Context {
  cublasHandle_t handle;  // bound to `stream`, with `workspace` set (cublasSetWorkspace)
  cublasLtHandle_t lt;
  cudaStream_t stream;
  void* workspace;        // shared by cuBLAS and cuBLASLt calls of this handle and stream
  size_t workspace_size;
};

/// The calling thread's handles for the current device, bound to its current stream.
Context current_context();

/// Bytes of workspace each (handle, stream) pair gets on `device`: CUBLAS_WORKSPACE_CONFIG
/// (":SIZE_KiB:COUNT" pairs) if set, else PyTorch's default (32 MiB from compute capability
/// 9.x (Hopper) on, 8 MiB + 128 KiB before).
size_t workspace_size(int device);

/// Raises RuntimeError "CUDA error: <status> when calling `<expr>`".
[[noreturn]] void fail_cublas(int status, const char* status_name, const char* expr);

}  // namespace tp::cuda::blas

/// Runs a cuBLAS call and raises RuntimeError if it does not succeed.
#define TP_CUBLAS_CHECK(expr)                                                           \
  do {                                                                                  \
    cublasStatus_t tp_cublas_st_ = (expr);                                              \
    if (__builtin_expect(tp_cublas_st_ != CUBLAS_STATUS_SUCCESS, 0))                    \
      ::tp::cuda::blas::fail_cublas(int(tp_cublas_st_), cublasGetStatusName(tp_cublas_st_), \
                                    #expr);                                             \
  } while (0)
