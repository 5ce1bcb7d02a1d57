"""scaled_dot_product_attention: the fused kernel for CUDA float16 / bfloat16, else the math path."""
import math

import tensorplay as tp
from tensorplay.nn.functional._common import _op
from tensorplay.nn.functional.activation import dropout, softmax


# ================================================================== attention
def _takes_fused(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether _flash_attention_forward serves this call (CUDA, float16 / bfloat16, 3-D or
    4-D with matching batch and heads, head dim 64 or 128, no mask, dropout or GQA, and no
    gradient recorded while deterministic algorithms are asked for)."""
    if attn_mask is not None or dropout_p > 0.0 or enable_gqa or _op("_flash_attention_forward") is None:
        return False
    if not tp.backends.cuda.flash_sdp_enabled():
        return False
    if not (query.is_cuda and key.is_cuda and value.is_cuda and query.device == key.device == value.device):
        return False
    if query.dtype not in (tp.float16, tp.bfloat16) or key.dtype != query.dtype or value.dtype != query.dtype:
        return False
    if not query.dim() == key.dim() == value.dim() or query.dim() not in (3, 4):
        return False
    if tp.are_deterministic_algorithms_enabled() and tp.is_grad_enabled() and \
            (query.requires_grad or key.requires_grad or value.requires_grad):
        return False  # the fused backward adds dQ with atomics (Note [Flash attention])
    d = query.size(-1)
    return (d in (64, 128) and key.size(-1) == d and value.size(-1) == d
            and tuple(query.shape[:-2]) == tuple(key.shape[:-2]) == tuple(value.shape[:-2])
            and key.size(-2) == value.size(-2))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims, as PyTorch's.

    CUDA float16 / bfloat16 inputs with head dim 64 or 128 and no attn_mask, dropout or
    GQA go through the fused kernel (_flash_attention_forward), which never forms the
    (L, S) scores; everything else takes the math path.

    Example::

        >>> q = k = v = tp.randn(2, 4, 16, 8)
        >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
        tensorplay.Size([2, 4, 16, 8])
    """
    for pos, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
        if not isinstance(t, tp.Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' (position {pos + 1}) must be "
                            f"Tensor, not {type(t).__name__}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got "
                           f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if _takes_fused(query, key, value, attn_mask, dropout_p, enable_gqa):
        if query.dim() == 3:
            out = tp._C._flash_attention_forward(query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0),
                                                 bool(is_causal), float(scale_factor))[0]
            return out.squeeze(0)
        return tp._C._flash_attention_forward(query, key, value, bool(is_causal), float(scale_factor))[0]
    if enable_gqa:
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    scores = tp.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        causal = tp.ones((L, S), dtype=tp.bool, device=query.device).tril()
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == tp.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return tp.matmul(weights, value)
