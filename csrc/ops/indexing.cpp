// Indexing by tensors: index_select, gather, take, masked_fill, masked_select, nonzero.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/bits128.h"
#include "core/error.h"
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

/// Index values as int64 (checked integral), contiguous.
Tensor index_as_long(const Tensor& index, const char* op) {
  TP_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
           "(): Expected dtype int32/int64 for index");
  return contiguous(_to_dtype(index, DType::Int64));
}

}  // namespace

Tensor host_copy(const Tensor& t) {
  if (t.device().is_cpu()) return contiguous(t);
  Tensor h = empty_tensor(t.sizes(), t.dtype());
  copy_impl(h, t, false, {});
  return h;
}

void check_same_device(std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors)
    TP_CHECK(t->device() == first->device(), "Expected all tensors to be on the same device, but "
             "found at least two devices, ", first->device().str(), " and ", t->device().str(), "!");
}

Tensor index_select_impl(const Tensor& self, int64_t dim, const Tensor& index, OutArg) {
  TP_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  int64_t d = self.dim() ? wrap_dim(dim, self.dim()) : (wrap_dim(dim, 0), 0);
  Tensor idx = index_as_long(index, "index_select");
  int64_t n = idx.numel(), size = self.dim() ? self.size(d) : 1;
  TP_CHECK(self.dim() > 0 || n == 1, "index_select(): Index to scalar can have only 1 value, got ",
           n, " value(s)");
  if (self.device().is_cuda()) {
    TP_CHECK(idx.device() == self.device(), "index_select(): Expected all tensors to be on the "
             "same device, but found at least two devices, ", self.device().str(), " and ",
             idx.device().str(), "!");
    DimVector sizes(self.sizes().data(), self.sizes().size());
    if (self.dim()) sizes[d] = n;
    Tensor out = empty_tensor(sizes, self.dtype(), self.device());
    int nd = int(std::max<int64_t>(self.dim(), 1));
    DimVector shape(size_t(nd), 1), src_st(size_t(nd), 0), idx_st(size_t(nd), 0);
    for (int k = 0; k < int(self.dim()); ++k) shape[k] = sizes[k], src_st[k] = self.stride(k);
    if (self.dim() == 0) shape[0] = 1;
    idx_st[size_t(d)] = 1;
    bool ok = true;
#ifdef TP_USE_CUDA
    ok = cuda::index_gather(out, self, idx, nd, shape.data(), src_st.data(), idx_st.data(), int(d),
                            size, false);
#endif
    TP_CHECK_INDEX(ok, "index_select(): index out of range in self");
    return out;
  }
  DimVector sizes(self.sizes().data(), self.sizes().size());
  if (self.dim()) sizes[d] = n;
  Tensor out = empty_tensor(sizes, self.dtype(), self.device());
  if (is_meta(out)) return out;
  TP_CHECK(self.dim() == 0 || n == 0 || size > 0, "index_select(): self indexing axis dim should be positive");
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (ip[i] >= 0 && ip[i] < size) continue;
    // PyTorch's CPU kernel for dim 1 of a matrix or more raises RuntimeError, the others IndexError
    TP_CHECK(!(self.dim() > 1 && d == 1), "INDICES element is out of DATA bounds, id=", ip[i], " axis_dim=", size);
    TP_CHECK_INDEX(false, "index_select(): index out of range in self");
  }
  // Rows of `inner` contiguous elements: out[o, i, :] = x[o, index[i], :].
  Tensor x = contiguous(self);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= self.size(i);
  for (int64_t i = d + 1; i < self.dim(); ++i) inner *= self.size(i);
  size_t row = size_t(inner) * self.itemsize();
  const char* src = x.data_ptr();
  char* dst = out.data_ptr();
  // (o, i) in one parallel range: each thread finds its first pair once and steps from
  // there (no division per element, which made single elements cost ~3 ns each).
  auto copy_rows = [&](auto word) {
    using W = decltype(word);
    const bool par = outer * n * inner >= 65536;
    if (inner == 1) {
      const W* s = reinterpret_cast<const W*>(src);
      W* t = reinterpret_cast<W*>(dst);
#pragma omp parallel for collapse(2) num_threads(get_num_threads()) if (par)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < n; ++i) t[o * n + i] = s[o * size + ip[i]];
    } else {
#pragma omp parallel for collapse(2) num_threads(get_num_threads()) if (par)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < n; ++i)
          std::memcpy(dst + (o * n + i) * int64_t(row), src + (o * size + ip[i]) * int64_t(row), row);
    }
  };
  switch (self.itemsize()) {
    case 1: copy_rows(uint8_t{}); break;
    case 2: copy_rows(uint16_t{}); break;
    case 4: copy_rows(uint32_t{}); break;
    case 8: copy_rows(uint64_t{}); break;
    default: copy_rows(Bits128{}); break;
  }
  return out;
}

