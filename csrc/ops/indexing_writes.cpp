// Indexing writes: index_put, the scatter family, index_add/copy/fill/reduce, put,
// masked_scatter; and the index lookups take_along_dim, searchsorted, bucketize.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "kernels/tensor_iterator.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/index.h"
#endif

namespace tp {

namespace {

/// How a write combines the value with what is there.
enum class Reduce { Assign, Sum, Prod, Mean, Max, Min };

template <class T> struct Acc { using type = T; };
template <> struct Acc<Half> { using type = float; };
template <> struct Acc<BFloat16> { using type = float; };

template <Reduce R, class T>
inline void combine(T& d, T s) {
  using A = typename Acc<T>::type;
  if constexpr (R == Reduce::Assign) {
    d = s;
  } else if constexpr (std::is_same_v<T, bool>) {  // bool add/max is "or", prod/min is "and"
    if constexpr (R == Reduce::Prod || R == Reduce::Min) d = d && s;
    else d = d || s;
  } else if constexpr (R == Reduce::Sum || R == Reduce::Mean) {
    d = T(A(d) + A(s));
  } else if constexpr (R == Reduce::Prod) {
    d = T(A(d) * A(s));
  } else if constexpr (!kComplex<T>) {  // amax / amin propagate NaN (never complex: unordered)
    A a = A(d), b = A(s);
    if (b != b || (R == Reduce::Max ? b > a : b < a)) d = s;
  }
}

template <class F>
void visit_reduce(Reduce r, F&& f) {
  switch (r) {
    case Reduce::Assign: f(std::integral_constant<Reduce, Reduce::Assign>{}); break;
    case Reduce::Sum: f(std::integral_constant<Reduce, Reduce::Sum>{}); break;
    case Reduce::Prod: f(std::integral_constant<Reduce, Reduce::Prod>{}); break;
    case Reduce::Mean: f(std::integral_constant<Reduce, Reduce::Mean>{}); break;
    case Reduce::Max: f(std::integral_constant<Reduce, Reduce::Max>{}); break;
    case Reduce::Min: f(std::integral_constant<Reduce, Reduce::Min>{}); break;
  }
}

/// visit_dtype for a write that combines values by r: complex types too, except for amax /
/// amin (complex numbers have no order), which raise NotImplementedError naming op.
template <class F>
void visit_write_dtype(DType dt, Reduce r, const char* op, F&& f) {
  if (is_complex(dt) && (r == Reduce::Max || r == Reduce::Min))
    TP_FAIL_NOT_IMPLEMENTED(op, ": amax / amin are not implemented for '", dtype_scalar_name(dt), "'");
  visit_dtype_with_complex(dt, std::forward<F>(f));
}

/// The value a reduction starts from when self is left out (include_self=False).
Tensor reduce_identity(Reduce r, DType dt) {
  if (is_complex(dt) && (r == Reduce::Max || r == Reduce::Min))
    TP_FAIL_NOT_IMPLEMENTED("scatter_reduce: amax / amin are not implemented for '", dtype_scalar_name(dt), "'");
  if (is_complex(dt)) return full({}, Scalar(int64_t(r == Reduce::Prod ? 1 : 0)), dt);
  Scalar v = visit_dtype(dt, [&](auto t) -> Scalar {
    using T = decltype(t);
    if (r == Reduce::Prod) return Scalar(int64_t(1));
    if (r != Reduce::Max && r != Reduce::Min) return Scalar(int64_t(0));
    bool hi = r == Reduce::Min;
    if constexpr (std::is_same_v<T, bool>) return Scalar(hi);
    else if constexpr (std::is_integral_v<T>)
      return Scalar(int64_t(hi ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest()));
    else return Scalar(hi ? INFINITY : -INFINITY);
  });
  return full({}, v, dt);
}

/// Parses scatter_reduce's / index_reduce's `reduce`.
Reduce parse_reduce(const std::string& r, bool allow_sum, const char* expected) {
  if (r == "sum" && allow_sum) return Reduce::Sum;
  if (r == "prod") return Reduce::Prod;
  if (r == "mean") return Reduce::Mean;
  if (r == "amax") return Reduce::Max;
  if (r == "amin") return Reduce::Min;
  TP_FAIL(expected, r);
}

/// Index values as a contiguous int64 tensor.
Tensor as_long(const Tensor& index) { return contiguous(_to_dtype(index, DType::Int64)); }

/// t on `device` (a copy when it is elsewhere).
Tensor on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor d = empty_tensor(t.sizes(), t.dtype(), device);
  copy_(d, t);
  return d;
}

/// Checks every index lies in [-size, size) (or [0, size) without `negative`), reading the
/// index once in parallel; the message names the first bad value, like PyTorch's.
void check_bounds(const Tensor& idx, int64_t size, bool negative, ErrorKind kind,
                  const char* what, int64_t dim) {
  if (is_meta(idx)) return;  // no values to check (PyTorch's meta kernels check none either)
  if (idx.device().is_cuda()) return check_bounds(host_copy(idx), size, negative, kind, what, dim);
  const int64_t* p = idx.data<int64_t>();
  int64_t n = idx.numel(), lo = 0, hi = 0;
  if (n == 0) return;
  cpu::index_range_stub(p, n, &lo, &hi);
  int64_t floor = negative ? -size : 0;
  if (lo >= floor && hi < size) return;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] >= floor && p[i] < size) continue;
    if (what) fail(kind, what, p[i], " on a tensor of ", size, " elements.");
    fail(kind, "index ", p[i], " is out of bounds for dimension ", dim, " with size ", size);
  }
}

/// Element offsets of every position of (sizes, strides), in row-major order.
std::vector<int64_t> offsets_of(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<int64_t> offs{0};
  for (size_t d = 0; d < sizes.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * size_t(sizes[d]));
    for (int64_t o : offs)
      for (int64_t i = 0; i < sizes[d]; ++i) next.push_back(o + i * strides[d]);
    offs.swap(next);
  }
  return offs;
}

/// A dim of size 1 for a 0-dim tensor, so kernels always see at least one dim.
Tensor at_least_1d(const Tensor& t) { return t.dim() ? t : reshape(t, std::vector<int64_t>{1}); }

// ------------------------------------------------------------------ row writes
// Note [Row writes]: index_put, index_add/copy/fill/reduce and put all write whole rows:
// row p of the value goes to the rows of dst picked by entry p of k index arrays (its first
// k dims); the rest of the dims (`inner`) are copied whole. Plain assignment runs in
// parallel over p (duplicate indices: some write wins, as in PyTorch). Reductions keep
// PyTorch's serial order per element: in parallel over inner positions when rows are wide,
// else each thread takes a range of the first index's values and scans every entry.
struct RowWrite {
  char* dst;
  std::vector<const int64_t*> idx;           // k arrays of n entries (may be negative)
  std::vector<int64_t> size, stride;         // dst's first k dims
  int64_t n;
  std::vector<int64_t> dst_inner, val_inner;  // offsets of the inner positions
  const char* val;
  int64_t val_outer;                          // value row p starts at p * val_outer
};

