// Vector and matrix norms behind tp.linalg.vector_norm / matrix_norm / norm (and the
// legacy tp.norm, whose Python glue picks one of them). Composites of reductions.
// Matrix norms ord 2, -2 and 'nuc' reduce the singular values (linalg.svdvals).
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "ops/pointwise.h"
#include "ops/reduce_utils.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_floating_input(const char* op, const Tensor& self) {
  TP_CHECK(is_floating(self.dtype()) || is_complex(self.dtype()), op, ": Expected a floating point or complex tensor as input. Got ",
           dtype_scalar_name(self.dtype()));
}

/// The dtype of the result: `dtype` (a float the input converts to without narrowing) or
/// the input's.
DType norm_result_dtype(const char* op, const Tensor& self, const std::optional<DType>& dtype) {
  if (!dtype) return self.dtype();
  if (is_complex(self.dtype()))
    TP_CHECK(is_complex(*dtype), op, ": dtype should be complex for complex inputs, but got ",
             dtype_scalar_name(*dtype));
  TP_CHECK(is_floating(*dtype) || (is_complex(self.dtype()) && is_complex(*dtype)), op, ": dtype should be floating point or complex, but got ",
           dtype_scalar_name(*dtype));
  TP_CHECK(promote_types(self.dtype(), *dtype) == *dtype, op, ": the dtype of the input (",
           dtype_scalar_name(self.dtype()), ") should be convertible without narrowing to the specified dtype (",
           dtype_scalar_name(*dtype), ")");
  return *dtype;
}

