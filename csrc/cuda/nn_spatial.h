// CUDA kernels of the spatial nn ops: pooling (nn_pool.cpp), reflection/replication padding
// and max_unpool (nn_pad.cpp), im2col/col2im and vol2col/col2vol (nn_conv.cpp), grid sampling
// (nn_grid_sample.cpp), embedding bags (nn_embedding.cpp). Checks, shapes and host-side index
// work stay in the op files.
#pragma once
#include <optional>
#include <vector>

#include "core/tensor_impl.h"
#include "ops/grid_sample.h"
#include "ops/vol_cols.h"

namespace tp::cuda {

/// The per-dim windows of a pooling (Note [Pooling windows]), spatial dims padded in front to
/// three: output o of dim k reads input positions begin[k][o] + j * step[k], j < count[k][o];
/// pad_count[k][o] is its divisor factor for average pooling. Pointers are host arrays of
/// out[k] entries.
struct PoolDims {
  int64_t in[3], out[3], step[3];
  const int64_t* begin[3];
  const int64_t* count[3];
  const double* pad_count[3];
};

/// How a pooling's planes lie in memory: `planes` (batch * channels) row-major planes, or
/// with `channels_last` (N, spatial..., C) with `channels` interleaved planes per sample.
struct PoolLayout {
  int64_t planes = 0, channels = 1;
  bool channels_last = false;
};

/// y, idx = the maximum of each window of x and its flat spatial index (a NaN wins, a later
/// NaN takes the index). x, y (its dtype, one of the pooling compute dtypes: float32,
/// float64, the integer types) and idx (int64) are contiguous in `layout`.
void max_pool_forward(const PoolDims& g, const PoolLayout& layout, const Tensor& x, const Tensor& y,
                      const Tensor& idx);

/// y = the mean of each window of x (divided by `divisor`, else by the window's pad_count
/// product; integer dtypes divide as integers).
void avg_pool_forward(const PoolDims& g, const PoolLayout& layout, const Tensor& x, const Tensor& y,
                      std::optional<int64_t> divisor);

/// gx = average pooling's gradient from gy: per input element, the sum over the windows
/// holding it (in output order, as the CPU kernel adds) of gy / divisor. Deterministic.
void avg_pool_backward(const PoolDims& g, const PoolLayout& layout, const Tensor& gy, const Tensor& gx,
                       std::optional<int64_t> divisor);

/// acc (contiguous in `layout`, `plane_in` elements per plane; float32, float64 or int64) =
/// gy added at the flat spatial indices idx (gy, idx: contiguous in `layout`, same sizes).
/// Atomic adds: float sums in no fixed order. Indices outside the plane are skipped.
void max_pool_backward(const PoolLayout& layout, int64_t plane_in, const Tensor& gy, const Tensor& idx,
                       const Tensor& acc);

/// y[p, a, b, c] = x[p, map[0][a], map[1][b], map[2][c]] over contiguous planes of in[0..2]
/// (x) and the maps' sizes (y) elements; any dtype (moved as bits).
void pad_forward(const Tensor& x, const Tensor& y, const int64_t in[3],
                 const std::vector<int64_t> map[3]);

/// gx (float32 or float64, contiguous) = per element the sum of the gy elements whose map
/// entries point at it, in output order (deterministic, matching the CPU's order).
void pad_backward(const Tensor& gy, const Tensor& gx, const int64_t in[3],
                  const std::vector<int64_t> map[3]);

/// y (contiguous, zeroed) [p * plane_out + idx[p * plane_in + j]] = x[p * plane_in + j];
/// x and idx contiguous; indices were checked to lie in [0, plane_out).
void max_unpool(const Tensor& x, const Tensor& idx, const Tensor& y, int64_t plane_in, int64_t plane_out);

/// The sliding-block geometry of im2col/col2im over a (n, c, h, w) image.
struct BlockGeom {
  int64_t n, c, h, w, out_h, out_w, kh, kw, sh, sw, ph, pw, dh, dw;
};

/// col (n, c * kh * kw, out_h * out_w) = the sliding blocks of img (n, c, h, w); padding
/// reads as zero. Both contiguous; float32, float64 or bool.
void im2col(const BlockGeom& g, const Tensor& img, const Tensor& col);

/// img = im2col's adjoint of col: per pixel the sum of the column entries that read it (in
/// kernel-position order, as the CPU). Bool sums are ORs. Deterministic.
void col2im(const BlockGeom& g, const Tensor& col, const Tensor& img);

/// col (g.c * K, L) = vol2col of vol (g.c volumes), one thread per column entry
/// (conv::vol2col_entry). Both contiguous, float32 or float64.
void vol2col(const conv::VolGeom& g, const Tensor& vol, const Tensor& col);

/// vol (g.c volumes) = col2vol of col (g.c * K, L), one thread per voxel gathering its
/// column entries in kernel-position order (conv::col2vol_voxel): deterministic.
void col2vol(const conv::VolGeom& g, const Tensor& col, const Tensor& vol);

/// grid_sampler forward: y (N, C, out...) samples x (N, C, in...) at grid (N, out..., nsp)
/// by the rules of grid_sample.h; all contiguous, float32 or float64. One thread per point.
void grid_sample_forward(const sampling::Geometry& g, int64_t interp, int64_t padding, bool align, const Tensor& x,
                         const Tensor& grid, const Tensor& y);

/// grid_sampler backward: adds into gx (zeroed; when defined) the input gradient (atomic
/// adds: no fixed order) and writes the grid gradient into gg (when defined).
void grid_sample_backward(const sampling::Geometry& g, int64_t interp, int64_t padding, bool align, const Tensor& gy,
                          const Tensor& x, const Tensor& grid, const Tensor& gx, const Tensor& gg);

/// Embedding bags (Note [Embedding bags]), one thread per (bag, column): out (nb, D) from the
/// rows of weight (contiguous; float32/64, float16/bfloat16 summed in float32) that index
/// (int64, device) picks in bag b = [begin[b], begin[b + 1]) (begin: nb + 1 int64 on the
/// device), skipping `pad`, scaled by psw (when defined), in index order as the CPU. For
/// mode mean/max bag_size[b] (int64) gets the bag's count; for max max_idx (nb, D) the winners.
void embedding_bag_forward(const Tensor& weight, const Tensor& index, const Tensor& begin, const Tensor& psw,
                           int64_t mode, int64_t pad, const Tensor& out, const Tensor& bag_size,
                           const Tensor& max_idx);

/// The weight gradient of bag modes sum/mean, grouped by weight row on the host: row
/// rows[u] (u < rows.numel()) of gw (zeroed, (num_weights, D), float32/float64) = the sum over
/// j in [seg[u], seg[u + 1]) of grad[bag_of[j]] * scale[j] (scale in gw's dtype), in j order:
/// deterministic, the CPU's order. rows, seg, bag_of: int64 on the device.
void embedding_bag_backward_rows(const Tensor& grad, const Tensor& rows, const Tensor& seg, const Tensor& bag_of,
                                 const Tensor& scale, const Tensor& gw);

/// The weight gradient of mode max: gw[winners[b, d], d] += grad[b, d] for the bags with
/// bag_size[b] > 0 (int64, device); atomic adds into gw (float32/float64, zeroed). Winners
/// outside gw's rows are skipped.
void embedding_bag_backward_max(const Tensor& grad, const Tensor& bag_size, const Tensor& winners, const Tensor& gw);

/// per_sample_weights' gradient: out[i] = grad[bag_of[i]] . weight[index[i]] (0 for
/// padding or bag_of[i] < 0), one thread per index; grad and weight contiguous, weight's dtype.
void embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& index,
                                               const Tensor& bag_of, int64_t pad, const Tensor& out);

/// embedding_renorm_ on the rows `rows` (distinct, in range; int64 on the device) of self
/// (2-D, any strides): one thread per row, the norm summed in double in column order.
void embedding_renorm(const Tensor& self, const Tensor& rows, double max_norm, double norm_type);

}  // namespace tp::cuda