/// The common row write: one index, one element per row; entries p0..p1 whose index
/// falls in [lo, hi).
template <Reduce R, class T>
inline void single_rows(T* __restrict dst, const T* __restrict val, const int64_t* __restrict ip,
                        int64_t p0, int64_t p1, int64_t size, int64_t stride, int64_t val_stride,
                        int64_t lo, int64_t hi) {
  for (int64_t p = p0; p < p1; ++p) {
    int64_t j = ip[p];
    j += j < 0 ? size : 0;
    if (j >= lo && j < hi) combine<R>(dst[j * stride], val[p * val_stride]);
  }
}

template <Reduce R, class T, bool kOne>
void row_write_loop(const RowWrite& w) {
  T* dst = reinterpret_cast<T*>(w.dst);
  const T* val = reinterpret_cast<const T*>(w.val);
  const int64_t* i0 = w.idx[0];
  int64_t s0 = w.size[0], st0 = w.stride[0], k = int64_t(w.idx.size());
  int64_t inner = int64_t(w.dst_inner.size());
  const int64_t* di = w.dst_inner.data();
  const int64_t* vi = w.val_inner.data();
  auto target = [&](int64_t p) {
    int64_t j = i0[p];
    int64_t o = (j < 0 ? j + s0 : j) * st0;
    if constexpr (!kOne)
      for (int64_t m = 1; m < k; ++m) {
        int64_t jm = w.idx[size_t(m)][p];
        o += (jm < 0 ? jm + w.size[size_t(m)] : jm) * w.stride[size_t(m)];
      }
    return o;
  };
  auto row = [&](int64_t p, int64_t q0, int64_t q1) {
    T* d = dst + target(p);
    const T* v = val + p * w.val_outer;
    if (inner == 1) combine<R>(d[di[0]], v[vi[0]]);
    else for (int64_t q = q0; q < q1; ++q) combine<R>(d[di[q]], v[vi[q]]);
  };
  int64_t nth = get_num_threads(), n = w.n;
  if (kOne && inner == 1) {
    T* d0 = dst + di[0];
    const T* v0 = val + vi[0];
    int64_t vs = w.val_outer;
    if (n < 32768 || nth == 1) {
      single_rows<R, T>(d0, v0, i0, 0, n, s0, st0, vs, 0, s0);
    } else if (R == Reduce::Assign) {
#pragma omp parallel num_threads(nth)
      {
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        single_rows<R, T>(d0, v0, i0, n * t / nt, n * (t + 1) / nt, s0, st0, vs, 0, s0);
      }
    } else {
#pragma omp parallel num_threads(nth)
      {
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        single_rows<R, T>(d0, v0, i0, 0, n, s0, st0, vs, s0 * t / nt, s0 * (t + 1) / nt);
      }
    }
    return;
  }
  if (n * inner < 32768 || nth == 1) {
    for (int64_t p = 0; p < n; ++p) row(p, 0, inner);
  } else if (R == Reduce::Assign) {
#pragma omp parallel for num_threads(nth)
    for (int64_t p = 0; p < n; ++p) row(p, 0, inner);
  } else if (inner >= 64 * nth) {
#pragma omp parallel num_threads(nth)
    {
      int64_t t = omp_get_thread_num(), nt = omp_get_num_threads(), chunk = (inner + nt - 1) / nt;
      int64_t q0 = std::min(inner, t * chunk), q1 = std::min(inner, q0 + chunk);
      for (int64_t p = 0; p < n && q0 < q1; ++p) row(p, q0, q1);
    }
  } else {
#pragma omp parallel num_threads(nth)
    {
      int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      int64_t lo = s0 * t / nt, hi = s0 * (t + 1) / nt;
      for (int64_t p = 0; p < n; ++p) {
        int64_t j = i0[p];
        j = j < 0 ? j + s0 : j;
        if (j >= lo && j < hi) row(p, 0, inner);
      }
    }
  }
}

/// Runs a row write on dst (dtype dt) with reduction r.
void run_row_write(const RowWrite& w, DType dt, Reduce r) {
  if (w.n == 0 || w.dst_inner.empty()) return;
  visit_write_dtype(dt, r, "index write", [&](auto t) {
    using T = decltype(t);
    visit_reduce(r, [&](auto rc) {
      if (w.idx.size() == 1) row_write_loop<decltype(rc)::value, T, true>(w);
      else row_write_loop<decltype(rc)::value, T, false>(w);
    });
  });
}

/// Whether dims (sizes, strides) step through memory with one stride (row-major); sets it.
bool single_stride(IntArrayRef sizes, IntArrayRef strides, int64_t& out) {
  bool have = false;
  int64_t next = 0;
  out = 0;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[size_t(d)] == 1) continue;
    if (!have) out = strides[size_t(d)];
    else if (strides[size_t(d)] != next) return false;
    have = true;
    next = strides[size_t(d)] * sizes[size_t(d)];
  }
  return true;
}

/// Writes `value` (already of dst's dtype and broadcast to index shape + dst's other dims)
/// into dst through k = idx.size() int64 index tensors of one shape addressing dst's first
/// k dims. Indices are checked by the caller.
void write_rows(const Tensor& dst, const std::vector<Tensor>& idx, Tensor value, Reduce r) {
  size_t k = idx.size();
  int64_t nb = idx[0].dim();
  if (value.impl()->storage().get() == dst.impl()->storage().get()) value = clone(value);  // dst may overlap it
  if (value.device() != dst.device()) value = on_device(value, dst.device());  // a CPU scalar
  RowWrite w;
  w.dst = dst.data_ptr();
  w.n = idx[0].numel();
  for (size_t m = 0; m < k; ++m) {
    w.idx.push_back(dst.device().is_cuda() ? on_device(idx[m], dst.device()).device_data<int64_t>()
                                           : idx[m].data<int64_t>());
    w.size.push_back(dst.size(int64_t(m)));
    w.stride.push_back(dst.stride(int64_t(m)));
  }
  if (!single_stride(value.sizes().subspan(0, size_t(nb)), value.strides().subspan(0, size_t(nb)),
                     w.val_outer)) {
    value = contiguous(value);
    w.val_outer = 1;
    for (int64_t d = nb; d < value.dim(); ++d) w.val_outer *= value.size(d);
  }
  IntArrayRef vs = value.sizes(), vst = value.strides();
  w.val = value.data_ptr();
  w.dst_inner = offsets_of(dst.sizes().subspan(k), dst.strides().subspan(k));
  w.val_inner = offsets_of(vs.subspan(size_t(nb)), vst.subspan(size_t(nb)));
  if (dst.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::row_write(dst, w.idx, w.size, w.stride, w.n, w.dst_inner, value, w.val_outer, w.val_inner,
                    cuda::WriteOp(int(r)));
#endif
    return;
  }
  run_row_write(w, dst.dtype(), r);
}

/// The tensor an op that updates a copy of self writes into: self (in place), `out`
/// (dtype checked, resized to self's shape as PyTorch does, then filled with self) or a
/// new copy: contiguous (`contiguous_result`: PyTorch's structured kernels, scatter and
/// index_add/copy/reduce) or in self's layout (clone: index_put, index_fill, put).
/// PyTorch's overlap checks of the index writes: the written tensor (out=, or self in place)
/// shares no memory with the index or the source.
void check_written(OutArg out, std::initializer_list<const Tensor*> inputs) {
  if (!out.tensor) return;
  const Tensor& o = *out.tensor;  // PyTorch's assert_no_internal_overlap: no expanded written dim
  for (int64_t d = 0; d < o.dim(); ++d)
    TP_CHECK(!(o.stride(d) == 0 && o.size(d) > 1), "unsupported operation: more than one element of the "
             "written-to tensor refers to a single memory location. Please clone() the tensor before "
             "performing the operation.");
  for (const Tensor* t : inputs)
    if (t) check_no_overlap(*out.tensor, *t);
}

