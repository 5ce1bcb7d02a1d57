// The meta device in hand-written kernels: Note [Meta kernels].
#pragma once
#include "core/tensor_impl.h"

namespace tp {

// Note [Meta kernels]
// A meta tensor has sizes, strides, a dtype and a storage of no bytes. An op runs on meta
// tensors through its usual kernel: the kernel's checks and its computation of the outputs'
// shapes, dtypes and layouts are the ones the real kernel uses (written once), and it
// returns right after allocating its outputs when they are on the meta device, before
// touching any data. The yaml entry says `meta: true` for such a kernel (generated pointwise
// kernels always are: TensorIterator runs no loop for meta); an entry without it raises
// "<op>: no Meta kernel" (NotImplementedError) on meta tensors, as do the ops whose output
// shape depends on their values (tagged dynamic_output_shape: nonzero, unique, ...), whose
// meta call PyTorch refuses too. tests/python/test_meta.py runs the op database on meta
// against PyTorch's meta results (shapes, dtypes, strides, offsets, aliasing).
// Tensor::data<T>() raises on a meta tensor, so a kernel that would read one fails cleanly.

/// Whether `t` lives on the meta device (its kernel computes metadata only).
inline bool is_meta(const Tensor& t) { return t.device().type == DeviceType::Meta; }

}  // namespace tp
