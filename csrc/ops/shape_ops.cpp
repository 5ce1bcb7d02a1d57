// Shape ops that copy: cat/stack, flip/roll/rot90, repeat/tile/repeat_interleave,
// tril/triu and their indices, diag/diag_embed/diagflat. Composite kernels over
// empty_tensor, make_view and copy_impl, plus one gather loop (gather_grid) for the
// ops that reorder elements.
#include <algorithm>
#include <array>
#include <numeric>
#include <cstring>
#include <vector>

#include "core/bits128.h"
#include "ops/meta.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/index.h"
#endif

namespace tp {

namespace {

using Index = std::vector<int64_t>;

DimVector dims_of(const Tensor& t) { return DimVector(t.sizes().data(), t.dim()); }
DimVector strides_of(const Tensor& t) { return DimVector(t.strides().data(), t.dim()); }

/// The result tensor of an op with an `out=` form: `out` itself (resized to `sizes` if its
/// shape differs), or a new contiguous tensor.
Tensor result_for(OutArg out, IntArrayRef sizes, DType dtype, Device device) {
  if (!out.tensor) return empty_tensor(sizes, dtype, device);
  resize_out(*out.tensor, sizes);
  return *out.tensor;
}

template <class T>
void gather_row(char* dst, const char* src, const int64_t* offs, int64_t n) {
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t j = 0; j < n; ++j) std::memcpy(d + j, src + offs[j], sizeof(T));
}

/// out[i0, i1, ...] = src[idx[0][i0], idx[1][i1], ...], a new contiguous tensor of shape
/// (idx[0].size(), ...); `src` has idx.size() dims (or is given `src_strides` for them).
Tensor gather_grid(const Tensor& src, const std::vector<Index>& idx, IntArrayRef src_strides) {
  int64_t nd = int64_t(idx.size()), isz = int64_t(src.itemsize());
  DimVector sizes(nd);
  for (int64_t d = 0; d < nd; ++d) sizes[d] = int64_t(idx[d].size());
  Tensor out = empty_tensor(sizes, src.dtype(), src.device());
  if (out.numel() == 0 || is_meta(out)) return out;
  if (src.device().is_cuda()) {
#ifdef TP_USE_CUDA
    std::vector<std::vector<int64_t>> offs(static_cast<size_t>(nd));
    for (int64_t d = 0; d < nd; ++d)
      for (int64_t i : idx[d]) offs[size_t(d)].push_back(i * src_strides[d] * isz);
    cuda::gather_grid(out, src, offs);
#endif
    return out;
  }
  const char* base = src.data_ptr();
  char* dst = out.data_ptr();
  if (nd == 0) {
    std::memcpy(dst, base, size_t(isz));
    return out;
  }
  std::vector<Index> offs(nd);  // byte offset of each index, per dim
  for (int64_t d = 0; d < nd; ++d) {
    offs[d].resize(idx[d].size());
    for (size_t i = 0; i < idx[d].size(); ++i) offs[d][i] = idx[d][i] * src_strides[d] * isz;
  }
  int64_t inner = sizes[nd - 1], rows = out.numel() / inner;
  DimVector ctr(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = base;
    for (int64_t d = 0; d < nd - 1; ++d) row += offs[d][ctr[d]];
    const int64_t* o = offs[nd - 1].data();
    switch (isz) {
      case 1: gather_row<uint8_t>(dst, row, o, inner); break;
      case 2: gather_row<uint16_t>(dst, row, o, inner); break;
      case 4: gather_row<uint32_t>(dst, row, o, inner); break;
      case 8: gather_row<uint64_t>(dst, row, o, inner); break;
      default: gather_row<Bits128>(dst, row, o, inner); break;
    }
    dst += inner * isz;
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++ctr[d] < sizes[d]) break;
      ctr[d] = 0;
    }
  }
  return out;
}