Tensor updated_copy(const Tensor& self, OutArg out, bool contiguous_result) {
  if (out.tensor && out.inplace) return self;
  if (!out.tensor && !contiguous_result) return clone(self);
  if (!out.tensor) {
    Tensor r = empty_tensor(self.sizes(), self.dtype(), self.device());
    copy_(r, self);
    return r;
  }
  const Tensor& o = *out.tensor;
  TP_CHECK(o.dtype() == self.dtype(), "Expected out tensor to have dtype ",
           dtype_name(self.dtype()), ", but got ", dtype_name(o.dtype()), " instead");
  resize_out(o, self.sizes());
  if (!o.is_same(self)) copy_(o, self);
  return o;
}

/// Runs `write` on dst, or for float16/bfloat16 on a float32 copy rounded back once at the
/// end: PyTorch accumulates sums and products of those types in float.
template <class F>
void with_opmath(const Tensor& dst, F&& write) {
  if (dst.dtype() != DType::Float16 && dst.dtype() != DType::BFloat16) {
    write(dst);
    return;
  }
  Tensor work = _to_dtype(dst, DType::Float32, true);
  write(work);
  copy_(dst, work);
}

/// Divides the elements of `res` that `count` (> 0) covers by it: the `mean` reduction's
/// last step (floor division for integers, as in PyTorch).
void divide_by_count(const Tensor& res, const Tensor& count) {
  Tensor c = where(eq(count, wrapped_scalar(Scalar(int64_t(0)))), wrapped_scalar(Scalar(int64_t(1))), count);
  Tensor q = is_floating_or_complex(res.dtype()) ? div(res, c)
                                      : div(res, c, std::optional<std::string>("floor"));
  copy_(res, q);
}

}  // namespace

// ------------------------------------------------------------------ index_put
Tensor index_put_impl(const Tensor& self, TensorList indices, const Tensor& values, bool accumulate,
                      OutArg out) {
  TP_CHECK(!indices.empty(), "index_put: expected at least one index tensor");
  // Note [index_put as masked_fill]: PyTorch's index_put_ of one number (a one-element CPU value)
  // through one mask, without accumulate, is masked_fill_ with that number: any value dtype
  // that converts without overflow (fill_'s check), and masked_fill_'s refusal of a uint8 mask.
  if (!accumulate && indices.size() == 1 && values.numel() == 1 && values.device().is_cpu() &&
      !is_complex(values.dtype()) && !is_meta(self) && !is_meta(indices[0]) &&
      (indices[0].dtype() == DType::Bool || indices[0].dtype() == DType::UInt8) &&
      indices[0].device() == self.device()) {
    const Tensor& mask = indices[0];
    for (int64_t j = 0; j < mask.dim(); ++j)
      TP_CHECK_INDEX(j < self.dim() && mask.size(j) == self.size(j), "The shape of the mask ",
                     shape_str(mask.sizes()), " at index ", j, " does not match the shape of the indexed tensor ",
                     shape_str(self.sizes()), " at index ", j);
    DimVector ms(mask.sizes().data(), mask.sizes().size());
    while (int64_t(ms.size()) < self.dim()) ms.push_back(1);
    Tensor hv = host_copy(reshape(values, IntArrayRef()));
    const DType vd = hv.dtype();
    Scalar sv = vd == DType::Bool          ? Scalar(*_to_dtype(hv, DType::Bool).data<bool>())
                : is_floating(vd)          ? Scalar(*_to_dtype(hv, DType::Float64).data<double>())
                                           : Scalar(*_to_dtype(hv, DType::Int64).data<int64_t>());
    Tensor v = empty_tensor(IntArrayRef(), self.dtype(), self.device());
    fill_(v, sv);  // (PyTorch's masked_fill_ of a number refuses one the dtype cannot hold)
    Tensor res = updated_copy(self, out, false);
    masked_fill_impl(res, reshape(mask, IntArrayRef(ms.data(), ms.size())), v, OutArg{&res, true});
    return res;
  }
  // Masks stand for one integer index per dim they cover.
  std::vector<Tensor> idx;
  bool none_selected = false;  // a 0-dim False mask selects nothing; a 0-dim True, everything
  bool meta_mask = false;      // a mask on meta: which elements it picks is unknown
  for (const Tensor& t : indices) {
    DType dt = t.dtype();
    if ((dt == DType::Bool || dt == DType::UInt8) && is_meta(t)) meta_mask = true;
    if ((dt == DType::Bool || dt == DType::UInt8) && t.dim() == 0) {
      TP_CHECK_INDEX(self.dim() > 0, "too many indices for tensor of dimension 0 (got 1)");
      if (!meta_mask) none_selected = none_selected || !*host_copy(_to_dtype(t, DType::Bool)).data<bool>();
    } else if (dt == DType::Bool || dt == DType::UInt8) {
      int64_t at = int64_t(idx.size());
      TP_CHECK_INDEX(at + std::max<int64_t>(t.dim(), 1) <= self.dim(), "too many indices for tensor of "
                     "dimension ", self.dim(), " (got ", at + std::max<int64_t>(t.dim(), 1), ")");
      for (int64_t d = 0; d < t.dim(); ++d)
        TP_CHECK_INDEX(t.size(d) == self.size(at + d), "The shape of the mask ", shape_str(t.sizes()),
                       " at index ", d, " does not match the shape of the indexed tensor ",
                       shape_str(self.sizes()), " at index ", at + d);
      if (meta_mask) continue;
      Tensor nz = _nonzero(t);
      for (int64_t d = 0; d < t.dim(); ++d) idx.push_back(select(nz, 1, d));
    } else {
      TP_CHECK_INDEX(dt == DType::Int64 || dt == DType::Int32,
                     "tensors used as indices must be long, int, byte or bool tensors");
      idx.push_back(t);
    }
  }
  Tensor res = updated_copy(self, out, false);
  if (none_selected) return res;
  if (meta_mask) {
    // On meta a mask's positions (so the shape values must broadcast to) are unknown: the
    // result is self's shape and layout whatever they hold, as PyTorch's meta index_put.
    if (out.tensor && out.inplace) res.impl()->bump_version();
    return res;
  }
  if (idx.empty()) {  // only 0-dim True masks: every element, through a leading unit dim
    int64_t one = 1;
    index_put_impl(unsqueeze(res, 0), std::array<Tensor, 1>{zeros(IntArrayRef(&one, 1), DType::Int64)},
                   values, accumulate, OutArg{&res, true});
    return res;
  }
  TP_CHECK_INDEX(int64_t(idx.size()) <= self.dim(), "too many indices for tensor of dimension ",
                 self.dim(), " (got ", idx.size(), ")");
  TP_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes "
           "match, got ", dtype_scalar_name(self.dtype()), " for the destination and ",
           dtype_scalar_name(values.dtype()), " for the source.");
  // The index tensors broadcast together.
  DimVector bshape(idx[0].sizes().data(), idx[0].sizes().size());
  for (size_t m = 1; m < idx.size(); ++m) {
    IntArrayRef s = idx[m].sizes();
    size_t nd = std::max(bshape.size(), s.size());
    DimVector r(nd);
    for (size_t i = 0; i < nd; ++i) {
      int64_t a = i + bshape.size() >= nd ? bshape[i + bshape.size() - nd] : 1;
      int64_t b = i + s.size() >= nd ? s[i + s.size() - nd] : 1;
      TP_CHECK_INDEX(a == b || a == 1 || b == 1, "shape mismatch: indexing tensors could not be "
                     "broadcast together with shapes ", shape_str(IntArrayRef(bshape.data(), bshape.size())),
                     ", ", shape_str(s));
      r[i] = a == 1 ? b : a;
    }
    bshape = r;
  }
  DimVector rshape = bshape;
  for (int64_t d = int64_t(idx.size()); d < self.dim(); ++d) rshape.push_back(self.size(d));
  IntArrayRef rs(rshape.data(), rshape.size());
  bool fits = values.dim() <= int64_t(rshape.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i) {
    int64_t v = values.size(values.dim() - i);
    fits = v == 1 || v == rshape[rshape.size() - size_t(i)];
  }
  TP_CHECK(fits, "shape mismatch: value tensor of shape ", shape_str(values.sizes()),
           " cannot be broadcast to indexing result of shape ", shape_str(rs));
  for (size_t m = 0; m < idx.size(); ++m) {
    idx[m] = as_long(expand(idx[m], IntArrayRef(bshape.data(), bshape.size())));
    check_bounds(idx[m], self.size(int64_t(m)), true, ErrorKind::Index, nullptr, int64_t(m));
  }
  if (idx[0].numel() == 0 || is_meta(res)) return res;
  write_rows(res, idx, expand(values, rs), accumulate ? Reduce::Sum : Reduce::Assign);
  res.impl()->bump_version();
  return res;
}

