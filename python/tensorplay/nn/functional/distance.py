"""normalize, cosine_similarity, pairwise_distance, pdist."""
import tensorplay as tp
from tensorplay import _C


# ================================================================== distances
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = tp.linalg.vector_norm(input, p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    if _C._autocast_armed():
        x1, x2 = _C._autocast_args("cosine_similarity", x1, x2)
    x1, x2 = tp.broadcast_tensors(x1, x2)
    # PyTorch normalises each input by its clamped norm, then takes the dot product
    n1 = tp.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clamp(min=eps)
    n2 = tp.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.dim(), x2.dim())
    return tp.linalg.vector_norm(x1 - x2 + eps, p, dim=d - 1 if d > 0 else None, keepdim=keepdim)


def pdist(input, p=2):
    if _C._autocast_armed():
        (input,) = _C._autocast_args("pdist", input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.size(0)
    if n < 2:
        return tp.empty((0,), dtype=input.dtype, device=input.device)
    i, j = tp.triu_indices(n, n, 1, device=input.device)
    return tp.linalg.vector_norm(input[i] - input[j], p, dim=1)