Index iota(int64_t n) {
  Index v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::vector<Index> identity_grid(const Tensor& t) {
  std::vector<Index> g(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) g[d] = iota(t.size(d));
  return g;
}

/// Wraps each of `dims`, rejecting repeats ("dim 0 appears multiple times ...").
std::vector<bool> dim_set(IntArrayRef dims, int64_t nd) {
  std::vector<bool> seen(size_t(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd);
    TP_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
  }
  return seen;
}

Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  DimVector sizes = dims_of(t);
  sizes[dim] = len;
  return make_view(t, sizes, strides_of(t), t.storage_offset() + start * t.stride(dim));
}

/// Whether every tensor cat uses is 4-D and laid out channels-last (and not also
/// contiguous): then cat's result is channels-last too, as in PyTorch.
bool all_channels_last(TensorList tensors) {
  bool any = false;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.size(0) == 0) continue;
    if (t.dim() != 4 || t.is_contiguous()) return false;
    any = true;
    DimVector want = channels_last_strides(t.sizes());
    for (int64_t d = 0; d < 4; ++d)
      if (t.size(d) != 1 && t.stride(d) != want[d]) return false;
  }
  return any;
}

/// cat's fast path: contiguous CPU inputs of the result's dtype are rows of bytes
/// (memcpy per outer index and input), as in PyTorch's serial kernel.
bool cat_contiguous(TensorList tensors, const Tensor& res, int64_t dim) {
  if (!res.is_contiguous() || !res.device().is_cpu()) return false;
  for (const Tensor& t : tensors)
    if (!t.is_contiguous() || t.dtype() != res.dtype() || !t.device().is_cpu()) return false;
  for (const Tensor& t : tensors)
    if (res.data_ptr() < t.data_ptr() + t.numel() * int64_t(t.itemsize()) &&
        t.data_ptr() < res.data_ptr() + res.numel() * int64_t(res.itemsize()))
      return false;  // overlapping memory: the general path reports or handles it
  int64_t outer = 1, inner = int64_t(res.itemsize());
  for (int64_t d = 0; d < dim; ++d) outer *= res.size(d);
  for (int64_t d = dim + 1; d < res.dim(); ++d) inner *= res.size(d);
  char* dst = res.data_ptr();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : tensors) {
      if (t.dim() == 1 && t.size(0) == 0) continue;
      int64_t n = t.size(dim) * inner;
      std::memcpy(dst, t.data_ptr() + o * n, size_t(n));
      dst += n;
    }
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------ cat, stack
Tensor cat_impl(TensorList tensors, int64_t dim, OutArg out) {
  TP_CHECK_VALUE(!tensors.empty(), "expected a non-empty list of Tensors");
  // Legacy rule: 1-D tensors of shape (0,) are skipped for shapes (not for the dtype).
  const Tensor* ref = nullptr;
  DType dtype = tensors[0].dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TP_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    dtype = promote_types(dtype, t.dtype());
    if (!ref && !(t.dim() == 1 && t.size(0) == 0)) ref = &t;
  }
  if (!ref) ref = &tensors[0];
  int64_t nd = ref->dim();
  dim = wrap_dim(dim, nd);
  DimVector sizes = dims_of(*ref);
  if (out.tensor)  // before the shapes, as PyTorch's meta function
    TP_CHECK_TYPE(can_cast(dtype, out.tensor->dtype()),
                  "input types can't be cast to the desired output type ",
                  dtype_scalar_name(out.tensor->dtype()));
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.size(0) == 0) continue;
    TP_CHECK(t.dim() == nd, "Tensors must have same number of dimensions: got ", nd, " and ",
             t.dim());
    for (int64_t d = 0; d < nd; ++d)
      TP_CHECK(d == dim || t.size(d) == sizes[d], "Sizes of tensors must match except in dimension ",
               dim, ". Expected size ", sizes[d], " but got size ", t.size(d), " for tensor number ",
               i, " in the list.");
    total += t.size(dim);
  }
  sizes[dim] = total;
  int64_t total_numel = 1;
  for (int64_t s : sizes) total_numel *= s;
  if (out.tensor) {  // an out= whose memory an input also spans (out= one of the inputs), checked
    // before out= is resized, as PyTorch's (its resize keeps the input's memory)
    auto span = [](const Tensor& t) {
      int64_t extent = 1;
      for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * t.stride(d);
      const char* lo = static_cast<const char*>(t.data_ptr());
      return std::pair{lo, lo + extent * int64_t(t.itemsize())};
    };
    if (!is_meta(*out.tensor))
      for (const Tensor& t : tensors) {
        // out= one of the inputs: the resize makes them the same (PyTorch: a full overlap, even
        // of empty tensors)
        TP_CHECK(t.impl() != out.tensor->impl(), "unsupported operation: some elements of the "
                 "input tensor and the written-to tensor refer to a single memory location. "
                 "Please clone() the tensor before performing the operation.");
        if (!total_numel || !t.numel() || !out.tensor->numel() ||
            t.impl()->storage() != out.tensor->impl()->storage())
          continue;
        auto [a0, a1] = span(t);
        auto [b0, b1] = span(*out.tensor);
        TP_CHECK(a1 <= b0 || b1 <= a0, "unsupported operation: some elements of the input tensor "
                 "and the written-to tensor refer to a single memory location. Please clone() the "
                 "tensor before performing the operation.");
      }
  }
  Tensor res = out.tensor || !all_channels_last(tensors)
                   ? result_for(out, sizes, out.tensor ? out.tensor->dtype() : dtype, ref->device())
                   : empty_strided_tensor(sizes, channels_last_strides(sizes), dtype, ref->device());
  if (cat_contiguous(tensors, res, dim)) {
    res.impl()->bump_version();
    return res;
  }
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.size(0) == 0) continue;
    int64_t n = t.size(dim);
    if (n == 0) continue;
    Tensor slot = narrow_view(res, dim, at, n);
    copy_impl(slot, t, false, {});
    at += n;
  }
  return res;
}