// ------------------------------------------------------------------ index_add/copy/fill/reduce
namespace {

/// What one of the index_* ops checks about its index: dtypes it takes, the error kinds.
struct IndexRules {
  const char* op;
  bool int32_ok;
  ErrorKind dtype_kind, vector_kind, bounds_kind;
  bool negative;  // index_fill wraps negative indices
};

/// The checked, wrapped dim and the index as int64.
Tensor checked_dim_index(const IndexRules& rule, const Tensor& self, int64_t& dim, const Tensor& index,
                         bool bounds = true) {
  dim = wrap_dim(dim, self.dim());
  DType it = index.dtype();
  bool ok = it == DType::Int64 || (rule.int32_ok && it == DType::Int32);
  if (!ok) {
    if (rule.int32_ok) fail(rule.dtype_kind, rule.op, "(): Expected dtype int32/int64 for index but got: ",
                            dtype_scalar_name(it));
    fail(rule.dtype_kind, rule.op, "(): Expected a long tensor for index, but got ", dtype_scalar_name(it));
  }
  if (index.dim() > 1)
    fail(rule.vector_kind, rule.op, "(): Index is supposed to be a vector, but got dim: ", index.dim(),
         " with size: ", shape_str(index.sizes()));
  Tensor idx = as_long(reshape(index, std::vector<int64_t>{-1}));
  if (bounds) check_bounds(idx, self.dim() ? self.size(dim) : 1, rule.negative, rule.bounds_kind, nullptr, dim);
  return idx;
}

/// Whether self's indexed dim is empty while the index is not. PyTorch's index_add then writes
/// nothing and checks no bounds; its index_copy/index_fill restride self over the index first,
/// which fails (RuntimeError) where self's other dims hold elements and else writes nothing.
bool empty_indexed_dim(const Tensor& self, int64_t dim, const Tensor& index) {
  return self.dim() > 0 && dim >= -self.dim() && dim < self.dim() && self.size(wrap_dim(dim, self.dim())) == 0 &&
         index.numel() != 0;
}

void check_restride(const char* op, const Tensor& self, int64_t dim, const Tensor& idx) {
  int64_t others = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) others *= self.size(d);
  if (others == 0) return;
  const int64_t first = host_copy(idx).data<int64_t>()[0];
  TP_FAIL(op, "(): index ", first, " is out of bounds for dimension ", dim, " with size 0");
}

/// PyTorch's checks of index_add / index_reduce (its index_func_meta_impl), in its order: the
/// dim, the index's rank and dtype, source's dtype, dim, slice count and shape. A 0-d source
/// with other than one index fails reading source.size(dim) for the message (IndexError).
void check_index_func(const char* op, const Tensor& self, int64_t& dim, const Tensor& index, const Tensor& source) {
  dim = wrap_dim(dim, self.dim());
  TP_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector, but got dim: ", index.dim(),
                 " with size: ", shape_str(index.sizes()));
  TP_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
           "(): Expected dtype int32/int64 for index but got: ", dtype_scalar_name(index.dtype()));
  TP_CHECK(source.dtype() == self.dtype(), op, "(): self (", dtype_scalar_name(self.dtype()), ") and source (",
           dtype_scalar_name(source.dtype()), ") must have the same scalar type");
  TP_CHECK(dim == 0 || dim < source.dim(), op, "(): Indexing dim ", dim,
           " is out of bounds of the source tensor with dim ", source.dim());
  const int64_t n = index.numel();
  if (n != (source.dim() == 0 ? 1 : source.size(dim)))
    TP_FAIL(op, "(): Number of indices (", n, ") should be equal to source.size(dim): (", size_at(source, dim),
            "), for dim: ", dim);
  bool same;
  if (source.dim() != 0 && self.dim() != 0) {
    same = source.dim() == self.dim();
    for (int64_t d = 0; same && d < self.dim(); ++d) same = d == dim || source.size(d) == self.size(d);
  } else {
    same = std::equal(source.sizes().begin(), source.sizes().end(), self.sizes().begin(), self.sizes().end());
  }
  TP_CHECK(same, "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
           "self.shape = ", shape_str(self.sizes()), " source.shape = ", shape_str(source.sizes()));
}

/// Writes the slices of `value` along `dim` into the slices of `res` at `idx`.
void write_slices(const Tensor& res, int64_t dim, const Tensor& idx, const Tensor& value, Reduce r) {
  Tensor dst = at_least_1d(res), val = at_least_1d(value);
  if (dim) {
    dst = movedim(dst, std::vector<int64_t>{dim}, std::vector<int64_t>{0});
    val = movedim(val, std::vector<int64_t>{dim}, std::vector<int64_t>{0});
  }
  write_rows(dst, {idx}, val, r);
}

Tensor slices_value(const Tensor& self, int64_t dim, int64_t n, const Tensor& scalar) {
  DimVector s(self.sizes().data(), self.sizes().size());
  if (s.empty()) s.push_back(1);
  s[size_t(dim)] = n;
  return expand(_to_dtype(scalar, self.dtype()), IntArrayRef(s.data(), s.size()));
}

}  // namespace