Tensor gather_impl(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad, OutArg) {
  (void)sparse_grad;
  int64_t nd = self.dim();
  int64_t d = nd ? wrap_dim(dim, nd) : (wrap_dim(dim, 0), 0);
  // PyTorch checks an empty index neither for its dtype nor for its shape; a 0-d tensor
  // counts as one of one element (its ensure_nonempty_size)
  if (index.numel() == 0) return empty_tensor(index.sizes(), self.dtype(), self.device());
  TP_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
           "gather(): Expected dtype int32/int64 for index");
  TP_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(nd, 1),
           "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t i = 0; i < std::max<int64_t>(nd, 1); ++i)
    TP_CHECK(i == d || (index.dim() ? index.size(i) : 1) <= (nd ? self.size(i) : 1), "Size does not match at dimension ",
             i, " expected index ", shape_str(index.sizes()), " to be no larger than self ", shape_str(self.sizes()),
             " apart from dimension ", d);
  Tensor idx = index_as_long(index, "gather");
  Tensor out = empty_tensor(idx.sizes(), self.dtype(), self.device());
  int64_t n = idx.numel(), isz = int64_t(self.itemsize());
  if (n == 0 || is_meta(out)) return out;
  if (self.device().is_cuda()) {
    int gd = int(std::max<int64_t>(idx.dim(), 1));
    DimVector shape(size_t(gd), 1), src_st(size_t(gd), 0), idx_st(size_t(gd), 0);
    for (int k = 0; k < int(idx.dim()); ++k) shape[k] = idx.size(k), idx_st[k] = idx.stride(k);
    for (int k = 0; k < int(nd); ++k) src_st[k] = self.stride(k);
    bool ok = true;
#ifdef TP_USE_CUDA
    ok = cuda::index_gather(out, self, idx, gd, shape.data(), src_st.data(), idx_st.data(), int(d),
                            nd ? self.size(d) : 1, true);
#endif
    if (!ok) {  // find the offending index on the host for PyTorch's message
      Tensor host = host_copy(idx);
      const int64_t* hp = host.data<int64_t>();
      int64_t size = nd ? self.size(d) : 1;
      for (int64_t e = 0; e < n; ++e)
        TP_CHECK(hp[e] >= -size && hp[e] < size, "index ", hp[e], " is out of bounds for dimension ",
                 d, " with size ", size);
    }
    return out;
  }
  const int64_t* ip = idx.data<int64_t>();
  int64_t size = nd ? self.size(d) : 1;
  int64_t idim = idx.dim();
  // Rows of the index's last dim; each row's source base offset comes from its other dims.
  int64_t last = idim ? idx.size(idim - 1) : 1;
  int64_t last_stride = (idim && idim - 1 != d) ? self.stride(idim - 1) : 0;
  int64_t dstride = nd ? self.stride(d) : 0;
  int bad = 0;
  auto run = [&](auto word) {
    using W = decltype(word);
    const W* src = reinterpret_cast<const W*>(self.data_ptr());
    W* dst = reinterpret_cast<W*>(out.data_ptr());
    auto row_base = [&](int64_t r) {
      int64_t base = 0, rem = r;
      for (int64_t k = idim - 2; k >= 0; --k) {
        int64_t c = rem % idx.size(k);
        rem /= idx.size(k);
        if (k != d) base += c * self.stride(k);
      }
      return base;
    };
    // Blocks of the flat index, in parallel; each tracks its row and that row's base offset.
    constexpr int64_t kBlock = 4096;
#pragma omp parallel for num_threads(get_num_threads()) if (n >= 65536) reduction(| : bad)
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t e_end = std::min(n, b + kBlock), r = b / last, k = b - r * last;
      int64_t base = row_base(r);
      for (int64_t e = b; e < e_end; ++e) {
        int64_t j = ip[e];
        bad |= j < -size || j >= size;
        j = j < 0 ? j + size : j;
        j = j < 0 || j >= size ? 0 : j;  // a bad index reads element 0; the error follows
        dst[e] = src[base + k * last_stride + j * dstride];
        if (++k == last) {
          k = 0;
          if (e + 1 < e_end) base = row_base(++r);
        }
      }
    }
  };
  switch (isz) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    case 8: run(uint64_t{}); break;
    default: run(Bits128{}); break;
  }
  if (bad) {
    for (int64_t e = 0; e < n; ++e)
      TP_CHECK(ip[e] >= -size && ip[e] < size, "index ", ip[e], " is out of bounds for dimension ",
               d, " with size ", size);
  }
  return out;
}

