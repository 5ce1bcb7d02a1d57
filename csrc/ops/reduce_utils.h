// Helpers shared by the order-statistic, counting and norm kernels: out= handling and
// the result shape of a reduction over one dim.
#pragma once
#include <algorithm>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "kernels/tensor_iterator.h"
#include "tensorplay/ops_api.h"

namespace tp {

/// `result`, or (with out=) `result` written into the out tensor, which must have its
/// dtype; a differently shaped out tensor is resized first, as PyTorch does.
inline Tensor write_out(const char* op, const Tensor& result, OutArg out) {
  if (!out.tensor) return result;
  const Tensor& o = *out.tensor;
  TP_CHECK(o.dtype() == result.dtype(), op, "(): Expected out tensor to have dtype ",
           dtype_name(result.dtype()), ", but got ", dtype_name(o.dtype()), " instead");
  IntArrayRef want = result.sizes();
  if (!std::equal(o.sizes().begin(), o.sizes().end(), want.begin(), want.end())) {
    Tensor fresh = empty_tensor(want, o.dtype(), o.device());
    o.impl()->set_storage(fresh.impl()->storage());
    o.impl()->set_sizes_and_strides(DimVector(want.data(), want.size()), contiguous_strides(want), 0);
  }
  copy_(o, result);
  return o;
}

/// `self`'s shape without dim `d` (size 1 there with keepdim); () for a 0-dim input.
inline DimVector reduced_shape(const Tensor& self, int64_t d, bool keepdim) {
  DimVector shape;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) shape.push_back(self.size(i));
    else if (keepdim) shape.push_back(1);
  }
  return shape;
}

/// float16/bfloat16 compute in float32 (PyTorch's opmath); every other dtype in itself.
inline DType opmath_dtype(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
}

}  // namespace tp