Tensor index_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha, OutArg out) {
  check_index_func("index_add_", self, dim, index, source);
  if (out.tensor && !out.inplace)  // out='s dtype before the bounds, as PyTorch's meta function
    TP_CHECK(out.tensor->dtype() == self.dtype(), "Expected out tensor to have dtype ",
             dtype_name(self.dtype()), ", but got ", dtype_name(out.tensor->dtype()), " instead");
  check_written(out, {&index, &source});
  Tensor idx = as_long(reshape(index, std::vector<int64_t>{-1}));
  // PyTorch's CPU kernel: above one dim it writes nothing into an empty self (no bounds
  // checked) and takes scatter_add's path (RuntimeError) for an int64 index and alpha 1;
  // otherwise its own loop's IndexError.
  const bool nothing = self.dim() > 1 && self.numel() == 0;
  if (!nothing) {
    const bool scatter = self.dim() > 1 && index.dtype() == DType::Int64 && alpha.to_double() == 1;
    check_bounds(idx, self.dim() ? self.size(dim) : 1, false, scatter ? ErrorKind::Runtime : ErrorKind::Index,
                 nullptr, dim);
  }
  Tensor res = updated_copy(self, out, true);
  if (is_meta(res) || nothing) return res;
  with_opmath(res, [&](const Tensor& work) {
    Tensor src = _to_dtype(source, work.dtype());
    if (alpha.to_double() != 1) {  // alpha takes self's type first, as in PyTorch
      Scalar a = is_floating_or_complex(self.dtype()) ? alpha : Scalar(alpha.to_int());
      src = _to_dtype(mul(src, wrapped_scalar(a)), work.dtype());
    }
    write_slices(work, dim, idx, src, Reduce::Sum);
  });
  res.impl()->bump_version();
  return res;
}

Tensor index_copy_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       OutArg out) {
  // PyTorch's meta function's order: the dim, out='s dtype, the index's rank, a 0-d source's
  // single index, the ranks, the index's dtype, source's dtype, the slice shapes, the count
  dim = wrap_dim(dim, self.dim());
  if (out.tensor && !out.inplace)
    TP_CHECK(out.tensor->dtype() == self.dtype(), "Expected out tensor to have dtype ",
             dtype_name(self.dtype()), ", but got ", dtype_name(out.tensor->dtype()), " instead");
  check_written(out, {&index, &source});
  TP_CHECK_INDEX(index.dim() < 2, "index_copy_(): Index should have dimension 1 or 0 (got ", index.dim(), ")");
  const int64_t n = index.numel();
  if (source.dim() == 0)
    TP_CHECK_INDEX(n == 1, "index_copy_(): When source is scalar, index should have one element (got ", n, ")");
  else if (self.dim() != 0)
    TP_CHECK_INDEX(source.dim() == self.dim(), "index_copy_(): When source and destination are not scalars, their "
                   "dimensionality must match. Source dimensionality (", source.dim(),
                   "), destination dimensionality (", self.dim(), ")");
  TP_CHECK(index.dtype() == DType::Int64, "index_copy_(): Expected a long tensor for index, but got ",
           dtype_scalar_name(index.dtype()));
  TP_CHECK(source.dtype() == self.dtype(), "index_copy_(): self and source expected to have the same "
           "dtype, but got (self) ", dtype_scalar_name(self.dtype()), " and (source) ",
           dtype_scalar_name(source.dtype()));
  {  // the slices: each shape without its entry `dim` (a 0-d tensor has none)
    DimVector a(self.sizes().data(), self.sizes().size()), b(source.sizes().data(), source.sizes().size());
    if (!a.empty()) a.erase(size_t(dim));
    if (!b.empty()) {
      TP_CHECK_INDEX(dim < int64_t(b.size()), "Dimension out of range (expected to be in range of [",
                     -int64_t(b.size()), ", ", int64_t(b.size()) - 1, "], but got ", dim, ")");
      b.erase(size_t(dim));
    }
    TP_CHECK(a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin()),
             "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: ",
             shape_str(IntArrayRef(a.data(), a.size())), " at dimension ", dim, " and source slice shape: ",
             shape_str(IntArrayRef(b.data(), b.size())), " at dimension 0.");
  }
  TP_CHECK_INDEX(source.dim() == 0 || n == source.size(dim), "index_copy_(): Number of indices (", n,
                 ") should be equal to source.size(dim) (", source.dim() ? source.size(dim) : 1, ")");
  Tensor idx = as_long(reshape(index, std::vector<int64_t>{-1}));
  const bool empty_dim = empty_indexed_dim(self, dim, index);
  if (!empty_dim) check_bounds(idx, self.dim() ? self.size(dim) : 1, false, ErrorKind::Index, nullptr, dim);
  if (empty_dim && !is_meta(self)) check_restride("index_copy_", self, dim, idx);
  Tensor res = updated_copy(self, out, true);
  if (is_meta(res) || empty_dim) return res;
  write_slices(res, dim, idx, source, Reduce::Assign);
  res.impl()->bump_version();
  return res;
}

Tensor index_fill_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value,
                       OutArg out) {
  IndexRules rule{"index_fill_", false, ErrorKind::Index, ErrorKind::Runtime, ErrorKind::Index, true};
  TP_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor "
           "with ", value.dim(), " dimension(s).");
  const bool empty_dim = empty_indexed_dim(self, dim, index);
  // PyTorch's kernel checks each index as it writes: a self without elements checks none
  Tensor idx = checked_dim_index(rule, self, dim, index, !empty_dim && self.numel() != 0);
  if (empty_dim && !is_meta(self)) check_restride("index_fill_", self, dim, idx);
  Tensor res = updated_copy(self, out, false);
  if (is_meta(res) || empty_dim) return res;
  write_slices(res, dim, idx, slices_value(self, dim, idx.numel(), value), Reduce::Assign);
  res.impl()->bump_version();
  return res;
}

Tensor index_reduce_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const std::string& reduce, bool include_self, OutArg out) {
  Reduce r = parse_reduce(reduce, false, "index_reduce(): Expected reduce to be one of prod, mean, "
                          "amax or amin but got ");
  check_index_func("index_reduce_", self, dim, index, source);
  if (is_complex(self.dtype()) && (!include_self || self.dim() <= 1))  // as PyTorch's kernels
    TP_FAIL_NOT_IMPLEMENTED("index_reduce: include_self=False or a self of fewer than 2 dims is "
                            "not implemented for '", dtype_scalar_name(self.dtype()), "'");
  if (out.tensor && !out.inplace)
    TP_CHECK(out.tensor->dtype() == self.dtype(), "Expected out tensor to have dtype ",
             dtype_name(self.dtype()), ", but got ", dtype_name(out.tensor->dtype()), " instead");
  check_written(out, {&index, &source});
  Tensor idx = as_long(reshape(index, std::vector<int64_t>{-1}));
  // PyTorch's kernel: without self it first fills the indexed slices (index_fill_, whose
  // restride of an empty indexed dim fails: RuntimeError), then checks every index (IndexError)
  if (!include_self && empty_indexed_dim(self, dim, index) && !is_meta(self))
    check_restride("index_reduce_", self, dim, idx);
  if ((r == Reduce::Mean || !include_self || self.dim() <= 1) && self.dtype() == DType::Bool)
    TP_FAIL_NOT_IMPLEMENTED("index_reduce(): \"", reduce, "\"", include_self ? "" : " without self",
                            " is not implemented for 'Bool'");
  check_bounds(idx, self.dim() ? self.size(dim) : 1, false, ErrorKind::Index, nullptr, dim);
  Tensor res = updated_copy(self, out, true);
  if (is_meta(res)) return res;
  if (!include_self)
    write_slices(res, dim, idx, slices_value(self, dim, idx.numel(), reduce_identity(r, self.dtype())),
                 Reduce::Assign);
  write_slices(res, dim, idx, source, r);
  if (r == Reduce::Mean && idx.numel()) {
    int64_t size = self.dim() ? self.size(dim) : 1;
    std::vector<int64_t> hits(size_t(size), 0);
    Tensor hidx = host_copy(idx);
    const int64_t* ip = hidx.data<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i) ++hits[size_t(ip[i])];
    Tensor count = zeros(std::vector<int64_t>{size}, DType::Int64);
    for (int64_t j = 0; j < size; ++j) count.data<int64_t>()[j] = hits[size_t(j)] + (include_self && hits[size_t(j)]);
    DimVector shape(size_t(self.dim()), 1);
    if (self.dim()) shape[size_t(dim)] = size;
    divide_by_count(res, on_device(reshape(count, IntArrayRef(shape.data(), shape.size())), res.device()));
  }
  res.impl()->bump_version();
  return res;
}