Tensor take_impl(const Tensor& self, const Tensor& index, OutArg) {
  Tensor flat = reshape(contiguous(self), std::vector<int64_t>{self.numel()});
  Tensor idx = index_as_long(index, "take");
  Tensor out = empty_tensor(idx.sizes(), self.dtype(), self.device());
  if (is_meta(out)) return out;
  if (self.device().is_cuda()) {
    int64_t n = self.numel(), count = idx.numel(), one = 1;
    bool ok = true;
#ifdef TP_USE_CUDA
    ok = cuda::index_gather(out, flat, idx, 1, &count, &one, &one, 0, n, true);
#endif
    if (!ok) {
      Tensor host = host_copy(idx);
      const int64_t* hp = host.data<int64_t>();
      for (int64_t e = 0; e < count; ++e)
        TP_CHECK_INDEX(hp[e] >= -n && hp[e] < n, "take(): out of range: tried to access index ",
                       hp[e], " on a tensor of ", n, " elements.");
    }
    return out;
  }
  const int64_t* ip = idx.data<int64_t>();
  int64_t isz = int64_t(self.itemsize()), n = self.numel();
  for (int64_t e = 0; e < idx.numel(); ++e) {
    TP_CHECK_INDEX(ip[e] >= -n && ip[e] < n, "take(): out of range: tried to access index ", ip[e],
                   " on a tensor of ", n, " elements.");
    int64_t j = ip[e] < 0 ? ip[e] + n : ip[e];
    std::memcpy(out.data_ptr() + e * isz, flat.data_ptr() + j * isz, size_t(isz));
  }
  return out;
}

namespace {

// Note [masked_fill_ of an overlapping tensor]
// PyTorch's masked_fill_ skips the written-to tensor's overlap check: it writes the value only
// where the mask holds, so an expanded self comes out the same whatever the order (an element
// is the value if any of its aliases is masked). where() writes every element (an unmasked alias
// may write back the old value after a masked one wrote the new), so a CPU self with a
// stride-0 dim is filled here by a loop writing masked elements only.
bool masked_fill_overlapping(const Tensor& self, const Tensor& mask, const Tensor& v) {
  if (self.numel() <= 1 || !self.device().is_cpu() || !mask.device().is_cpu() || !v.device().is_cpu()) return false;
  bool expanded = false;
  for (int64_t d = 0; d < self.dim(); ++d) expanded = expanded || (self.stride(d) == 0 && self.size(d) > 1);
  if (!expanded) return false;
  Tensor m = contiguous(expand(mask, self.sizes()));  // (a mask that does not broadcast raises here)
  const bool* mp = m.data<bool>();
  const size_t isz = self.itemsize();
  const char* vp = v.data_ptr();
  char* base = self.data_ptr();
  const int64_t nd = self.dim(), n = self.numel();
  DimVector idx(size_t(nd), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (mp[i]) std::memcpy(base + offset * int64_t(isz), vp, isz);
    for (int64_t d = nd - 1; d >= 0; --d) {  // the next index in row-major order
      if (++idx[size_t(d)] < self.size(d)) {
        offset += self.stride(d);
        break;
      }
      offset -= self.stride(d) * (self.size(d) - 1);
      idx[size_t(d)] = 0;
    }
  }
  self.impl()->bump_version();
  return true;
}

}  // namespace

Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const Tensor& value, OutArg out) {
  TP_CHECK(mask.dtype() == DType::Bool, "masked_fill_ only supports boolean masks, but got mask "
           "with dtype ", dtype_name(mask.dtype()));
  TP_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
           "tensor with ", value.dim(), " dimension(s).");
  Tensor v = _to_dtype(value, self.dtype());
  if (out.tensor && masked_fill_overlapping(self, mask, v)) return self;
  if (out.tensor) {  // in place: self keeps its shape; the mask broadcasts to it
    Tensor m = expand(mask, self.sizes());
    return where_impl(m, v, self, out);
  }
  // A new contiguous tensor of the broadcast shape, whatever self's layout (as PyTorch's
  // clone(Contiguous) then masked_fill_).
  DimVector bs = broadcast_shapes_of(self, mask, "masked_fill");
  Tensor res = empty_tensor(bs, self.dtype(), self.device());
  return where_impl(mask, v, self, OutArg{&res});
}

