"""linear_cross_entropy: cross_entropy(linear(input, linear_weight, linear_bias), target), either
as written (options=None) or over chunks of the batch so the whole (batch, num_classes) logits
never exist at once (options=LinearCrossEntropyOptions(...)).

Note [chunked linear_cross_entropy]: like PyTorch's chunked path, the chunked forward also
works out the gradients, chunk by chunk (d loss / d logits = softmax - one_hot, scaled by the
row's class weight), and keeps only the input-, weight- and bias-sized results; backward
scales them by the incoming gradient. So the scalar reductions backpropagate once (unless
allow_retain_graph) and have no double backward. reduction='none' instead recomputes the
chunks in backward, since each row's incoming gradient differs. Every policy computes in
acc_dtype (float32 for float16 / bfloat16 inputs under "auto"); acc_policy only chooses
among memory layouts in PyTorch and changes no result here beyond rounding.
"""
import math
import warnings

import tensorplay as tp
from tensorplay.nn.functional.activation import linear

_CONSUMED = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double "
             "backward are not supported.")


def _row_weights(target, num_classes, class_weight, ignore_index, acc_dtype):
    """Each row's loss weight: the class weight of its target, 0 where it is ignored."""
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= num_classes))
    if bool(bad.any()):
        t = int(target[bad][0])
        raise RuntimeError(f"index {t} is out of bounds for dimension 1 with size {num_classes}")
    safe = tp.where(valid, target, tp.zeros((), dtype=target.dtype, device=target.device))
    w = valid.to(acc_dtype)
    if class_weight is not None:
        w = w * class_weight.to(acc_dtype).index_select(0, safe)
    return safe, w


def _chunk_grads(x, weight, bias, safe, w_rows):
    """Loss per row and d(sum of losses)/d logits for one chunk."""
    logits = tp.matmul(x, weight.t())
    if bias is not None:
        logits = logits + bias
    lse = logits.logsumexp(1)
    picked = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
    loss = (lse - picked) * w_rows
    g = (logits - lse.unsqueeze(1)).exp() * w_rows.unsqueeze(1)
    g = g.scatter_add(1, safe.unsqueeze(1), -w_rows.unsqueeze(1))
    return loss, g


class _ChunkedReduced(tp.autograd.Function):
    """Scalar reductions: the loss and its gradients in one chunked forward."""

    @staticmethod
    def forward(ctx, input, weight, bias, target, class_weight, reduction, ignore_index, rows,
                acc, allow_retain, needs):
        C = weight.size(0)
        x, W = input.to(acc), weight.to(acc)
        b = bias.to(acc) if bias is not None else None
        safe, w_rows = _row_weights(target, C, class_weight, ignore_index, acc)
        total = tp.zeros((), dtype=acc, device=input.device)
        gx = tp.zeros(tuple(x.shape), dtype=acc, device=x.device) if needs[0] else None
        gW = tp.zeros(tuple(W.shape), dtype=acc, device=W.device) if needs[1] else None
        gb = tp.zeros((C,), dtype=acc, device=W.device) if needs[2] else None
        for s in range(0, x.size(0), rows):
            n = min(rows, x.size(0) - s)
            xc = x.narrow(0, s, n)
            loss, g = _chunk_grads(xc, W, b, safe.narrow(0, s, n), w_rows.narrow(0, s, n))
            total = total + loss.sum()
            if gx is not None:
                gx[s:s + n] = tp.matmul(g, W)
            if gW is not None:
                gW = gW + tp.matmul(g.t(), xc)
            if gb is not None:
                gb = gb + g.sum(0)
        scale = 1 / w_rows.sum() if reduction == "mean" else tp.ones((), dtype=acc, device=x.device)
        ctx.grads = [None if g is None else g * scale for g in (gx, gW, gb)]
        ctx.dtypes = (input.dtype, weight.dtype, None if bias is None else bias.dtype)
        ctx.allow_retain, ctx.consumed = allow_retain, False
        return (total * scale).to(input.dtype)

    @staticmethod
    def backward(ctx, grad):
        if ctx.consumed:
            raise RuntimeError(_CONSUMED)
        grads = [None if g is None else (g * grad.to(g.dtype)).to(dt)
                 for g, dt in zip(ctx.grads, ctx.dtypes)]
        if not ctx.allow_retain:
            ctx.consumed, ctx.grads = True, None
        return tuple(grads) + (None,) * 8