// ------------------------------------------------------------------ put
Tensor put_impl(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate,
                OutArg out) {
  TP_CHECK(index.dtype() == DType::Int64, "put_(): Expected a long tensor for index, but got ",
           dtype_scalar_name(index.dtype()));
  TP_CHECK(source.dtype() == self.dtype(), "put_(): self and source expected to have the same dtype, "
           "but got self.dtype = ", dtype_scalar_name(self.dtype()), " and source.dtype = ",
           dtype_scalar_name(source.dtype()));
  TP_CHECK_INDEX(source.numel() == index.numel(), "put_(): Expected source and index to have the same "
                 "number of elements, but got source.numel() = ", source.numel(), ", index.numel() = ",
                 index.numel());
  Tensor idx = as_long(reshape(index, std::vector<int64_t>{-1}));
  check_bounds(idx, self.numel(), true, ErrorKind::Index, "put_(): out of range: tried to access index ", 0);
  Tensor res = updated_copy(self, out, false);
  if (idx.numel() == 0 || is_meta(res)) return res;
  Tensor work = res.is_contiguous() ? res : contiguous(res);
  write_rows(reshape(work, std::vector<int64_t>{-1}), {idx}, reshape(source, std::vector<int64_t>{-1}),
             accumulate ? Reduce::Sum : Reduce::Assign);
  if (!work.is_same(res)) copy_(res, work);
  res.impl()->bump_version();
  return res;
}

// ------------------------------------------------------------------ scatter family
namespace {

/// One line of a scatter: d[ip[j] * dsd] op= s[j * ssd] for the targets in [lo, hi).
template <Reduce R, class T>
inline void scatter_line(T* __restrict d, const T* __restrict s, const int64_t* __restrict ip, int64_t m,
                         int64_t isd, int64_t ssd, int64_t dsd, int64_t lo, int64_t hi) {
  for (int64_t j = 0; j < m; ++j) {
    int64_t t = ip[j * isd];
    if (t >= lo && t < hi) combine<R>(d[t * dsd], s[j * ssd]);
  }
}

/// self[.., index[i][j].., ..] op= src[i][j] along `dim`; lines along dim (which never
/// share a target) run in parallel.
template <Reduce R, class T>
void scatter_loop(const Tensor& dst, int64_t dim, const Tensor& idx, const T* src, IntArrayRef sst) {
  int64_t nd = idx.dim(), m = idx.size(dim), lines = m ? idx.numel() / m : 0;
  if (lines == 0) return;
  T* d = dst.data<T>();
  const int64_t* ip = idx.data<int64_t>();
  int64_t dsd = dst.stride(dim), ssd = sst[size_t(dim)], isd = idx.stride(dim), size = dst.size(dim);
  auto line_base = [&](int64_t l, int64_t& db, int64_t& sb, int64_t& ib) {
    db = sb = ib = 0;
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (k == dim) continue;
      int64_t c = l % idx.size(k);
      l /= idx.size(k);
      db += c * dst.stride(k);
      sb += c * sst[size_t(k)];
      ib += c * idx.stride(k);
    }
  };
  auto line = [&](int64_t l, int64_t lo, int64_t hi) {
    int64_t db, sb, ib;
    line_base(l, db, sb, ib);
    scatter_line<R, T>(d + db, src + sb, ip + ib, m, isd, ssd, dsd, lo, hi);
  };
  int64_t nth = get_num_threads();
  if (lines * m >= 32768 && lines >= 4 * nth && nth > 1) {
#pragma omp parallel for num_threads(nth)
    for (int64_t l = 0; l < lines; ++l) line(l, 0, size);
  } else {  // few long lines: serial, as PyTorch (splitting by target lost on a busy machine)
    for (int64_t l = 0; l < lines; ++l) line(l, 0, size);
  }
}

/// Checks scatter's arguments; returns the index as a contiguous int64 tensor.
Tensor scatter_checks(const char* op, const Tensor& self, int64_t& dim, const Tensor& index,
                      const Tensor* src) {
  dim = wrap_dim(dim, self.dim());
  // PyTorch's order: the index's dtype (unless empty), src's dtype, then (unless the index is
  // empty) the ranks and sizes, a 0-d tensor counting as one of one element; src's sizes are
  // read up to self's rank before its rank is compared (IndexError where it has fewer dims)
  if (index.numel() != 0)
    TP_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
             "(): Expected dtype int32/int64 for index");
  if (src) TP_CHECK(src->dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
  if (index.numel() == 0) return Tensor();
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  TP_CHECK(std::max<int64_t>(index.dim(), 1) == nd,
           "Index tensor must have the same number of dimensions as self tensor");
  auto nonempty_size = [](const Tensor& t, int64_t d) { return t.dim() ? t.size(wrap_dim(d, t.dim())) : 1; };
  bool fits = true;
  for (int64_t d = 0; d < nd && fits; ++d) fits = d == dim || nonempty_size(index, d) <= nonempty_size(self, d);
  for (int64_t d = 0; d < nd && fits && src; ++d) fits = nonempty_size(index, d) <= nonempty_size(*src, d);
  if (src) TP_CHECK(std::max<int64_t>(src->dim(), 1) == nd,
                    "Index tensor must have the same number of dimensions as src tensor");
  TP_CHECK(fits, "Expected index ", shape_str(index.sizes()), " to be no larger than self ",
           shape_str(self.sizes()), " apart from dimension ", dim,
           src ? " and to be no larger size than src " : "", src ? shape_str(src->sizes()) : "");
  Tensor idx = as_long(at_least_1d(index));
  check_bounds(idx, self.dim() ? self.size(dim) : 1, false, ErrorKind::Runtime, nullptr, dim);
  return idx;
}