Tensor masked_select_impl(const Tensor& self, const Tensor& mask, OutArg) {
  TP_CHECK(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask");
  DimVector bs = broadcast_shapes_of(self, mask, "masked_select");
  if (self.device().is_cuda()) check_same_device({&self, &mask});
  Tensor x = contiguous(expand(self, bs)), m = contiguous(expand(mask, bs));
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    return cuda::masked_select(x, m);
#endif
  }
  const bool* mp = m.data<bool>();
  int64_t n = m.numel(), count = 0;
  for (int64_t i = 0; i < n; ++i) count += mp[i];
  int64_t sz[1] = {count};
  Tensor out = empty_tensor(sz, self.dtype(), self.device());
  int64_t isz = int64_t(self.itemsize()), o = 0;
  for (int64_t i = 0; i < n; ++i)
    if (mp[i]) std::memcpy(out.data_ptr() + (o++) * isz, x.data_ptr() + i * isz, size_t(isz));
  return out;
}

namespace {
Tensor nonzero_rows(const Tensor& self);
}  // namespace

Tensor nonzero_impl(const Tensor& self, OutArg out) {
  if (!out.tensor) return nonzero_rows(self);
  Tensor& o = const_cast<Tensor&>(*out.tensor);
  TP_CHECK(o.dtype() == DType::Int64, "nonzero: Expected out tensor to have scalar type Long "
           "but got scalar type", dtype_scalar_name(o.dtype()));
  TP_CHECK(o.device() == self.device(), "nonzero: Expected out tensor to be on device ",
           self.device().str(), " but got ", o.device().str());
  Tensor r = nonzero_rows(self);
  if (!std::equal(r.sizes().begin(), r.sizes().end(), o.sizes().begin(), o.sizes().end())) {
    // a resized out= is column-major, as PyTorch makes it
    resize_out(o, r.sizes());
    o.impl()->set_sizes_and_strides(DimVector(r.sizes().data(), r.sizes().size()),
                                    DimVector{1, r.size(0)}, 0);
  }
  copy_impl(o, r, false, OutArg::none());
  return o;
}

namespace {
Tensor nonzero_rows(const Tensor& self) {
  if (self.device().is_cuda()) {  // reads the count back: PyTorch synchronises here too
    Tensor x = contiguous(self);
#ifdef TP_USE_CUDA
    return cuda::nonzero(x);
#endif
  }
  Tensor x = contiguous(_to_dtype(self, DType::Bool));
  const bool* p = x.data<bool>();
  int64_t n = x.numel(), nd = self.dim(), count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i];
  // Column-major like PyTorch's: shape (count, nd), strides (1, count).
  int64_t sz[2] = {count, nd};
  int64_t st[2] = {1, count};
  Tensor out = empty_strided_tensor(sz, st, DType::Int64, self.device());
  int64_t* o = out.data<int64_t>();
  std::vector<int64_t> ctr(size_t(std::max<int64_t>(nd, 1)), 0);
  for (int64_t i = 0, row = 0; i < n; ++i) {
    if (p[i]) {
      for (int64_t k = 0; k < nd; ++k) o[k * count + row] = ctr[size_t(k)];
      ++row;
    }
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++ctr[size_t(k)] < self.size(k)) break;
      ctr[size_t(k)] = 0;
    }
  }
  return out;
}
}  // namespace

}  // namespace tp
