"""one_hot, embedding and embedding_bag."""
import tensorplay as tp


# ================================================================== embeddings
def one_hot(tensor, num_classes=-1):
    if tensor.dtype != tp.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() > 0:
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(tensor.max().item()) + 1
        elif tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    out = tp.zeros(tuple(tensor.shape) + (num_classes,), dtype=tp.int64)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with tp.no_grad():
        idx = tp.unique(input.reshape(-1))
        rows = weight.index_select(0, idx)
        norms = tp.linalg.vector_norm(rows, norm_type, dim=1)
        scale = tp.where(norms > max_norm, max_norm / (norms + 1e-7), tp.ones_like(norms))
        weight.index_copy_(0, idx, rows * scale.unsqueeze(1))


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
        keep = tp.ones((weight.size(0), 1), dtype=weight.dtype)
        keep[padding_idx] = 0
        w = weight * keep + weight.detach() * (1 - keep)  # same values, no grad to the pad row
    if scale_grad_by_freq and weight.requires_grad:
        flat = input.reshape(-1)
        counts = tp.bincount(flat, minlength=weight.size(0)).to(weight.dtype).clamp(min=1)
        scale = 1.0 / counts.unsqueeze(1)
        w = w * scale + (w * (1 - scale)).detach()  # same values; row gradients / frequency
    return w.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.size(1),))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences.")
        n, length = tuple(input.shape)
        offsets = tp.arange(0, n * length, length)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    rows = embedding(input, weight, padding_idx, max_norm, norm_type)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    offs = [int(o) for o in offsets.tolist()]
    if include_last_offset:
        bounds = list(zip(offs[:-1], offs[1:]))
    else:
        bounds = list(zip(offs, offs[1:] + [input.numel()]))
    keep = None
    if padding_idx is not None:
        pad = padding_idx if padding_idx >= 0 else weight.size(0) + padding_idx
        keep = (input != pad)
    outs = []
    for a, b in bounds:
        seg = rows[a:b]
        if keep is not None:
            k = keep[a:b]
            seg = seg[k]
        if seg.shape[0] == 0:
            outs.append(tp.zeros((weight.size(1),), dtype=weight.dtype))
        elif mode == "sum":
            outs.append(seg.sum(0))
        elif mode == "mean":
            outs.append(seg.mean(0))
        elif mode == "max":
            outs.append(seg.amax(0))
        else:
            raise ValueError("mode has to be one of sum, mean or max")
    return tp.stack(outs) if outs else tp.zeros((0, weight.size(1)), dtype=weight.dtype)