/// The scatter ops' common body: `src` (a tensor) or `value` (when src is null).
Tensor scatter_common(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor* src, const Scalar* value, Reduce r, bool include_self, OutArg out) {
  Tensor idx = scatter_checks(op, self, dim, index, src);
  if (r == Reduce::Mean && self.dtype() == DType::Bool)
    TP_FAIL_NOT_IMPLEMENTED(op, "(): \"mean\" is not implemented for 'Bool'");
  check_written(out, {&index, src});
  Tensor res = updated_copy(self, out, true);
  if (!idx.defined() || is_meta(res)) return res;
  Tensor dst = at_least_1d(res);
  Tensor from = src ? at_least_1d(*src) : expand(full({}, *value, self.dtype()), idx.sizes());
  if (from.impl()->storage().get() == res.impl()->storage().get()) from = clone(from);
  auto body = [&](const Tensor& work) {
    auto run = [&](Reduce how, const Tensor& s0) {
      Tensor s = _to_dtype(s0, work.dtype());
      if (work.device().is_cuda()) {
#ifdef TP_USE_CUDA
        s = on_device(s, work.device());
        std::vector<int64_t> st(s.strides().begin(), s.strides().end());
        cuda::scatter(work, dim, on_device(idx, work.device()), s, st, cuda::WriteOp(int(how)));
#endif
        return;
      }
      visit_write_dtype(work.dtype(), how, "scatter_reduce", [&](auto t) {
        using T = decltype(t);
        visit_reduce(how, [&](auto rc) {
          scatter_loop<decltype(rc)::value, T>(work, dim, idx, s.data<T>(), s.strides());
        });
      });
    };
    if (!include_self) run(Reduce::Assign, expand(reduce_identity(r, work.dtype()), idx.sizes()));
    run(r, from);
  };
  if (r == Reduce::Sum || r == Reduce::Prod || r == Reduce::Mean) with_opmath(dst, body);
  else body(dst);
  if (r == Reduce::Mean) {
    Tensor count = zeros(dst.sizes(), DType::Int64, dst.device());
    Tensor ones = expand(full({}, Scalar(int64_t(1)), DType::Int64, dst.device()), idx.sizes());
    if (dst.device().is_cuda()) {
#ifdef TP_USE_CUDA
      std::vector<int64_t> st(ones.strides().begin(), ones.strides().end());
      cuda::scatter(count, dim, on_device(idx, dst.device()), ones, st, cuda::WriteOp::Sum);
#endif
    } else {
      scatter_loop<Reduce::Sum, int64_t>(count, dim, idx, ones.data<int64_t>(), ones.strides());
    }
    if (include_self) count = add(count, wrapped_scalar(Scalar(int64_t(1))));
    divide_by_count(dst, count);
  }
  res.impl()->bump_version();
  return res;
}

Reduce scatter_reduce_arg(const std::optional<std::string>& reduce) {
  if (!reduce) return Reduce::Assign;
  if (*reduce == "add") return Reduce::Sum;
  if (*reduce == "multiply") return Reduce::Prod;
  TP_FAIL("reduce argument must be either add or multiply.");
}

}  // namespace

Tensor scatter_src_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const std::optional<std::string>& reduce, OutArg out) {
  Reduce r = scatter_reduce_arg(reduce);
  return scatter_common("scatter", self, dim, index, &src, nullptr, r, true, out);
}

Tensor scatter_value_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                          const std::optional<std::string>& reduce, OutArg out) {
  Reduce r = scatter_reduce_arg(reduce);
  return scatter_common("scatter", self, dim, index, nullptr, &value, r, true, out);
}

Tensor scatter_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, OutArg out) {
  return scatter_common("scatter_add", self, dim, index, &src, nullptr, Reduce::Sum, true, out);
}

Tensor scatter_reduce_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           const std::string& reduce, bool include_self, OutArg out) {
  Reduce r = parse_reduce(reduce, true, "reduce argument must be either sum, prod, mean, amax or amin, got ");
  return scatter_common("scatter_reduce", self, dim, index, &src, nullptr, r, include_self, out);
}

// ------------------------------------------------------------------ masked_scatter
Tensor masked_scatter_impl(const Tensor& self, const Tensor& mask, const Tensor& source, OutArg out) {
  TP_CHECK(mask.dtype() == DType::Bool, "masked_scatter_ only supports boolean masks, but got mask "
           "with dtype ", dtype_name(mask.dtype()));
  TP_CHECK(source.dtype() == self.dtype(), "masked_scatter: expected self and source to have same "
           "dtypes but got ", dtype_scalar_name(self.dtype()), " and ", dtype_scalar_name(source.dtype()));
  bool inplace = out.tensor && out.inplace;
  DimVector shape = inplace ? DimVector(self.sizes().data(), self.sizes().size())
                            : broadcast_shapes_of(self, mask, "masked_scatter");
  IntArrayRef s(shape.data(), shape.size());
  if (inplace) {
    DimVector b = broadcast_shapes_of(self, mask, "masked_scatter_");
    TP_CHECK(std::equal(b.begin(), b.end(), s.begin(), s.end()), "masked_scatter_: mask of shape ",
             shape_str(mask.sizes()), " cannot be broadcast to self of shape ", shape_str(s));
  }
  check_same_device({&self, &mask, &source});
  Tensor m = contiguous(expand(mask, s));
  Tensor res = self;
  if (!inplace) {
    res = empty_tensor(s, self.dtype(), self.device());
    copy_(res, expand(self, s));
  }
  if (is_meta(res)) return res;
  Tensor work = res.is_contiguous() ? res : contiguous(res);
  Tensor src = contiguous(source);
  const char* too_few = "masked_scatter: Number of elements of source < number of ones in mask";
  if (work.device().is_cuda()) {  // counts the mask on the device, checks, then writes
    bool ok = true;
#ifdef TP_USE_CUDA
    ok = cuda::masked_scatter(work, m, src);
#endif
    TP_CHECK(ok, too_few);
  } else {
    const bool* mp = m.data<bool>();
    int64_t n = m.numel(), count = 0;
    for (int64_t i = 0; i < n; ++i) count += mp[i];
    TP_CHECK(count <= src.numel(), too_few);
    visit_dtype_with_complex(self.dtype(), [&](auto t) {
      using T = decltype(t);
      T* d = work.data<T>();
      const T* sp = src.data<T>();
      for (int64_t i = 0, k = 0; i < n; ++i)
        if (mp[i]) d[i] = sp[k++];
    });
  }
  if (!work.is_same(res)) copy_(res, work);
  res.impl()->bump_version();
  return res;
}

// ------------------------------------------------------------------ take_along_dim
Tensor take_along_dim_impl(const Tensor& self, const Tensor& indices, const std::optional<int64_t>& dim,
                           OutArg out) {
  // PyTorch's order with a dim: the ranks, the index dtype, then the dim
  if (dim)
    TP_CHECK(indices.dim() == self.dim(), "torch.take_along_dim(): input and indices should have the "
             "same number of dimensions, but got ", self.dim(), " dimensions for input, and ",
             indices.dim(), " dimensions for indices");
  TP_CHECK(indices.dtype() == DType::Int64, "torch.take_along_dim(): dtype of indices should be Long "
           "but got ", dtype_scalar_name(indices.dtype()));
  Tensor r, gathered;
  if (!dim) {
    gathered = reshape(self, std::vector<int64_t>{-1});
    r = gather(gathered, 0, reshape(indices, std::vector<int64_t>{-1}));
  } else {
    TP_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", *dim, " but tensor has no dimensions");
    int64_t d = wrap_dim(*dim, self.dim());
    // Broadcast the two against each other in every dim but `d`.
    DimVector is(indices.sizes().data(), indices.sizes().size()), ss(self.sizes().data(), self.sizes().size());
    for (int64_t k = 0; k < self.dim(); ++k) {
      if (k == d) continue;
      int64_t a = self.size(k), b = indices.size(k);
      TP_CHECK(a == b || a == 1 || b == 1, "The size of tensor a (", a, ") must match the size of "
               "tensor b (", b, ") at non-singleton dimension ", k);
      is[size_t(k)] = ss[size_t(k)] = a == 1 ? b : a;
    }
    gathered = expand(self, IntArrayRef(ss.data(), ss.size()));
    r = gather(gathered, d, expand(indices, IntArrayRef(is.data(), is.size())));
  }
  if (!out.tensor) return r;
  TP_CHECK(out.tensor->dtype() == r.dtype(), "Expected out tensor to have dtype ", dtype_name(r.dtype()),
           ", but got ", dtype_name(out.tensor->dtype()), " instead");
  // PyTorch's gather(out=) refuses an out= sharing memory with the input it gathers from (self
  // broadcast, or flattened without a dim), judged before out= is resized and on dense layouts
  // only (an expanded self passes)
  const Tensor& o = *out.tensor;
  const IntArrayRef rs = r.sizes();
  check_no_overlap(o, gathered);
  resize_out(o, rs);
  copy_(o, r);
  return o;
}