Tensor stack_impl(TensorList tensors, int64_t dim, OutArg out) {
  TP_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  const Tensor& first = tensors[0];
  dim = wrap_dim(dim, first.dim() + 1);  // before the sizes, as PyTorch
  for (size_t i = 1; i < tensors.size(); ++i)
    TP_CHECK(std::equal(first.sizes().begin(), first.sizes().end(), tensors[i].sizes().begin(),
                        tensors[i].sizes().end()),
             "stack expects each tensor to be equal size, but got ", shape_str(first.sizes()),
             " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) {  // unsqueeze(dim): a size-1 dim
    DimVector sizes, strides;
    for (int64_t d = 0; d <= t.dim(); ++d) {
      if (d == dim) {
        sizes.push_back(1);
        strides.push_back(d < t.dim() ? t.stride(d) * t.size(d) : 1);
      }
      if (d < t.dim()) {
        sizes.push_back(t.size(d));
        strides.push_back(t.stride(d));
      }
    }
    parts.push_back(make_view(t, sizes, strides, t.storage_offset()));
  }
  return cat_impl(parts, dim, out);
}

// ------------------------------------------------------------------ flip, roll, rot90
Tensor flip_impl(const Tensor& self, IntArrayRef dims, OutArg) {
  auto flipped = dim_set(dims, self.dim());
  // The result is laid out as PyTorch's empty_like lays it (a dense input's strides, else
  // dense ones in the order of the input's): gather in the order of decreasing result
  // strides, then permute back.
  const DimVector want = preserving_strides(self.sizes(), self.strides());
  DimVector order(self.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return want[a] > want[b]; });
  Tensor x = permute_impl(self, order, {});
  auto grid = identity_grid(x);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (flipped[order[d]]) std::reverse(grid[d].begin(), grid[d].end());
  Tensor res = gather_grid(x, grid, x.strides());
  DimVector inverse(self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) inverse[order[d]] = d;
  return permute_impl(res, inverse, {});
}