std::string join(IntArrayRef v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

Tensor vector_norm(const Tensor& self, double p, OptionalIntArrayRef dim, bool keepdim,
                   const std::optional<DType>& dtype) {
  const char* op = "linalg.vector_norm";
  check_floating_input(op, self);
  DType result = norm_result_dtype(op, self, dtype);
  if (p < 0 || p == kInf) {  // min/max have no identity: nothing reduced may be empty
    bool empty = self.numel() == 0 && (!dim || dim->empty());
    if (dim) for (int64_t d : *dim) empty |= self.dim() > 0 && self.size(wrap_dim(d, self.dim())) == 0;
    TP_CHECK(!empty, op, " cannot compute the ", p, " norm on an empty tensor because the operation "
             "does not have an identity");
  }
  if (is_complex(result)) {  // the norm of the moduli, in the real counterpart of the dtype
    Tensor moduli = abs(_to_dtype(self, result, false));
    return vector_norm(moduli, p, dim, keepdim, std::nullopt);
  }
  Tensor x = _to_dtype(self, opmath_dtype(result));
  Tensor r;
  if (p == 0) {
    r = sum(_to_dtype(ne(x, wrapped_scalar(Scalar(0.0))), x.dtype()), dim, keepdim);
  } else if (p == kInf || p == -kInf) {
    r = p > 0 ? amax(abs(x), dim, keepdim) : amin(abs(x), dim, keepdim);
  } else if (p == 1) {
    r = sum(abs(x), dim, keepdim);
  } else if (p == 2) {
    r = sqrt(sum(mul(x, x), dim, keepdim));
  } else {
    r = pow(sum(pow(abs(x), wrapped_scalar(Scalar(p))), dim, keepdim), wrapped_scalar(Scalar(1.0 / p)));
  }
  return _to_dtype(r, result);
}

/// The two matrix dims of `dim`, wrapped; PyTorch's checks of matrix_norm's input in its
/// order: the rank, the dtype (a half type only where `low_precision`), then the dims.
std::pair<int64_t, int64_t> matrix_dims(const char* op, const Tensor& self, IntArrayRef dim, bool low_precision) {
  TP_CHECK(self.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  check_floating_input(op, self);
  TP_CHECK(low_precision || (self.dtype() != DType::Float16 && self.dtype() != DType::BFloat16), op,
           ": Low precision dtypes not supported. Got ", dtype_scalar_name(self.dtype()));
  TP_CHECK(dim.size() == 2, op, ": dim must be a 2-tuple. Got ", join(dim, " "));
  int64_t d0 = wrap_dim(dim[0], self.dim()), d1 = wrap_dim(dim[1], self.dim());
  TP_CHECK(d0 != d1, op, ": dims must be different. Got (", d0, ", ", d1, ")");
  return {d0, d1};
}

/// The spectral norm (`ord` 2), the smallest singular value (-2) or the nuclear norm
/// ('nuc': ord 0 here) of the matrices in dims (d0, d1), from linalg.svdvals.
Tensor singular_value_norm(const Tensor& self, int ord, int64_t d0, int64_t d1, bool keepdim,
                           const std::optional<DType>& dtype) {
  Tensor A = _to_dtype(self, norm_result_dtype("linalg.matrix_norm", self, dtype));
  TP_CHECK(A.dtype() != DType::Float16 && A.dtype() != DType::BFloat16, "linalg.matrix_norm: Low precision dtypes not supported. Got ",
           dtype_scalar_name(A.dtype()));  // PyTorch's check, before svdvals (which returns an empty input)
  int64_t src[2] = {d0, d1}, dst[2] = {-2, -1};
  Tensor S = linalg_svdvals(movedim(A, IntArrayRef(src, 2), IntArrayRef(dst, 2)));
  int64_t last = -1;
  // an empty matrix has norm 0 (its sum); its smallest singular value raises, as PyTorch
  Tensor r = ord == 0 || (ord > 0 && S.size(S.dim() - 1) == 0) ? sum(S, IntArrayRef(&last, 1))
             : ord > 0                                ? amax(S, IntArrayRef(&last, 1))
                                                      : amin(S, IntArrayRef(&last, 1));
  if (!keepdim) return r;
  return unsqueeze(unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
}

Tensor matrix_norm(const Tensor& self, double p, IntArrayRef dim, bool keepdim,
                   const std::optional<DType>& dtype) {
  const char* op = "linalg.matrix_norm";
  TP_CHECK(std::abs(p) == 2 || std::abs(p) == 1 || std::abs(p) == kInf, op, ": Order ", p, " not supported.");
  auto [d0, d1] = matrix_dims(op, self, dim, std::abs(p) != 2);
  if (std::abs(p) == 2) return singular_value_norm(self, p > 0 ? 1 : -1, d0, d1, keepdim, dtype);
  if (std::abs(p) == kInf) std::swap(d0, d1);  // the inf-norm is the 1-norm of the transpose
  // column sums of |A| (over d0), then their max or min over d1
  Tensor sums = linalg_vector_norm(self, Scalar(1.0), IntArrayRef(&d0, 1), true, dtype);
  Tensor r;
  if (p > 0 && sums.size(d1) == 0) {
    DimVector shape(sums.sizes().data(), sums.sizes().size());
    shape[size_t(d1)] = 1;
    r = zeros(shape, sums.dtype(), sums.device());
  } else {
    r = p > 0 ? amax(sums, IntArrayRef(&d1, 1), true) : amin(sums, IntArrayRef(&d1, 1), true);
  }
  if (keepdim) return r;
  int64_t both[2] = {std::min(d0, d1), std::max(d0, d1)};
  return _squeeze_dims(r, IntArrayRef(both, 2));
}

Tensor matrix_norm_named(const Tensor& self, const std::string& ord, IntArrayRef dim, bool keepdim,
                         const std::optional<DType>& dtype) {
  const char* op = "linalg.matrix_norm";
  TP_CHECK(ord == "fro" || ord == "nuc", op, ": Order ", ord, " not supported.");
  auto [d0, d1] = matrix_dims(op, self, dim, ord != "nuc");
  if (ord == "nuc") return singular_value_norm(self, 0, d0, d1, keepdim, dtype);
  return linalg_vector_norm(self, Scalar(2.0), dim, keepdim, dtype);
}

constexpr int64_t kLastTwo[2] = {-2, -1};

/// linalg.norm's checks on `dim` (or, without it, on the input's rank when ord is given).
void check_norm_dims(const Tensor& self, OptionalIntArrayRef dim, bool has_ord) {
  const char* op = "linalg.norm";
  if (dim) {
    TP_CHECK(dim->size() == 1 || dim->size() == 2, op, ": If dim is specified, it must be of length 1 or 2. "
             "Got [", join(*dim, ", "), "]");
  } else if (has_ord) {
    TP_CHECK(self.dim() == 1 || self.dim() == 2, op, ": If dim is not specified but ord is, the input "
             "must be 1D or 2D. Got ", self.dim(), "D.");
  }
}

}  // namespace

Tensor vector_norm_impl(const Tensor& self, const Scalar& ord, OptionalIntArrayRef dim, bool keepdim,
                        const std::optional<DType>& dtype, OutArg out) {
  return write_out("linalg.vector_norm", vector_norm(self, ord.to_double(), dim, keepdim, dtype), out);
}

Tensor matrix_norm_impl(const Tensor& self, const Scalar& ord, IntArrayRef dim, bool keepdim,
                        const std::optional<DType>& dtype, OutArg out) {
  return write_out("linalg.matrix_norm", matrix_norm(self, ord.to_double(), dim, keepdim, dtype), out);
}

Tensor matrix_norm_str_impl(const Tensor& self, const std::string& ord, IntArrayRef dim, bool keepdim,
                            const std::optional<DType>& dtype, OutArg out) {
  return write_out("linalg.matrix_norm", matrix_norm_named(self, ord, dim, keepdim, dtype), out);
}

Tensor linalg_norm_impl(const Tensor& self, const std::optional<Scalar>& ord, OptionalIntArrayRef dim,
                        bool keepdim, const std::optional<DType>& dtype, OutArg out) {
  check_norm_dims(self, dim, ord.has_value());
  bool matrix = ord && (dim ? dim->size() == 2 : self.dim() == 2);
  Tensor r = matrix ? matrix_norm(self, ord->to_double(), dim ? *dim : IntArrayRef(kLastTwo, 2), keepdim, dtype)
                    : linalg_vector_norm(self, ord ? *ord : Scalar(2.0), dim, keepdim, dtype);
  return write_out("linalg.norm", r, out);
}

Tensor linalg_norm_str_impl(const Tensor& self, const std::string& ord, OptionalIntArrayRef dim,
                            bool keepdim, const std::optional<DType>& dtype, OutArg out) {
  check_norm_dims(self, dim, true);
  Tensor r = matrix_norm_named(self, ord, dim ? *dim : IntArrayRef(kLastTwo, 2), keepdim, dtype);
  return write_out("linalg.norm", r, out);
}

}  // namespace tp