// ------------------------------------------------------------------ searchsorted / bucketize
namespace {

template <class T>
void search_rows(const T* bd, const int64_t* sorter, int64_t len, int64_t bstride, const T* v,
                 int64_t n, int64_t per_row, bool right, bool out32, char* out) {
#pragma omp parallel for num_threads(get_num_threads()) if (n >= 16384)
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = per_row ? i / per_row : 0, base = row * bstride;
    T x = v[i];
    int64_t lo = 0, hi = len;
    while (lo < hi) {  // first position whose value is > x (right) or >= x (left); NaN sorts last
      int64_t mid = lo + ((hi - lo) >> 1);
      T b = sorter ? bd[base + sorter[base + mid]] : bd[base + mid];
      bool before = right ? !(b > x) : !(b >= x);
      if (before) lo = mid + 1;
      else hi = mid;
    }
    if (out32) reinterpret_cast<int32_t*>(out)[i] = int32_t(lo);
    else reinterpret_cast<int64_t*>(out)[i] = lo;
  }
}

}  // namespace

Tensor searchsorted_impl(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                         const std::optional<std::string>& side, const std::optional<Tensor>& sorter,
                         OutArg out) {
  const Tensor& bd = sorted_sequence;
  TP_CHECK(bd.dim() > 0, "torch.searchsorted(): boundaries tensor should have positive dimension, but "
           "got 0 dimension");
  if (side) {
    TP_CHECK(*side == "left" || *side == "right", "torch.searchsorted(): side can only be 'left' or "
             "'right' but got ", *side);
    TP_CHECK(!(*side == "left" && right), "torch.searchsorted(): side and right can't be set to "
             "opposites, got side of left while right was True");
    right = *side == "right";
  }
  bool rows_match = bd.dim() == 1;
  if (!rows_match && bd.dim() == self.dim()) {
    rows_match = true;
    for (int64_t d = 0; d + 1 < bd.dim(); ++d) rows_match = rows_match && bd.size(d) == self.size(d);
  }
  TP_CHECK(rows_match, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
           "dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
           "tensor ", shape_str(bd.sizes()), " and input value tensor ", shape_str(self.sizes()));
  // A Python number for self comes as a CPU 0-dim tensor; it searches on the boundaries' device.
  Tensor vals = self.impl()->is_wrapped_number() ? on_device(self, bd.device()) : self;
  check_same_device({&bd, &vals});
  if (sorter) check_same_device({&bd, &*sorter});
  if (out.tensor) check_same_device({&bd, out.tensor});
  Tensor sort;
  if (sorter) {
    TP_CHECK(sorter->dtype() == DType::Int64, "torch.searchsorted(): sorter must be a tensor of long "
             "dtype but got dtype ", dtype_scalar_name(sorter->dtype()));
    TP_CHECK(std::equal(bd.sizes().begin(), bd.sizes().end(), sorter->sizes().begin(), sorter->sizes().end()),
             "torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
             "tensor ", shape_str(bd.sizes()), "and got sorter tensor ", shape_str(sorter->sizes()));
    sort = contiguous(*sorter);
    int64_t len = bd.size(bd.dim() - 1);
    if (!is_meta(sort)) {
      Tensor hsort = host_copy(sort);
      const int64_t* sp = hsort.data<int64_t>();
      for (int64_t i = 0; i < sort.numel(); ++i)
        TP_CHECK(sp[i] >= 0 && sp[i] < len, "torch.searchsorted(): sorter index out of range");
    }
  }
  DType ct = promote_types(bd.dtype(), self.dtype());
  if (ct == DType::Bool && self.numel() != 0)  // PyTorch returns an empty input before its dispatch
    TP_FAIL_NOT_IMPLEMENTED("searchsorted: not implemented for 'Bool'");
  DType rt = out_int32 ? DType::Int32 : DType::Int64;
  Tensor res;
  if (out.tensor) {
    TP_CHECK(out.tensor->dtype() == rt, "torch.searchsorted(): output tensor's dtype is wrong, it can "
             "only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got "
             "output tensor's dtype ", dtype_scalar_name(out.tensor->dtype()), " and out_int32 flag is ",
             out_int32 ? "True" : "False");
    // an out= that shares memory with an input (out=sorter) is written only at the end:
    // resizing it first would free what the search still reads
    auto shares = [&](const Tensor& t) { return t.impl()->storage() == out.tensor->impl()->storage(); };
    const bool aliased = shares(bd) || shares(vals) || (sorter && shares(*sorter));
    if (!aliased) resize_out(*out.tensor, self.sizes());
    res = !aliased && out.tensor->is_contiguous() ? *out.tensor
                                                  : empty_tensor(self.sizes(), rt, bd.device());
  } else {
    res = empty_tensor(self.sizes(), rt, bd.device());
  }
  if (is_meta(res)) {
    if (out.tensor) resize_out(*out.tensor, self.sizes());
    return out.tensor ? *out.tensor : res;
  }
  Tensor b = contiguous(_to_dtype(bd, ct)), v = contiguous(_to_dtype(vals, ct));
  int64_t len = bd.size(bd.dim() - 1), rows_per = bd.dim() == 1 ? 0 : (self.dim() ? self.size(self.dim() - 1) : 1);
  if (v.numel() == 0) {
  } else if (b.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::searchsorted(b, v, sort.defined() ? sort.device_data<int64_t>() : nullptr, len, rows_per,
                       right, res);
#endif
  } else {
    visit_dtype(ct, [&](auto t) {
      using T = decltype(t);
      search_rows<T>(b.data<T>(), sort.defined() ? sort.data<int64_t>() : nullptr, len, len, v.data<T>(),
                     v.numel(), rows_per, right, out_int32, res.data_ptr());
    });
  }
  if (out.tensor && !res.is_same(*out.tensor)) {
    resize_out(*out.tensor, self.sizes());
    copy_(*out.tensor, res);
  }
  return out.tensor ? *out.tensor : res;
}

Tensor bucketize_impl(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right, OutArg out) {
  TP_CHECK(boundaries.dim() == 1, "bucketize: boundaries tensor must be 1 dimension, but got dim(",
           boundaries.dim(), ")");
  return searchsorted_impl(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

}  // namespace tp