Tensor fliplr_impl(const Tensor& self, OutArg) {
  TP_CHECK(self.dim() >= 2, "Input must be >= 2-d.");
  std::array<int64_t, 1> d{1};
  return flip_impl(self, d, {});
}

Tensor flipud_impl(const Tensor& self, OutArg) {
  TP_CHECK(self.dim() >= 1, "Input must be >= 1-d.");
  std::array<int64_t, 1> d{0};
  return flip_impl(self, d, {});
}

Tensor roll_impl(const Tensor& self, IntArrayRef shifts, IntArrayRef dims, OutArg) {
  if (dims.empty()) {  // the flattened tensor, rolled, in self's shape
    TP_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(),
             ", dims:0");
    Tensor flat = reshape_impl(self, std::array<int64_t, 1>{-1}, {});
    std::array<int64_t, 1> d0{0};
    Tensor r = roll_impl(flat, shifts, d0, {});
    return view_impl(r, self.sizes(), {});
  }
  TP_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
           shifts.size(), ", dims:", dims.size());
  if (self.numel() == 0) return clone(self);  // PyTorch's early return: no dim is looked at
  // a 0-d tensor has no dim to roll (wrap_dim would accept 0 as its scalar dim)
  TP_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dims[0], " but tensor has no dimensions");
  auto grid = identity_grid(self);
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = wrap_dim(dims[k], self.dim());
    int64_t n = int64_t(grid[d].size());
    if (n == 0) continue;
    int64_t s = ((shifts[k] % n) + n) % n;
    Index rolled(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) rolled[i] = grid[d][((i - s) % n + n) % n];
    grid[d] = std::move(rolled);
  }
  return gather_grid(self, grid, self.strides());
}

Tensor rot90_impl(const Tensor& self, int64_t k, IntArrayRef dims, OutArg) {
  TP_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
  TP_CHECK(self.dim() >= 2, "expected total dims >= 2, but got total dims = ", self.dim());
  int64_t d0 = wrap_dim(dims[0], self.dim()), d1 = wrap_dim(dims[1], self.dim());
  TP_CHECK(d0 != d1, "expected rotation dims to be different, but got dim0 = ", d0,
           " and dim1 = ", d1);
  k = ((k % 4) + 4) % 4;
  std::array<int64_t, 1> f0{d0}, f1{d1};
  std::array<int64_t, 2> both{d0, d1};
  switch (k) {
    case 1: return transpose_impl(flip_impl(self, f1, {}), d0, d1, {});
    case 2: return flip_impl(self, both, {});
    case 3: return transpose_impl(flip_impl(self, f0, {}), d0, d1, {});
    default: {  // a contiguous copy, whatever self's layout
      Tensor res = empty_tensor(self.sizes(), self.dtype(), self.device());
      copy_impl(res, self, false, {});
      return res;
    }
  }
}

