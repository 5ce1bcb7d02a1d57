"""scaled_dot_product_attention: the fused kernel for CUDA float16 / bfloat16, else the math path."""
import math

import tensorplay as tp
from tensorplay.nn.functional._common import _op
from tensorplay.nn.functional.activation import dropout, softmax


def _c_name(dtype):
    """A dtype as PyTorch's messages print it (c10's C++ type names: float, double, c10::Half)."""
    return {tp.float32: 'float', tp.float64: 'double', tp.float16: 'c10::Half', tp.bfloat16: 'c10::BFloat16',
            tp.int64: 'long int', tp.int32: 'int', tp.int16: 'short int', tp.int8: 'signed char',
            tp.uint8: 'unsigned char', tp.bool: 'bool'}.get(dtype, str(dtype))


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
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_c_name(query.dtype)} key.dtype: {_c_name(key.dtype)} and value.dtype: "
                           f"{_c_name(value.dtype)} instead.")
    if not query.device == key.device == value.device:
        raise RuntimeError(f"Expected query, key, and value to have the same device type, but got query.device: "
                           f"{query.device} key.device: {key.device} and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got "
                           f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if attn_mask is not None and attn_mask.dtype not in (tp.bool, tp.float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_c_name(attn_mask.dtype)} and  query.dtype: {_c_name(query.dtype)} "
                           f"instead.")
    if value.numel() == 0:  # PyTorch's answer before any other check: zeros of (..., L, Ev)
        return tp.zeros(tuple(query.shape[:-1]) + (value.size(-1),), dtype=query.dtype, device=query.device)
    if attn_mask is not None and attn_mask.dim() == 0 and dropout_p == 0.0 and query.dim() == key.dim() == value.dim() == 4 \
            and query.size(0) == key.size(0) == value.size(0) and query.size(1) == key.size(1) == value.size(1):
        # PyTorch's CPU backend choice reads the mask's size(-2) for these shapes
        raise IndexError("Dimension specified as -2 but tensor has no dimensions")
    L, S = query.size(-2), key.size(-2)
    if scale is not None:
        scale_factor = scale
    else:  # 1 / sqrt(E), infinite for E = 0 (C++ arithmetic, as PyTorch's)
        scale_factor = 1 / math.sqrt(query.size(-1)) if query.size(-1) else math.inf
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
    if attn_mask is not None:  # PyTorch's _safe_softmax: a row the mask hides entirely gives 0, not NaN
        weights = weights.masked_fill((scores == float("-inf")).all(-1, keepdim=True), 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return tp.matmul(weights, value)
