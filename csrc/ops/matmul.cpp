// Matrix products: mm, bmm, matmul, mv, dot, vdot, inner, outer/ger, addmm, addmv,
// addbmm, baddbmm, tensordot, kron, linalg_cross/cross and trace (einsum: einsum.cpp).
// Every GEMM-shaped product ends in run_gemm, which hands strided operands to blas:: (CPU)
// or cuda::blas:: (CUDA: cuBLAS / cuBLASLt, csrc/cuda/blas.cpp).
#include "ops/matmul.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "kernels/tensor_iterator.h"
#include "linalg/blas.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/blas.h"
#endif

namespace tp {

namespace {

/// The NotImplementedError PyTorch raises for a dtype its product kernel lacks: bool on
/// CPU (`cpu_kernel`); on CUDA everything but float32/float64/float16/bfloat16 and complex.
void check_kernel_dtype(const Tensor& t, const char* cpu_kernel, const char* cuda_kernel,
                        const Tensor* other = nullptr, bool empty_returns = true) {
  DType dt = t.dtype();
  bool cuda = t.device().is_cuda();
  // PyTorch's products return before dispatching on the dtype when an operand is empty
  // (a bool mm of a 2x0 and a 0x2 matrix gives zeros); its CPU dot does not.
  if ((empty_returns || cuda) && (t.numel() == 0 || (other && other->numel() == 0))) return;
  bool ok = cuda ? dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16 ||
                       dt == DType::BFloat16 || is_complex(dt)
                 : dt != DType::Bool;
  TP_CHECK_KIND(ErrorKind::NotImplemented, ok, "\"", cuda ? cuda_kernel : cpu_kernel,
                "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// A bool add*mm passes the dtype check only when an operand is empty; PyTorch then scales
/// the result by beta in place, which a number beta cannot do to a bool tensor.
void check_bool_beta(DType dt, const Scalar& beta) {
  if (dt != DType::Bool || beta.is_bool() || beta.to_double() == 0) return;
  TP_FAIL("result type ", beta.is_floating() ? "Float" : "Long",
          " can't be cast to the desired output type Bool");
}

void check_same_dtype(const Tensor& a, const Tensor& b) {
  TP_CHECK(a.dtype() == b.dtype(), "expected scalar type ", dtype_scalar_name(a.dtype()),
           " but found ", dtype_scalar_name(b.dtype()));
}

bool shares_memory(const Tensor& a, const Tensor& b) {
  return a.impl()->storage().get() == b.impl()->storage().get();
}

/// Where a product is written: out= (or the in-place self) itself when it is contiguous
/// and shares no memory with an input, else a scratch tensor that finish() copies back.
struct ProductDst {
  Tensor dst;
  const Tensor* out = nullptr;
  bool direct = true;
  bool resize = false;  // out= is an input that must be resized: only once the product is done

  Tensor finish() const {
    if (!out) return dst;
    if (resize) resize_out(*out, dst.sizes());
    if (!direct) copy_(*out, dst);
    return *out;
  }

  /// Whether the product is on the meta device: the caller returns finish() at once.
  bool meta() const { return is_meta(dst); }
};

ProductDst product_dst(OutArg out, IntArrayRef sizes, DType dtype, Device device,
                       std::initializer_list<const Tensor*> inputs) {
  if (!out.tensor) return {empty_tensor(sizes, dtype, device)};
  const Tensor& o = *out.tensor;
  TP_CHECK(o.device() == device, "Expected all tensors to be on the same device, but found at "
           "least two devices, ", device.str(), " and ", o.device().str(), "!");
  if (out.inplace) {
    TP_CHECK(o.sizes().size() == sizes.size() && std::equal(sizes.begin(), sizes.end(), o.sizes().begin()),
             "Bad in-place call: input tensor size ", shape_str(o.sizes()),
             " and output tensor size ", shape_str(sizes), " should match");
  } else {
    TP_CHECK(o.dtype() == dtype, "Expected out tensor to have dtype ", dtype_scalar_name(dtype),
             ", but got ", dtype_scalar_name(o.dtype()), " instead");
    if (!std::equal(sizes.begin(), sizes.end(), o.sizes().begin(), o.sizes().end())) {
      // An out= that is one of the inputs (addmv(v, m, x, out=m)) is resized only after the
      // product has read it: resized first, the kernel read a matrix of the new shape past its
      // storage (heap corruption; fuzz seed 20261209). PyTorch resizes first and then fails or
      // reads the clobbered input (docs/fuzz_findings.md, D3).
      for (const Tensor* t : inputs)
        if (t->defined() && shares_memory(o, *t)) return {empty_tensor(sizes, dtype, device), &o, false, true};
      resize_out(o, sizes);
    }
  }
  bool direct = o.is_contiguous();
  for (const Tensor* t : inputs)
    direct = direct && (t->is_same(o) ? out.inplace : !shares_memory(o, *t));
  if (direct) return {o, &o, true};
  return {empty_tensor(sizes, dtype, device), &o, false};
}

/// Views `t` (batch..., r, c) as (B, r, c) with one batch stride; copies when the batch
/// dims cannot be merged.
Tensor fold_batch(const Tensor& t) {
  int64_t nd = t.dim();
  int64_t b = 1;
  for (int64_t i = 0; i < nd - 2; ++i) b *= t.size(i);
  int64_t sizes[3] = {b, t.size(nd - 2), t.size(nd - 1)};
  return reshape(t, sizes);
}

}  // namespace

// Note [Conjugate operands of matrix products]
// mm, bmm, matmul, addmm and dot are `math_bits: aware` (they skip the Conjugate key, Note
// [Conjugate and negative bits]): a conjugated operand (x.conj(), x.mH) reaches run_gemm,
// which hands the bit to BLAS. BLAS reads a transposed one as its conjugate transpose ('C'),
// so x.mH @ y and x.conj() @ y of a transposed x copy nothing; an untransposed one is packed
// conjugated (as any operand BLAS cannot read directly is packed). cuBLAS is handed the
// resolved operand. dot of two conjugated vectors is the conjugate view of the plain dot, as
// in PyTorch. The rare rest (a negated operand, a conjugated bias, an out= or in-place self
// with a bit, matmul's matrix-vector form) takes the Conjugate key's fallback.

/// Whether a product must take the Conjugate key's fallback instead of reading the bits.
static bool product_needs_fallback(OutArg out, std::initializer_list<const Tensor*> operands, const Tensor* bias) {
  for (const Tensor* t : operands)
    if (t->impl()->is_neg()) return true;
  return (out.tensor && out.tensor->impl()->math_bits()) || (bias && bias->impl()->math_bits());
}

void run_gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta) {
  if (c.device().is_cuda() && (a.impl()->is_conj() || b.impl()->is_conj()))
    return run_gemm(resolve_conj(a), resolve_conj(b), c, alpha, beta);
  int64_t nd = a.dim();
  int64_t batch = nd == 3 ? a.size(0) : 1;
  int64_t m = a.size(nd - 2), k = a.size(nd - 1), n = b.size(nd - 1);
  if (batch == 0 || m == 0 || n == 0) return;
  // no bool gemm, nor one of mixed dtypes (bmm of empty operands): an empty sum is zero
  if (k == 0 && (a.dtype() == DType::Bool || a.dtype() != b.dtype() || b.dtype() != c.dtype())) {
    if (beta == 0) zero_impl(c, OutArg{&c, true});
    else if (beta != 1) copy_(c, mul(c, wrapped_scalar(is_floating(c.dtype()) ? Scalar(beta) : Scalar(int64_t(beta)))));
    return;
  }
  if (c.device().is_cuda()) {
#ifdef TP_USE_CUDA
    return cuda::blas::gemm(a, b, c, alpha, beta);
#endif
  }
  blas::MatrixRef ar{a.data_ptr(), a.stride(nd - 2), a.stride(nd - 1), a.impl()->is_conj()};
  blas::MatrixRef br{b.data_ptr(), b.stride(nd - 2), b.stride(nd - 1), b.impl()->is_conj()};
  int64_t ldc = c.dim() >= 2 ? c.stride(c.dim() - 2) : n;
  if (nd == 2)
    return blas::gemm(a.dtype(), m, n, k, alpha, ar, br, beta, c.data_ptr(), ldc);
  blas::gemm_batched(a.dtype(), batch, m, n, k, alpha, ar, a.stride(0), br, b.stride(0), beta,
                     c.data_ptr(), ldc, c.stride(0));
}

// ------------------------------------------------------------------ mm, bmm, mv, dot

namespace {

void check_mm(const Tensor& self, const Tensor& mat2) {
  TP_CHECK(self.dim() == 2, "self must be a matrix");
  TP_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TP_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (",
           self.size(0), "x", self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  TP_CHECK(self.dtype() == mat2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
           dtype_scalar_name(self.dtype()), " != ", dtype_scalar_name(mat2.dtype()));
  check_kernel_dtype(self, "addmm_impl_cpu_", "addmm_cuda", &mat2);
}

/// `empty_mixes`: PyTorch's bmm returns before its dtype check when an operand is empty (its
/// result then has batch2's dtype; its meta function checks them); baddbmm checks the dtypes first.
/// The order is PyTorch's: the shapes, baddbmm's self against batch1 (`self`), the dispatch on
/// the dtype (NotImplementedError), then batch2's dtype in the kernel.
void check_bmm(const Tensor& b1, const Tensor& b2, const char* kernel, bool empty_mixes = false,
               const Tensor* self = nullptr) {
  TP_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TP_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TP_CHECK(b2.size(0) == b1.size(0) && b2.size(1) == b1.size(2),
           "Expected size for first two dimensions of batch2 tensor to be: [", b1.size(0), ", ",
           b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
  if (self)
    TP_CHECK(self->dtype() == b1.dtype(), "Input dtypes must be the same, got: input ",
             dtype_name(self->dtype()), ", batch1: ", dtype_name(b1.dtype()), ", batch2: ", dtype_name(b2.dtype()));
  check_kernel_dtype(b1, kernel, "baddbmm_cuda", &b2);
  if (!empty_mixes || is_meta(b1) || (b1.numel() != 0 && b2.numel() != 0)) check_same_dtype(b1, b2);
}

void check_mv(const Tensor* input, const Tensor& mat, const Tensor& vec) {
  TP_CHECK(mat.dim() == 2 && vec.dim() == 1 && (!input || input->dim() <= 1),
           "vector + matrix @ vector expected, got ", input ? input->dim() : 1, ", ", mat.dim(),
           ", ", vec.dim());
  const int64_t in_numel = input ? input->numel() : mat.size(0);
  if (mat.size(1) != vec.size(0) || (in_numel != mat.size(0) && in_numel != 1))  // (PyTorch's message
    TP_FAIL("size mismatch, got input (", input ? size_at(*input, 0) : mat.size(0), "), mat (",  // reads
            mat.size(0), "x", mat.size(1), "), vec (", vec.size(0), ")");  // input.size(0): IndexError if 0-d)
  DType in = input ? input->dtype() : vec.dtype();
  TP_CHECK(mat.dtype() == vec.dtype() && in == vec.dtype(),
           "addmv input tensors must have the same dtype, but got ", dtype_scalar_name(in), ", ",
           dtype_scalar_name(mat.dtype()), ", and ", dtype_scalar_name(vec.dtype()));
  check_kernel_dtype(mat, "addmv_impl_cpu", "addmv_impl_cuda", &vec);
}

void check_dot(const Tensor& a, const Tensor& b) {
  TP_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
           b.dim(), "D tensors");
  TP_CHECK(a.dtype() == b.dtype(), "dot : expected both vectors to have same dtype, but found ",
           dtype_scalar_name(a.dtype()), " and ", dtype_scalar_name(b.dtype()));
  TP_CHECK(a.size(0) == b.size(0), "inconsistent tensor size, expected tensor [", a.size(0),
           "] and src [", b.size(0), "] to have the same number of elements, but got ",
           a.size(0), " and ", b.size(0), " elements respectively");
  check_kernel_dtype(a, "dot", "dot", nullptr, /*empty_returns=*/false);
}

/// `vec` (k) as a k x 1 matrix view.
Tensor as_column(const Tensor& vec) { return unsqueeze(vec, 1); }

/// dst (m,) or (m, 1) = alpha * mat @ vec + beta * dst.
void run_mv(const Tensor& mat, const Tensor& vec, const Tensor& dst, double alpha, double beta) {
  int64_t sz[2] = {mat.size(0), 1};
  run_gemm(mat, as_column(vec), reshape(dst, sz), alpha, beta);
}

}  // namespace

Tensor mm_impl(const Tensor& self, const Tensor& mat2, OutArg out) {
  if (product_needs_fallback(out, {&self, &mat2}, nullptr)) [[unlikely]]
    return fallback_mm(DispatchKey::Conjugate, self, mat2, out);
  check_same_device({&self, &mat2});
  check_mm(self, mat2);
  int64_t sizes[2] = {self.size(0), mat2.size(1)};
  ProductDst d = product_dst(out, sizes, self.dtype(), self.device(), {&self, &mat2});
  if (d.meta()) return d.finish();
  run_gemm(self, mat2, d.dst, 1.0, 0.0);
  return d.finish();
}

Tensor bmm_impl(const Tensor& self, const Tensor& mat2, OutArg out) {
  if (product_needs_fallback(out, {&self, &mat2}, nullptr)) [[unlikely]]
    return fallback_bmm(DispatchKey::Conjugate, self, mat2, out);
  check_same_device({&self, &mat2});
  check_bmm(self, mat2, "bmm", /*empty_mixes=*/true);
  int64_t sizes[3] = {self.size(0), self.size(1), mat2.size(2)};
  ProductDst d = product_dst(out, sizes, mat2.dtype(), self.device(), {&self, &mat2});
  if (d.meta()) return d.finish();
  run_gemm(self, mat2, d.dst, 1.0, 0.0);
  return d.finish();
}

Tensor mv_impl(const Tensor& self, const Tensor& vec, OutArg out) {
  check_same_device({&self, &vec});
  if (self.dim() == 0) (void)size_at(self, 0);  // PyTorch reads it before its shape check
  check_mv(nullptr, self, vec);
  int64_t sizes[1] = {self.size(0)};
  ProductDst d = product_dst(out, sizes, self.dtype(), self.device(), {&self, &vec});
  if (d.meta()) return d.finish();
  run_mv(self, vec, d.dst, 1.0, 0.0);
  return d.finish();
}

Tensor _conj_impl(const Tensor& self, OutArg);  // dispatch/math_bits.cpp

Tensor dot_impl(const Tensor& self, const Tensor& tensor, OutArg out) {
  if ((self.impl()->math_bits() | tensor.impl()->math_bits()) || (out.tensor && out.tensor->impl()->math_bits()))
      [[unlikely]] {
    // dot(conj a, conj b) = conj(dot(a, b)), a conjugate view as PyTorch's
    if (self.impl()->math_bits() == TensorImpl::kConjBit && tensor.impl()->math_bits() == TensorImpl::kConjBit &&
        !out.tensor)
      return _conj_impl(dot_impl(_conj_impl(self, {}), _conj_impl(tensor, {}), {}), {});
    return fallback_dot(DispatchKey::Conjugate, self, tensor, out);
  }
  check_same_device({&self, &tensor});
  check_dot(self, tensor);
  ProductDst d = product_dst(out, {}, self.dtype(), self.device(), {&self, &tensor});
  if (d.meta()) return d.finish();
#ifdef TP_USE_CUDA
  if (self.device().is_cuda()) {
    cuda::blas::dot(self, tensor, d.dst);
    return d.finish();
  }
#endif
  int64_t one[2] = {1, 1};
  run_gemm(unsqueeze(self, 0), as_column(tensor), reshape(d.dst, one), 1.0, 0.0);
  return d.finish();
}

Tensor vdot_impl(const Tensor& self, const Tensor& other, OutArg out) {
  if (is_complex(self.dtype())) return dot_impl(conj_physical(self), other, out);
  return dot_impl(self, other, out);  // conj() is the identity on reals
}

// ------------------------------------------------------------------ matmul

Tensor matmul_impl(const Tensor& self, const Tensor& other, OutArg out) {
  const bool vector_form = other.dim() == 1 && self.dim() == 2;  // mv reads no bits (dot does)
  if ((vector_form && (self.impl()->math_bits() || other.impl()->math_bits())) ||
      product_needs_fallback(out, {&self, &other}, nullptr)) [[unlikely]]
    return fallback_matmul(DispatchKey::Conjugate, self, other, out);
  check_same_device({&self, &other});
  int64_t d1 = self.dim(), d2 = other.dim();
  TP_CHECK(d1 >= 1 && d2 >= 1, "both arguments to matmul need to be at least 1D, but they are ",
           d1, "D and ", d2, "D");
  if (d1 == 1 && d2 == 1) return dot_impl(self, other, out);
  if (d1 == 2 && d2 == 1) return mv_impl(self, other, out);
  if (d1 == 2 && d2 == 2) return mm_impl(self, other, out);
  if (d1 == 1 && d2 == 2) {
    check_mm(unsqueeze(self, 0), other);
    int64_t sizes[1] = {other.size(1)};
    ProductDst d = product_dst(out, sizes, self.dtype(), self.device(), {&self, &other});
    if (d.meta()) return d.finish();
    int64_t row[2] = {1, other.size(1)};
    run_gemm(unsqueeze(self, 0), other, reshape(d.dst, row), 1.0, 0.0);
    return d.finish();
  }
  if (d1 >= 3 && d2 <= 2) {
    // Fold the batch dims into the rows: one GEMM of (batch*m, k) @ (k, n).
    DimVector sizes(self.sizes().data(), size_t(d1 - 1));
    int64_t k = self.size(d1 - 1);
    int64_t rows = 1;
    for (int64_t s : sizes) rows *= s;
    int64_t a2[2] = {rows, k};
    Tensor a = reshape(self, a2);
    Tensor b = d2 == 2 ? other : as_column(other);
    check_mm(a, b);
    if (d2 == 2) sizes.push_back(other.size(1));
    ProductDst d = product_dst(out, sizes, self.dtype(), self.device(), {&self, &other});
    if (d.meta()) return d.finish();
    int64_t c2[2] = {rows, b.size(1)};
    run_gemm(a, b, reshape(d.dst, c2), 1.0, 0.0);
    return d.finish();
  }
  // Broadcast batch dims; 1-D operands become a row (self) or a column (other).
  Tensor a = d1 == 1 ? unsqueeze(self, 0) : self;
  Tensor b = d2 == 1 ? as_column(other) : other;
  int64_t m = a.size(a.dim() - 2), k = a.size(a.dim() - 1);
  int64_t k2 = b.size(b.dim() - 2), n = b.size(b.dim() - 1);
  int64_t na = a.dim() - 2, nb = b.dim() - 2, nbatch = std::max(na, nb);
  DimVector batch(size_t(nbatch), 1);
  for (int64_t i = 0; i < nbatch; ++i) {
    int64_t sa = i - (nbatch - na) >= 0 ? a.size(i - (nbatch - na)) : 1;
    int64_t sb = i - (nbatch - nb) >= 0 ? b.size(i - (nbatch - nb)) : 1;
    TP_CHECK(sa == sb || sa == 1 || sb == 1, "The size of tensor a (", sa,
             ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i);
    batch[size_t(i)] = sa == 1 ? sb : sa;
  }
  int64_t nprod = 1;
  for (int64_t s : batch) nprod *= s;
  TP_CHECK(k == k2, "Expected size for first two dimensions of batch2 tensor to be: [", nprod,
           ", ", k, "] but got: [", nprod, ", ", k2, "].");
  // bmm's dispatch, then its kernel's check; an empty operand returns first (batch2's dtype)
  check_kernel_dtype(self, "bmm", "baddbmm_cuda", &other);
  const bool empty_mix = !is_meta(self) && (self.numel() == 0 || other.numel() == 0);
  TP_CHECK(empty_mix || self.dtype() == other.dtype(), "expected scalar type ",
           dtype_scalar_name(self.dtype()), " but found ", dtype_scalar_name(other.dtype()));
  DimVector ea = batch, eb = batch, sizes = batch;
  ea.push_back(m), ea.push_back(k), eb.push_back(k), eb.push_back(n);
  if (d1 > 1) sizes.push_back(m);
  if (d2 > 1) sizes.push_back(n);
  ProductDst d = product_dst(out, sizes, empty_mix ? other.dtype() : self.dtype(), self.device(), {&self, &other});
  if (d.meta()) return d.finish();
  int64_t c3[3] = {nprod, m, n};
  run_gemm(fold_batch(expand(a, ea)), fold_batch(expand(b, eb)), reshape(d.dst, c3), 1.0, 0.0);
  return d.finish();
}

// ------------------------------------------------------------------ addmm and friends

namespace {

/// Scalars of a product with beta and alpha: integer dtypes truncate them (PyTorch's cast).
double product_scalar(const Scalar& s, DType dt) {
  // the BLAS paths take a real alpha/beta; complex dtypes keep theirs unless imaginary
  if (s.is_complex() && s.to_complex().im != 0)
    TP_FAIL_NOT_IMPLEMENTED("complex alpha or beta is not supported yet");
  return is_floating_or_complex(dt) ? s.to_double() : double(s.to_int());
}

/// Starts `d.dst` as beta * self broadcast to its shape: copies self in unless dst already
/// is self (in-place) or beta == 0 (BLAS then ignores the old values, NaNs included).
void seed_with_self(const ProductDst& d, const Tensor& self, OutArg out, double beta) {
  if (beta == 0 || (out.inplace && d.direct)) return;
  copy_(d.dst, expand(self, d.dst.sizes()));
}

void check_add_dtypes(const Tensor& self, const Tensor& m1, const Tensor& m2) {
  for (const Tensor* t : {&self, &m1})
    TP_CHECK(t->dtype() == m2.dtype(), "self and mat2 must have the same dtype, but got ",
             dtype_scalar_name(t->dtype()), " and ", dtype_scalar_name(m2.dtype()));
}

/// The shape `self` must broadcast to (expand's message when it cannot).
void check_broadcastable(const Tensor& self, IntArrayRef sizes) { (void)expand(self, sizes); }

}  // namespace

Tensor addmm_impl(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha, OutArg out) {
  if (product_needs_fallback(out, {&mat1, &mat2}, &self)) [[unlikely]]
    return fallback_addmm(DispatchKey::Conjugate, self, mat1, mat2, beta, alpha, out);
  check_same_device({&self, &mat1, &mat2});
  TP_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  TP_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  check_add_dtypes(self, mat1, mat2);
  check_mm(mat1, mat2);
  int64_t sizes[2] = {mat1.size(0), mat2.size(1)};
  check_broadcastable(self, sizes);
  DType dt = mat1.dtype();
  if (sizes[0] * sizes[1] != 0) check_bool_beta(dt, beta);  // (an empty result scales nothing)
  double b = product_scalar(beta, dt);
  ProductDst d = product_dst(out, sizes, dt, self.device(), {&mat1, &mat2, &self});
  if (d.meta()) return d.finish();
#ifdef TP_USE_CUDA
  // A bias row added to every row of the product (Linear's addmm): cuBLASLt's bias
  // epilogue, one kernel and no copy of self, where cuBLASLt takes the shape.
  if (self.device().is_cuda() && b == 1 && self.dim() == 1 && self.size(0) == sizes[1] &&
      cuda::blas::gemm_with_bias(mat1, mat2, self, d.dst, product_scalar(alpha, dt)))
    return d.finish();
#endif
  seed_with_self(d, self, out, b);
  run_gemm(mat1, mat2, d.dst, product_scalar(alpha, dt), b);
  return d.finish();
}

Tensor addmv_impl(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta,
                  const Scalar& alpha, OutArg out) {
  check_same_device({&self, &mat, &vec});
  check_mv(&self, mat, vec);
  int64_t sizes[1] = {mat.size(0)};
  DType dt = mat.dtype();
  double b = product_scalar(beta, dt);
  if (mat.numel() == 0 && beta.to_double() != 0 && !out.inplace && !is_meta(self) &&
      !(self.dim() == 1 && self.size(0) == sizes[0])) {
    // PyTorch's shortcut for an empty matrix: beta * self in self's own shape (() or (1,))
    ProductDst d = product_dst(out, self.sizes(), dt, self.device(), {&mat, &vec, &self});
    copy_(d.dst, mul(self, _to_dtype(wrapped_scalar(beta), dt)));
    return d.finish();
  }
  ProductDst d = product_dst(out, sizes, dt, self.device(), {&mat, &vec, &self});
  if (d.meta()) return d.finish();
  seed_with_self(d, self, out, b);
  run_mv(mat, vec, d.dst, product_scalar(alpha, dt), b);
  return d.finish();
}

Tensor baddbmm_impl(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                    const Scalar& beta, const Scalar& alpha, OutArg out) {
  check_same_device({&self, &batch1, &batch2});
  (void)wrap_dim(2, batch1.dim()), (void)wrap_dim(2, batch2.dim());  // PyTorch: IndexError
  // Like bmm, an empty operand skips the dtype checks past self's against batch1, and the
  // result takes batch2's dtype (beta * self cast to it); an empty result scales nothing.
  check_bmm(batch1, batch2, "baddbmm", /*empty_mixes=*/true, &self);
  int64_t sizes[3] = {batch1.size(0), batch1.size(1), batch2.size(2)};
  check_broadcastable(self, sizes);
  DType dt = batch2.dtype();
  TP_CHECK(!out.inplace || dt == self.dtype(), "Bad in-place call: input tensor dtype ", dtype_name(self.dtype()),
           " and output tensor dtype ", dtype_name(dt), " should match");
  if (sizes[0] * sizes[1] * sizes[2] != 0) check_bool_beta(dt, beta);
  double b = product_scalar(beta, dt);
  ProductDst d = product_dst(out, sizes, dt, self.device(), {&batch1, &batch2, &self});
  if (d.meta()) return d.finish();
  seed_with_self(d, self, out, b);
  run_gemm(batch1, batch2, d.dst, product_scalar(alpha, dt), b);
  return d.finish();
}

Tensor addbmm_impl(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                   const Scalar& beta, const Scalar& alpha, OutArg out) {
  check_same_device({&self, &batch1, &batch2});
  (void)size_at(batch1, 1), (void)size_at(batch2, 2);  // PyTorch reads them first
  TP_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TP_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TP_CHECK(batch1.size(0) == batch2.size(0),
           "batch1 and batch2 must have same number of batches, got ", batch1.size(0), " and ",
           batch2.size(0));
  TP_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (",
           batch1.size(1), "x", batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  if (batch1.size(0) == 0 && !is_meta(self) && !is_meta(batch1) && !is_meta(batch2)) {
    // Note [addbmm of no batches]: PyTorch copies self (broadcast) into the result, out='s
    // dtype whatever it is, and scales it in place by beta (zeroes it for beta 0) before any
    // dtype check of the operands: a bool result refuses a number beta other than a bool
    // (mul_'s "result type Long can't be cast to the desired output type Bool").
    int64_t sizes[2] = {batch1.size(1), batch2.size(2)};
    Tensor src = clone(expand(self, sizes));  // (a copy: out= may be self, resized below)
    Tensor dst = out.tensor ? *out.tensor : empty_tensor(sizes, self.dtype(), self.device());
    resize_out(dst, sizes);
    copy_(dst, src);
    if (beta.to_double() == 0 && !beta.is_complex()) return zero_(dst);
    mul_(dst, wrapped_scalar(beta));
    return dst;
  }
  check_same_dtype(self, batch1);
  check_same_dtype(batch1, batch2);
  check_kernel_dtype(batch1, "addbmm", "addmm_cuda", &batch2);
  check_bool_beta(batch1.dtype(), beta);
  // The sum over the batch is one GEMM: (m, B*k) @ (B*k, n).
  int64_t nb = batch1.size(0), m = batch1.size(1), k = batch1.size(2), n = batch2.size(2);
  int64_t sizes[2] = {m, n};
  check_broadcastable(self, sizes);
  if (out.inplace && !std::equal(sizes, sizes + 2, self.sizes().begin(), self.sizes().end())) {
    // PyTorch's addbmm_ resizes a broadcast self to the result's shape.
    Tensor res = addbmm_impl(self, batch1, batch2, beta, alpha, OutArg::none());
    resize_out(self, sizes);
    copy_(self, res);
    return self;
  }
  int64_t perm[3] = {1, 0, 2}, a2[2] = {m, nb * k}, b2[2] = {nb * k, n};
  Tensor a = reshape(permute(batch1, perm), a2), b = reshape(batch2, b2);
  DType dt = batch1.dtype();
  double be = product_scalar(beta, dt);
  ProductDst d = product_dst(out, sizes, dt, self.device(), {&batch1, &batch2, &self});
  if (d.meta()) return d.finish();
  seed_with_self(d, self, out, be);
  run_gemm(a, b, d.dst, product_scalar(alpha, dt), be);
  return d.finish();
}

// ------------------------------------------------------------------ outer, inner, tensordot

Tensor outer_impl(const Tensor& self, const Tensor& vec2, OutArg out) {
  TP_CHECK(self.dim() == 1, "outer: Expected 1-D argument self, but got ", self.dim(), "-D");
  TP_CHECK(vec2.dim() == 1, "outer: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  Tensor col = as_column(self);
  if (!out.tensor) return mul(col, vec2);
  return mul_out(const_cast<Tensor&>(*out.tensor), col, vec2);
}

Tensor ger_impl(const Tensor& self, const Tensor& vec2, OutArg out) {
  return outer_impl(self, vec2, out);
}

Tensor tensordot_impl(const Tensor& self, const Tensor& other, IntArrayRef dims_self,
                      IntArrayRef dims_other, OutArg out) {
  check_same_device({&self, &other});
  TP_CHECK(dims_self.size() == dims_other.size(), "both dimension lists should have same length");
  TP_CHECK(self.dtype() == other.dtype(), "both inputs should have same dtype");
  int64_t na = self.dim(), nb = other.dim();
  std::vector<bool> ca(size_t(na), false), cb(size_t(nb), false);
  DimVector perm_a, perm_b, sizes;
  // As PyTorch: a contracted dim of size 1 on one side is summed away on the other first (in
  // that side's dtype), then the duplicates are looked for
  Tensor ta = self, tb = other;
  for (size_t i = 0; i < dims_self.size(); ++i) {
    (void)size_at(self, dims_self[i]), (void)size_at(other, dims_other[i]);  // 0-d: IndexError
    int64_t da = wrap_dim(dims_self[i], na), db = wrap_dim(dims_other[i], nb);
    const int64_t s1 = self.size(da), s2 = other.size(db);
    if (s2 == 1) {
      if (s1 != 1) ta = sum(ta, IntArrayRef(&da, 1), true, ta.dtype());
    } else if (s1 == 1) {
      tb = sum(tb, IntArrayRef(&db, 1), true, tb.dtype());
    } else {
      TP_CHECK(s1 == s2, "contracted dimensions need to match, but first has size ", s1, " in dim ", dims_self[i],
               " and second has size ", s2, " in dim ", dims_other[i]);
    }
  }
  int64_t k = 1;
  for (size_t i = 0; i < dims_self.size(); ++i) {
    int64_t da = wrap_dim(dims_self[i], na), db = wrap_dim(dims_other[i], nb);
    TP_CHECK(!ca[size_t(da)], "tensordot: dim ", da, " appears multiple times in the list of dims");
    TP_CHECK(!cb[size_t(db)], "tensordot: dim ", db, " appears multiple times in the list of dims");
    ca[size_t(da)] = cb[size_t(db)] = true;
    k *= ta.size(da);
  }
  int64_t m = 1, n = 1;
  for (int64_t i = 0; i < na; ++i)
    if (!ca[size_t(i)]) perm_a.push_back(i), sizes.push_back(self.size(i)), m *= self.size(i);
  for (size_t i = 0; i < dims_self.size(); ++i) perm_a.push_back(wrap_dim(dims_self[i], na));
  for (size_t i = 0; i < dims_other.size(); ++i) perm_b.push_back(wrap_dim(dims_other[i], nb));
  for (int64_t i = 0; i < nb; ++i)
    if (!cb[size_t(i)]) perm_b.push_back(i), sizes.push_back(other.size(i)), n *= other.size(i);
  int64_t a2[2] = {m, k}, b2[2] = {k, n};
  Tensor a = reshape(permute(ta, perm_a), a2), b = reshape(permute(tb, perm_b), b2);
  check_mm(a, b);
  ProductDst d = product_dst(out, sizes, self.dtype(), self.device(), {&self, &other});
  if (d.meta()) return d.finish();
  int64_t c2[2] = {m, n};
  run_gemm(a, b, reshape(d.dst, c2), 1.0, 0.0);
  return d.finish();
}

Tensor inner_impl(const Tensor& self, const Tensor& other, OutArg out) {
  if (self.dim() == 0 || other.dim() == 0) {
    if (!out.tensor) return mul(self, other);
    return mul_out(const_cast<Tensor&>(*out.tensor), self, other);
  }
  check_same_device({&self, &other});
  TP_CHECK(self.size(self.dim() - 1) == other.size(other.dim() - 1),
           "inner() the last dimension must match on both input tensors but got shapes ",
           shape_str(self.sizes()), " and ", shape_str(other.sizes()));
  int64_t last[1] = {-1};
  if (self.dim() == 1 && other.dim() == 1) {
    TP_CHECK(self.dtype() == other.dtype(), "both inputs should have same dtype");
    return dot_impl(self, other, out);
  }
  return tensordot_impl(self, other, last, last, out);
}

// ------------------------------------------------------------------ kron, cross, trace

Tensor kron_impl(const Tensor& self, const Tensor& other, OutArg out) {
  // result[i*sb + j] = a[i] * b[j] per dim: interleave (a0, 1, a1, 1, ...) with
  // (1, b0, 1, b1, ...), multiply, and merge each pair of dims.
  int64_t nd = std::max(self.dim(), other.dim());
  DimVector sa(size_t(2 * nd), 1), sb(size_t(2 * nd), 1), sizes(size_t(nd), 1);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t ia = i - (nd - self.dim()), ib = i - (nd - other.dim());
    int64_t a = ia >= 0 ? self.size(ia) : 1, b = ib >= 0 ? other.size(ib) : 1;
    sa[size_t(2 * i)] = a, sb[size_t(2 * i + 1)] = b, sizes[size_t(i)] = a * b;
  }
  // PyTorch resizes out= first and then multiplies views of the inputs into a view of it: an
  // out= that must be resized and shares an input's memory fails its overlap check
  if (out.tensor && !std::equal(sizes.begin(), sizes.end(), out.tensor->sizes().begin(), out.tensor->sizes().end())) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    for (const Tensor* t : {&self, &other})  // (PyTorch judges only dense layouts: an expanded input passes)
      TP_CHECK(n == 0 || t->numel() == 0 || !t->impl()->is_non_overlapping_and_dense() ||
                   !shares_memory(*out.tensor, *t), "unsupported operation: some elements of "
               "the input tensor and the written-to tensor refer to a single memory location. Please clone() the "
               "tensor before performing the operation.");
  }
  Tensor prod = mul(reshape(self, sa), reshape(other, sb));
  Tensor res = reshape(prod, sizes);
  if (!out.tensor) return res;
  TP_CHECK(can_cast(res.dtype(), out.tensor->dtype()), "result type ",
           dtype_scalar_name(res.dtype()), " can't be cast to the desired output type ",
           dtype_scalar_name(out.tensor->dtype()));
  resize_out(*out.tensor, sizes);
  copy_(*out.tensor, res);
  return *out.tensor;
}

Tensor linalg_cross_impl(const Tensor& self, const Tensor& other, int64_t dim, OutArg out) {
  TP_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  (void)size_at(self, dim);
  int64_t d = wrap_dim(dim, self.dim());
  TP_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
           " must have length 3. Got ", self.size(d), " and ", other.size(d));
  check_same_dtype(self, other);
  TP_CHECK_KIND(ErrorKind::NotImplemented, self.dtype() != DType::Bool,  // composed: every other dtype
                "\"cross\" not implemented for 'Bool'");
  DimVector sizes = broadcast_shapes_of(self, other, "linalg.cross");
  if (out.tensor && !out.inplace)  // PyTorch's assert_no_overlap, whatever the shapes
    for (const Tensor* t : {&self, &other}) check_no_overlap(*out.tensor, *t);
  ProductDst dst = product_dst(out, sizes, self.dtype(), self.device(), {&self, &other});
  if (dst.meta()) return dst.finish();
  Tensor a = expand(self, sizes), b = expand(other, sizes);
  // (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)
  for (int64_t i = 0; i < 3; ++i) {
    int64_t j = (i + 1) % 3, l = (i + 2) % 3;
    Tensor r = select(dst.dst, d, i);
    sub_out(r, mul(select(a, d, j), select(b, d, l)), mul(select(a, d, l), select(b, d, j)));
  }
  return dst.finish();
}

Tensor cross_impl(const Tensor& self, const Tensor& other, const std::optional<int64_t>& dim,
                  OutArg out) {
  int64_t d = 0;
  if (dim) {
    d = *dim;
  } else {
    // The deprecated default: the first dim of size 3 (the Python layer warns).
    d = -1;
    for (int64_t i = 0; i < self.dim() && d < 0; ++i)
      if (self.size(i) == 3) d = i;
    TP_CHECK(d >= 0, "no dimension of size 3 in input");
  }
  return linalg_cross_impl(self, other, d, out);
}

Tensor trace_impl(const Tensor& self, OutArg) {
  // PyTorch dispatches on the dtype before it checks the dims
  TP_CHECK_KIND(ErrorKind::NotImplemented, self.dtype() != DType::Bool,
                "\"trace\" not implemented for 'Bool'");
  TP_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return sum(diagonal(self, 0, 0, 1));
}

}  // namespace tp