// ------------------------------------------------------------------ repeat, tile, repeat_interleave
Tensor repeat_impl(const Tensor& self, IntArrayRef repeats, OutArg) {
  int64_t nd = int64_t(repeats.size()), pad = nd - self.dim();
  TP_CHECK(pad >= 0,
           "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  // PyTorch checks the result's sizes, so a negative repeat of an empty dim passes (its meta
  // function refuses every negative repeat)
  if (is_meta(self))
    for (int64_t d = 0; d < nd; ++d)
      TP_CHECK(repeats[d] >= 0, "Repeats cannot be negative, found ", repeats[d], " at index ", d);
  DimVector target(nd);
  for (int64_t d = 0; d < nd; ++d) target[d] = (d < pad ? 1 : self.size(d - pad)) * repeats[d];
  for (int64_t t : target)
    TP_CHECK(t >= 0, "Trying to create tensor with negative dimension ", t, ": ", shape_str(target));
  std::vector<Index> grid(nd);
  DimVector strides(nd, 0);
  for (int64_t d = 0; d < nd; ++d) {
    int64_t s = d < pad ? 1 : self.size(d - pad);
    if (d >= pad) strides[d] = self.stride(d - pad);
    grid[d].resize(size_t(target[d]));
    for (int64_t i = 0; i < target[d]; ++i) grid[d][i] = i % s;
  }
  return gather_grid(self, grid, strides);
}

Tensor tile_impl(const Tensor& self, IntArrayRef dims, OutArg) {
  DimVector reps(std::max<int64_t>(self.dim() - int64_t(dims.size()), 0), 1);
  for (int64_t r : dims) reps.push_back(r);
  return repeat_impl(self, reps, {});
}

Tensor repeat_interleave_impl(const Tensor& self, const Tensor& repeats, const std::optional<int64_t>& dim,
                              const std::optional<int64_t>& output_size, OutArg) {
  TP_CHECK(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor");
  // PyTorch's kernel dispatches on int32 / int64 repeats only
  TP_CHECK_KIND(ErrorKind::NotImplemented, repeats.dtype() == DType::Int32 || repeats.dtype() == DType::Int64,
                "\"repeat_interleave_", repeats.device().is_cuda() ? "cuda" : "cpu", "\" not implemented for '",
                dtype_scalar_name(repeats.dtype()), "'");
  Tensor input = self;
  int64_t d = 0;
  if (dim) {
    (void)size_at(self, *dim);  // a 0-d tensor: PyTorch's IndexError
    d = wrap_dim(*dim, self.dim());
  } else {
    input = reshape_impl(self, std::array<int64_t, 1>{-1}, {});
  }
  if (input.dim() == 0) input = reshape_impl(input, std::array<int64_t, 1>{1}, {});
  int64_t n = input.size(d);
  if (is_meta(repeats)) {  // the repeats' values are unknown: only output_size gives the shape
    TP_CHECK(output_size, "cannot repeat_interleave a meta tensor without output_size");
    DimVector sizes = dims_of(input);
    sizes[size_t(d)] = *output_size;
    return empty_tensor(sizes, input.dtype(), input.device());
  }
  // the repeats are read on the host (a CUDA tensor's too: the result's size depends on them)
  Tensor reps = to_dtype_impl(host_copy(repeats), DType::Int64, false, {});
  const int64_t* r = reps.data<int64_t>();
  bool scalar = reps.numel() == 1;
  TP_CHECK(scalar || reps.numel() == n,
           "repeats must have the same size as input along dim, but got repeats.size(0) = ",
           reps.numel(), " and input.size(", d, ") = ", n);
  // the result's size first, checked for overflow, and allocated when it is large: absurd
  // repeats raise (PyTorch's errors) instead of filling an index list for ever
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = scalar ? r[0] : r[i];
    TP_CHECK(c >= 0, "Repeats must be non-negative");
    TP_CHECK(!__builtin_add_overflow(total, c, &total),
             "Storage size calculation overflowed with sizes=[", INT64_MAX, "]");
  }
  if (output_size) TP_CHECK(total == *output_size, "allocated size does not match required size");
  DimVector sizes = dims_of(input);
  sizes[size_t(d)] = total;
  int64_t numel = 1;
  for (int64_t s : sizes)
    TP_CHECK(!__builtin_mul_overflow(numel, s, &numel), "Storage size calculation overflowed with sizes=",
             shape_str(sizes));
  if (numel == 0) return empty_tensor(sizes, input.dtype(), input.device());
  if (total > (int64_t(1) << 24)) (void)empty_tensor(sizes, input.dtype(), input.device());
  auto grid = identity_grid(input);
  Index idx;
  idx.reserve(size_t(total));
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = scalar ? r[0] : r[i];
    for (int64_t j = 0; j < c; ++j) idx.push_back(i);
  }
  if (input.device().is_cuda()) {  // the source rows by index_select's kernel
    const int64_t count = int64_t(idx.size());
    Tensor host = empty_tensor(IntArrayRef(&count, 1), DType::Int64);
    std::copy(idx.begin(), idx.end(), host.data<int64_t>());
    Tensor index = empty_tensor(IntArrayRef(&count, 1), DType::Int64, input.device());
    copy_impl(index, host, false, {});
    return index_select(input, d, index);
  }
  grid[d] = std::move(idx);
  return gather_grid(input, grid, input.strides());
}

