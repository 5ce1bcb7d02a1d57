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


# ================================================================== multi-head attention
def _canonical_mask(mask, name, other_type, other_name, target_dtype):
    """A bool mask as the additive float mask (-inf where True); float masks pass through."""
    if mask is None:
        return None
    if mask.dtype == tp.bool:
        return tp.zeros(tuple(mask.shape), dtype=target_dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other_type is not None and other_type != mask.dtype:
        import warnings
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      f"type for both instead.", stacklevel=3)
    return mask


def _mha_batched(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (3-D) or a single sequence (2-D), checking that every
    input agrees."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D "
                                 f"but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D "
                                 f"or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D "
                                 f"but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 1-D but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.size(0), key.size(0))
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projections(query, key, value, embed_dim, in_proj_weight, in_proj_bias,
                    use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight):
    """q, k, v: the inputs through the packed in_proj_weight (rows q, k, v) or the separate
    q/k/v_proj_weight, in_proj_bias split the same way."""
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        for name, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                        ("v_proj_weight", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    for name, w, x in (("query", w_q, query), ("key", w_k, key), ("value", w_v, value)):
        if w.dim() != 2 or w.size(0) != embed_dim or w.size(1) != x.size(-1):
            raise AssertionError(f"expecting {name} weights shape of {(embed_dim, x.size(-1))}, but "
                                 f"got {tuple(w.shape)}")
    from tensorplay.nn.functional.activation import linear
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _pad_last(mask, name):
    if mask is None:
        return None
    from tensorplay.nn.functional.spatial import pad
    return pad(mask, (0, 1))


def _static(t, name, bsz, num_heads, head_dim):
    if t.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {t.size(0)}")
    if t.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.size(2)}")
    return t


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention of query (L, N, E) over key (S, N, E_k) / value (S, N, E_v), or
    of unbatched (L, E) / (S, E_k) / (S, E_v), with explicit weights (nn.MultiheadAttention's
    forward). Returns (output (L, N, E), weights (N, L, S) averaged over heads, per head
    (N, H, L, S) when average_attn_weights is False, or None without need_weights).

    As PyTorch: attn_mask is 2-D (L, S) or 3-D (N * H, L, S), bool (True = masked) or
    additive float; key_padding_mask (N, S) joins it; bias_k / bias_v append one learned key
    and value, add_zero_attn one zero key and value; static_k / static_v (N * H, S, E / H)
    replace the projected keys and values. Without need_weights the heads run through
    scaled_dot_product_attention."""
    batched = _mha_batched(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = tuple(query.shape)
    src_len = key.size(0)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to create "
                           "this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # Note [is_causal hint]: attn_mask is then only a hint; SDPA builds the causal mask
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        if key_padding_mask is not None:
            is_causal = False  # the padding mask must be applied, so no causal shortcut
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"{embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    q, k, v = _in_projections(query, key, value, embed_dim, in_proj_weight, in_proj_bias,
                              use_separate_proj_weight, q_proj_weight, k_proj_weight,
                              v_proj_weight)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tp.Size(attn_mask.shape)}, "
                                   f"but should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tp.Size(attn_mask.shape)}, "
                                   f"but should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = tp.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = tp.cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = _pad_last(attn_mask, "attn_mask")
        key_padding_mask = _pad_last(key_padding_mask, "key_padding_mask")
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    q = q.reshape((tgt_len, bsz * num_heads, head_dim)).transpose(0, 1)
    k = _static(static_k, "static_k", bsz, num_heads, head_dim) if static_k is not None else \
        k.reshape((k.size(0), bsz * num_heads, head_dim)).transpose(0, 1)
    v = _static(static_v, "static_v", bsz, num_heads, head_dim) if static_v is not None else \
        v.reshape((v.size(0), bsz * num_heads, head_dim)).transpose(0, 1)
    if add_zero_attn:
        k = tp.cat([k, tp.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = tp.cat([v, tp.zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype, device=v.device)], 1)
        attn_mask = _pad_last(attn_mask, "attn_mask")
        key_padding_mask = _pad_last(key_padding_mask, "key_padding_mask")
    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape((bsz, 1, 1, src_len)).expand(bsz, num_heads, 1, src_len) \
            .reshape((bsz * num_heads, 1, src_len))
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    from tensorplay.nn.functional.activation import linear
    if need_weights:
        scores = tp.bmm(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = tp.bmm(weights, v).transpose(0, 1).reshape((tgt_len * bsz, embed_dim))
        out = linear(out, out_proj_weight, out_proj_bias).reshape((tgt_len, bsz, embed_dim))
        weights = weights.reshape((bsz, num_heads, tgt_len, src_len))
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 and attn_mask.dim() == 3 else \
            attn_mask.reshape((bsz, num_heads, -1, src_len))
    out = scaled_dot_product_attention(
        q.reshape((bsz, num_heads, tgt_len, head_dim)), k.reshape((bsz, num_heads, src_len, head_dim)),
        v.reshape((bsz, num_heads, src_len, head_dim)), attn_mask, dropout_p, bool(is_causal))
    out = out.permute(2, 0, 1, 3).reshape((bsz * tgt_len, embed_dim))
    out = linear(out, out_proj_weight, out_proj_bias).reshape((tgt_len, bsz, embed_dim))
    return (out if batched else out.squeeze(1)), None
