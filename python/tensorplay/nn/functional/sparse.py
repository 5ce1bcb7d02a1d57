"""one_hot, embedding and embedding_bag."""
import warnings

import tensorplay as tp


# ================================================================== embeddings
def one_hot(tensor, num_classes=-1):
    if tensor.dtype != tp.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if (tensor.is_meta or hasattr(tensor, 'fake_mode')) and num_classes != -1:
        # no values to check (meta, or fake while tracing): PyTorch's meta form, an equality with arange
        return (tensor.unsqueeze(-1) == tp.arange(num_classes, device=tensor.device)).to(tp.int64)
    if tensor.numel() > 0:
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(tensor.max().item()) + 1
        elif tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    out = tp.zeros(tuple(tensor.shape) + (num_classes,), dtype=tp.int64, device=tensor.device)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with tp.no_grad():
        tp.embedding_renorm_(weight, input, max_norm, norm_type)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the indices in `input` (no gradient to padding_idx's row)."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if input.dtype not in (tp.int64, tp.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           "(while checking arguments for embedding)")
    if max_norm is not None:
        _embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    w = weight
    if padding_idx is not None and weight.requires_grad:
        keep = tp.ones((weight.size(0), 1), dtype=weight.dtype, device=weight.device)
        keep[padding_idx] = 0
        w = weight * keep + weight.detach() * (1 - keep)  # same values, no grad to the pad row
    if scale_grad_by_freq and weight.requires_grad:
        flat = input.reshape(-1)
        counts = tp.bincount(flat, minlength=weight.size(0)).to(weight.dtype).clamp(min=1)
        scale = 1.0 / counts.unsqueeze(1)
        w = w * scale + (w * (1 - scale)).detach()  # same values; row gradients / frequency
    return w.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.size(1),))


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, averages or takes the maximum of the rows of `weight` each bag of indices picks:
    input 2-D (B, N) holds B bags of N indices; input 1-D holds bags one after the other, bag b
    starting at offsets[b]. per_sample_weights (mode 'sum') scales each row; padding_idx's rows
    are left out (an empty bag gives zeros).

    >>> F.embedding_bag(tp.tensor([1, 2, 4, 5, 4, 3]), weight, tp.tensor([0, 4]), mode="sum")
    """
    if weight.dtype == tp.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
                         f"then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                             "of fixed length sequences. However, found offsets of type "
                             f"{type(offsets)}")
        offsets = tp.arange(0, input.numel(), input.size(1), dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    return tp.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode], sparse,
                            per_sample_weights, include_last_offset, padding_idx)[0]