// ------------------------------------------------------------------ tril, triu
namespace {

/// Zeroes, in every matrix of the last two dims of t, the elements with
/// (col - row > diagonal) for tril (`lower`) or (col - row < diagonal) for triu.
void zero_triangle(const Tensor& t, int64_t diagonal, bool lower) {
  int64_t nd = t.dim(), rows = t.size(nd - 2), cols = t.size(nd - 1);
  if (t.numel() == 0) return;
  int64_t isz = int64_t(t.itemsize()), rs = t.stride(nd - 2) * isz, cs = t.stride(nd - 1) * isz;
  int64_t batches = t.numel() / (rows * cols);
  DimVector ctr(std::max<int64_t>(nd - 2, 0), 0);
  for (int64_t b = 0; b < batches; ++b) {
    char* m = t.data_ptr();
    for (int64_t d = 0; d < nd - 2; ++d) m += ctr[d] * t.stride(d) * isz;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (lower ? j - i > diagonal : j - i < diagonal) std::memset(m + i * rs + j * cs, 0, size_t(isz));
    for (int64_t d = nd - 3; d >= 0; --d) {
      if (++ctr[d] < t.size(d)) break;
      ctr[d] = 0;
    }
  }
}

/// An out= of triu / tril / diag must have self's dtype (PyTorch: no cast).
void check_out_dtype_exact(const Tensor& self, OutArg out) {
  if (!out.tensor || out.inplace) return;
  TP_CHECK(out.tensor->dtype() == self.dtype(), "Expected out tensor to have dtype ", cpp_type_name(self.dtype()),
           ", but got ", cpp_type_name(out.tensor->dtype()), " instead");
}

Tensor triangle(const char* name, const Tensor& self, int64_t diagonal, bool lower, OutArg out) {
  TP_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  check_out_dtype_exact(self, out);
  Tensor res;
  if (out.tensor && out.inplace) {
    res = self;
  } else {
    res = result_for(out, self.sizes(), out.tensor ? out.tensor->dtype() : self.dtype(), self.device());
    copy_impl(res, self, false, {});
  }
  if (is_meta(res)) return res;
  if (res.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::zero_triangle(res, diagonal, lower);
#endif
  } else {
    zero_triangle(res, diagonal, lower);
  }
  res.impl()->bump_version();
  return res;
}

Tensor tri_indices(int64_t row, int64_t col, int64_t offset, const std::optional<DType>& dtype,
                   const std::optional<Device>& device, bool lower) {
  TP_CHECK(row >= 0, "row must be non-negative, got", row);
  TP_CHECK(col >= 0, "col must be non-negative, got", col);
  Index rs, cs;
  for (int64_t i = 0; i < row; ++i)
    for (int64_t j = 0; j < col; ++j)
      if (lower ? j - i <= offset : j - i >= offset) {
        rs.push_back(i);
        cs.push_back(j);
      }
  int64_t n = int64_t(rs.size());
  Tensor idx = empty_tensor(std::array<int64_t, 2>{2, n}, DType::Int64);
  std::copy(rs.begin(), rs.end(), idx.data<int64_t>());
  std::copy(cs.begin(), cs.end(), idx.data<int64_t>() + n);
  DType dt = dtype.value_or(DType::Int64);
  TP_CHECK_KIND(ErrorKind::NotImplemented, dt == DType::Int64 || dt == DType::Int32, "\"",
                lower ? "tril" : "triu", "_indices\" not implemented for '", dtype_scalar_name(dt), "'");
  Tensor res = to_dtype_impl(idx, dt, false, {});
  if (!device || device->is_cpu()) return res;
  Tensor on = empty_tensor(res.sizes(), res.dtype(), *device);  // meta: the shape only
  copy_impl(on, res, false, {});
  return on;
}

}  // namespace

