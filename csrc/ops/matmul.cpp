// Matrix products: mm (more of the family lands here).
#include "core/error.h"
#include "kernels/tensor_iterator.h"
#include "linalg/blas.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

/// Checks the dtype both operands of a product share; float16 and up, integers, no bool.
void check_product_dtypes(const Tensor& a, const Tensor& b, const char* kernel) {
  TP_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
           dtype_scalar_name(a.dtype()), " != ", dtype_scalar_name(b.dtype()));
  TP_CHECK_KIND(ErrorKind::NotImplemented, a.dtype() != DType::Bool, "\"", kernel,
                "\" not implemented for 'Bool'");
}

/// The tensor a product writes: out= when BLAS can write it directly, else a new one.
Tensor product_result(OutArg out, IntArrayRef sizes, DType dtype, Device device) {
  if (out.tensor) {
    TP_CHECK(out.tensor->dtype() == dtype, "Expected out tensor to have dtype ",
             dtype_scalar_name(dtype), ", but got ", dtype_scalar_name(out.tensor->dtype()),
             " instead");
    resize_out(*out.tensor, sizes);
  }
  return empty_tensor(sizes, dtype, device);
}

/// Copies the computed `res` into out= (when given) and returns what the op returns.
Tensor finish_product(OutArg out, const Tensor& res) {
  if (!out.tensor) return res;
  copy_(const_cast<Tensor&>(*out.tensor), res);
  return *out.tensor;
}

}  // namespace

Tensor mm_impl(const Tensor& self, const Tensor& mat2, OutArg out) {
  TP_CHECK(self.dim() == 2, "self must be a matrix");
  TP_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TP_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (",
           self.size(0), "x", self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_product_dtypes(self, mat2, "addmm_impl_cpu_");
  TP_CHECK(self.device().is_cpu() && mat2.device().is_cpu(), "mm: no ", self.device().str(),
           " kernel yet");
  int64_t m = self.size(0), k = self.size(1), n = mat2.size(1);
  int64_t sizes[2] = {m, n};
  Tensor res = product_result(out, sizes, self.dtype(), self.device());
  blas::gemm(self.dtype(), m, n, k, 1.0, {self.data_ptr(), self.stride(0), self.stride(1)},
             {mat2.data_ptr(), mat2.stride(0), mat2.stride(1)}, 0.0, res.data_ptr(), n);
  return finish_product(out, res);
}

}  // namespace tp