class _ChunkedRows(tp.autograd.Function):
    """reduction='none': per-row losses; backward recomputes each chunk's gradients."""

    @staticmethod
    def forward(ctx, input, weight, bias, target, class_weight, ignore_index, rows, acc):
        C = weight.size(0)
        x, W = input.to(acc), weight.to(acc)
        b = bias.to(acc) if bias is not None else None
        safe, w_rows = _row_weights(target, C, class_weight, ignore_index, acc)
        losses = [_chunk_grads(x.narrow(0, s, min(rows, x.size(0) - s)), W, b,
                               safe.narrow(0, s, min(rows, x.size(0) - s)),
                               w_rows.narrow(0, s, min(rows, x.size(0) - s)))[0]
                  for s in range(0, x.size(0), rows)]
        ctx.save_for_backward(input, weight, bias, safe, w_rows)
        ctx.rows, ctx.acc = rows, acc
        out = tp.cat(losses) if losses else tp.zeros((0,), dtype=acc, device=x.device)
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias, safe, w_rows = ctx.saved_tensors
        acc, rows = ctx.acc, ctx.rows
        x, W = input.to(acc), weight.to(acc)
        b = bias.to(acc) if bias is not None else None
        go = grad.to(acc)
        gx = tp.zeros(tuple(x.shape), dtype=acc, device=x.device)
        gW = tp.zeros(tuple(W.shape), dtype=acc, device=W.device)
        gb = tp.zeros((W.size(0),), dtype=acc, device=W.device)
        for s in range(0, x.size(0), rows):
            n = min(rows, x.size(0) - s)
            xc = x.narrow(0, s, n)
            _, g = _chunk_grads(xc, W, b, safe.narrow(0, s, n), w_rows.narrow(0, s, n) * go.narrow(0, s, n))
            gx[s:s + n] = tp.matmul(g, W)
            gW = gW + tp.matmul(g.t(), xc)
            gb = gb + g.sum(0)
        return (gx.to(input.dtype), gW.to(weight.dtype), None if bias is None else gb.to(bias.dtype),
                None, None, None, None, None)


def _check(input, linear_weight, target, linear_bias):
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    if input.size(-1) != linear_weight.size(-1):
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.size(-1)} and {linear_weight.size(-1)}, respectively")
    classes_shape = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != classes_shape:
        raise RuntimeError(f"expected linear_bias shape {classes_shape}, got {tuple(linear_bias.shape)}")
    if len(classes_shape) > 1 and input.dim() == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{input.size(-1)}), got unbatched input with shape {tuple(input.shape)}")
    return tuple(input.shape[:-1]) + classes_shape


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, weight=weight, ...).

    input is (in_features,) or (N, in_features); linear_weight (C, in_features), or
    (C, d_1, ..., d_K, in_features) for a K-dimensional loss over logits (N, C, d_1, ...).
    ignore_index None means -100 for class-index targets (and may not be given for
    probability targets). With options (LinearCrossEntropyOptions) the batch runs in chunks
    (Note [chunked linear_cross_entropy]); options that chunking cannot serve (K-dimensional
    weights, label smoothing, non-int64 targets, other reductions) fall back with a warning.

        >>> x, w = tp.randn(8, 16), tp.randn(1000, 16)
        >>> F.linear_cross_entropy(x, w, tp.randint(0, 1000, (8,))).shape
        tensorplay.Size([])
    """
    logits_shape = _check(input, linear_weight, target, linear_bias)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    out_features = tuple(linear_weight.shape[1:-1])
    if options is not None:
        chunkable = not out_features and reduction in ("mean", "sum", "none") and \
            label_smoothing == 0.0 and target.dtype == tp.int64
        if not chunkable:
            warnings.warn(
                f"linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                f"{{'mean','sum','none'}}, label_smoothing == 0, target.dtype == int64, "
                f"out_features == (). Got reduction={reduction!r}, label_smoothing="
                f"{label_smoothing}, target.dtype={target.dtype}, out_features={out_features}, "
                f"linear_bias.shape={None if linear_bias is None else tuple(linear_bias.shape)}.",
                stacklevel=2)
        else:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, options)
    if out_features:
        flat = math.prod(out_features) * linear_weight.size(0)
        linear_weight = linear_weight.reshape((flat, linear_weight.size(-1)))
        linear_bias = linear_bias.reshape((flat,)) if linear_bias is not None else None
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    from tensorplay.nn.functional.loss import cross_entropy
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options):
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    rows, _, acc = options._resolve(input.size(0), input.size(1), linear_weight.size(0),
                                    input.dtype, input.device)
    if reduction == "none":
        out = _ChunkedRows.apply(input, linear_weight, linear_bias, target, weight, ignore_index,
                                 rows, acc)
    else:
        grad_on = tp.is_grad_enabled()
        needs = (input.requires_grad and grad_on, linear_weight.requires_grad and grad_on,
                 linear_bias is not None and linear_bias.requires_grad and grad_on)
        out = _ChunkedReduced.apply(input, linear_weight, linear_bias, target, weight, reduction,
                                    ignore_index, rows, acc, options.allow_retain_graph, needs)
    return out.squeeze(0) if unbatched and reduction == "none" else out