Tensor tril_impl(const Tensor& self, int64_t diagonal, OutArg out) {
  return triangle("tril", self, diagonal, true, out);
}
Tensor triu_impl(const Tensor& self, int64_t diagonal, OutArg out) {
  return triangle("triu", self, diagonal, false, out);
}
Tensor tril_indices_impl(int64_t row, int64_t col, int64_t offset, const std::optional<DType>& dtype,
                         const std::optional<Device>& device, OutArg) {
  return tri_indices(row, col, offset, dtype, device, true);
}
Tensor triu_indices_impl(int64_t row, int64_t col, int64_t offset, const std::optional<DType>& dtype,
                         const std::optional<Device>& device, OutArg) {
  return tri_indices(row, col, offset, dtype, device, false);
}

// ------------------------------------------------------------------ diag, diag_embed, diagflat
namespace {

/// A view of the `offset` diagonal of dims (d1, d2) of t, moved to the last dim.
Tensor diagonal_view(const Tensor& t, int64_t offset, int64_t d1, int64_t d2) {
  int64_t n1 = t.size(d1), n2 = t.size(d2);
  int64_t len = offset >= 0 ? std::max<int64_t>(std::min(n1, n2 - offset), 0)
                            : std::max<int64_t>(std::min(n1 + offset, n2), 0);
  int64_t start = t.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * t.stride(d2) : -offset * t.stride(d1);
  DimVector sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != d1 && d != d2) {
      sizes.push_back(t.size(d));
      strides.push_back(t.stride(d));
    }
  sizes.push_back(len);
  strides.push_back(t.stride(d1) + t.stride(d2));
  return make_view(t, sizes, strides, start);
}

}  // namespace

Tensor diag_embed_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2, OutArg) {
  // PyTorch's order: the dims (IndexError), then their distinctness, then the input's rank
  int64_t nd = self.dim() + 1;
  int64_t given1 = dim1, given2 = dim2;
  dim1 = wrap_dim(dim1, nd);
  dim2 = wrap_dim(dim2, nd);
  TP_CHECK(dim1 != dim2, "diagonal dimensions cannot be identical ", given1, ", ", given2);
  TP_CHECK(self.dim() >= 1, "diag_embed: input must be at least 1-D");
  int64_t n = self.size(self.dim() - 1) + (offset < 0 ? -offset : offset);
  DimVector sizes;
  for (int64_t d = 0, k = 0; d < nd; ++d)
    sizes.push_back(d == dim1 || d == dim2 ? n : self.size(k++));
  Tensor res = zeros_impl(sizes, self.dtype(), self.device(), false, {});
  Tensor diag = diagonal_view(res, offset, dim1, dim2);
  copy_impl(diag, self, false, {});
  return res;
}

Tensor diag_impl(const Tensor& self, int64_t diagonal, OutArg out) {
  TP_CHECK(self.dim() == 1 || self.dim() == 2, "Supports 1D or 2D tensors. Got ", self.dim(), "D");
  check_out_dtype_exact(self, out);
  if (self.dim() == 1) {
    Tensor r = diag_embed_impl(self, diagonal, 0, 1, {});
    if (!out.tensor) return r;
    Tensor res = result_for(out, r.sizes(), out.tensor->dtype(), r.device());
    copy_impl(res, r, false, {});
    return res;
  }
  Tensor d = diagonal_view(self, diagonal, 0, 1);
  Tensor res = result_for(out, d.sizes(), out.tensor ? out.tensor->dtype() : self.dtype(), self.device());
  copy_impl(res, d, false, {});
  return res;
}

Tensor diagflat_impl(const Tensor& self, int64_t offset, OutArg) {
  Tensor flat = reshape_impl(self, std::array<int64_t, 1>{-1}, {});
  return diag_embed_impl(contiguous_impl(flat, {}), offset, 0, 1, {});
}

}  // namespace tp
