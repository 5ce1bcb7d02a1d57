"""Losses, CTC included."""
import math
import numbers
import warnings

import tensorplay as tp
from tensorplay import _C
from tensorplay.nn.functional._common import Tensor, _legacy_reduction, _op, _reduce, _scalar_name, _torch_size
from tensorplay.nn.functional.activation import log_softmax, logsigmoid
from tensorplay.nn.functional.distance import pairwise_distance


# ================================================================== losses
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("l1_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = tp.broadcast_tensors(input, target)
    loss = tp.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("mse_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=2)
    input, target = tp.broadcast_tensors(input, target)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if _C._autocast_armed():
        input, target = _C._autocast_args("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = tp.broadcast_tensors(input, target)
    if beta == 0.0:
        return _reduce(tp.abs(input - target), reduction)
    d = tp.abs(input - target)
    loss = tp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("huber_loss", input, target, weight)
    input, target = tp.broadcast_tensors(input, target)
    d = tp.abs(input - target)
    loss = tp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _C._autocast_armed():
        input, target = _C._autocast_args("soft_margin_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(tp.log1p(tp.exp(-target * input)), reduction)


def _check_nll_shapes(input, target):
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif input.size(0) != target.size(0):
        raise ValueError(f"Expected input batch_size ({input.size(0)}) to match target "
                         f"batch_size ({target.size(0)}).")


def _is_batched(t):
    """Whether ``t`` is a vmap BatchedTensor (its values are not readable; gather checks
    the bounds instead)."""
    from tensorplay.func._vmap import is_batchedtensor
    return is_batchedtensor(t)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] (per class weights; ignore_index skipped, and left out of the
    mean's denominator)."""
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("nll_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_nll_shapes(input, target)
    if target.dtype not in (tp.int64, tp.uint8, tp.int32, tp.int16, tp.int8):
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    c = input.size(1)
    valid = target != ignore_index
    safe = tp.where(valid, target, tp.zeros((), dtype=target.dtype)).to(tp.int64)
    # (no values on meta, fake or in vmap: a plain tensor skips those two tests)
    if safe.numel() and not safe.is_meta and (type(safe) is tp.Tensor or (
            not hasattr(safe, 'fake_mode') and not _is_batched(safe))) and (
            safe.min().item() < 0 or safe.max().item() >= c):
        bad = int(tp.where(valid & ((safe < 0) | (safe >= c)), target, tp.zeros((), dtype=target.dtype)).abs().max().item())
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = tp.ones((), dtype=input.dtype) if weight is None else weight.index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape))
    w = w * valid.to(input.dtype)
    loss = -picked * w
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.expand_as(loss).sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over dim 1 then the negative log-likelihood of the targets (class indices,
    or class probabilities of input's shape); label_smoothing mixes in the uniform target."""
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    c = input.size(class_dim)
    if not target.is_floating_point() and weight is None and label_smoothing <= 0 and \
            input.dim() in (1, 2) and _op("_cross_entropy_rows") is not None:
        logp = None
    else:
        logp = log_softmax(input, class_dim)
    if target.is_floating_point():  # probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected input batch_size and target batch_size to match when "
                               "target is probabilities")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        wshape = [1] * input.dim()
        wshape[class_dim] = c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c) if input.dim() > 1 else loss.sum()
        return _reduce(loss, reduction)
    fused = _op("_cross_entropy_rows")
    if fused is not None and weight is None and label_smoothing <= 0 and input.dim() in (1, 2) \
            and input.is_floating_point():
        # one fused pass: logsumexp(x_n) - x_n[t_n] (and softmax - onehot backward)
        x2, t1 = (input.unsqueeze(0), target.reshape((1,))) if input.dim() == 1 else (input, target)
        if t1.dim() != 1 or t1.size(0) != x2.size(0):
            _check_nll_shapes(input, target)
        rows = fused(x2, t1, ignore_index)[0]
        if reduction == "none":
            return rows.squeeze(0) if input.dim() == 1 else rows
        if reduction == "sum":
            return rows.sum()
        if reduction == "mean":
            return rows.sum() / (t1 != ignore_index).sum().to(rows.dtype)
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    valid = target != ignore_index
    wshape = [1] * input.dim()
    wshape[class_dim] = c
    smooth = -(logp * weight.reshape(wshape)).sum(class_dim) if weight is not None \
        else -logp.sum(class_dim)
    smooth = smooth * valid.to(smooth.dtype)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is not None:
            safe = tp.where(valid, target, tp.zeros((), dtype=target.dtype)).to(tp.int64)
            denom = (weight.index_select(0, safe.reshape(-1)) * valid.reshape(-1).to(weight.dtype)).sum()
        else:
            denom = valid.sum().to(smooth.dtype)
        ret = smooth.sum() / denom
    return (1 - label_smoothing) * nll + ret * (label_smoothing / c)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("binary_cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_torch_size(target.shape)}) that is different "
                         f"to the input size ({_torch_size(input.shape)}) is deprecated. Please "
                         "ensure they have the same size.")
    log_x = tp.clamp(tp.log(input), min=-100)
    log_1mx = tp.clamp(tp.log(1 - input), min=-100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    if _C._autocast_armed():
        input, target, weight, pos_weight = _C._autocast_args(
            "binary_cross_entropy_with_logits", input, target, weight, pos_weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_torch_size(target.shape)}) must be the same as input "
                         f"size ({_torch_size(input.shape)})")
    softplus_neg = tp.log1p(tp.exp(-tp.abs(input))) + tp.clamp(-input, min=0)
    if pos_weight is not None:
        log_weight = 1 + (pos_weight - 1) * target
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if _C._autocast_armed():
        input, target = _C._autocast_args("kl_div", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = tp.exp(target) * (target - input)
    else:
        loss = tp.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.size(0) if input.dim() != 0 else loss.sum()
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    if _C._autocast_armed():
        input, target = _C._autocast_args("poisson_nll_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = tp.exp(input) - target * input
    else:
        loss = input - target * tp.log(input + eps)
    if full:
        stirling = target * tp.log(target) - target + 0.5 * tp.log(2 * math.pi * target)
        loss = loss + tp.where(target > 1, stirling, tp.zeros((), dtype=loss.dtype))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, numbers.Real):
        var = tp.full((), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1:
            pass
        elif var.dim() != 0:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    var = var + (tp.clamp(var, min=eps) - var).detach()  # clamped, gradient as if not
    loss = 0.5 * (tp.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    if _C._autocast_armed():
        input1, input2, target = _C._autocast_args("margin_ranking_loss", input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(tp.clamp(-target * (input1 - input2) + margin, min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    if _C._autocast_armed():
        input, target = _C._autocast_args("hinge_embedding_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zero = tp.zeros((), dtype=input.dtype)
    margin_clamp = tp.clamp(margin - input, min=0)
    output_margin = tp.where(target != 1, margin_clamp, zero)
    output_self = tp.where(target != -1, input, zero)
    return _reduce(output_margin + output_self, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    if _C._autocast_armed():
        input1, input2, target = _C._autocast_args("cosine_embedding_loss", input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / tp.sqrt(mag1 * mag2)
    zero = tp.zeros((), dtype=cos.dtype)
    pos = tp.where(target == 1, 1 - cos, zero)
    neg = tp.where(target == -1, tp.clamp(cos - margin, min=0), zero)
    return _reduce(pos + neg, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.size(-1)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    if _C._autocast_armed():
        input, target, weight = _C._autocast_args("multi_margin_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target.reshape(-1)
    c = x.size(1)
    picked = x.gather(1, t.unsqueeze(1))
    z = tp.clamp(margin - picked + x, min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    mask = tp.ones_like(z).scatter_(1, t.unsqueeze(1), 0.0)
    loss = (z * mask).sum(1) / c
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _C._autocast_armed():
        input, target = _C._autocast_args("multilabel_margin_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target.unsqueeze(0) if unbatched else target
    n, c = tuple(x.shape)
    rows = []
    for i in range(n):
        labels = []
        for v in t[i].tolist():
            if v < 0:
                break
            labels.append(int(v))
        if not labels:
            rows.append(x[i].sum() * 0)
            continue
        is_target = tp.zeros((c,), dtype=tp.bool, device=x.device)
        idx = tp.tensor(labels, dtype=tp.int64, device=x.device)
        is_target[idx] = True
        xt = x[i].index_select(0, idx)
        margins = tp.clamp(1 - (xt.unsqueeze(1) - x[i].unsqueeze(0)), min=0)
        margins = margins * is_target.logical_not().to(x.dtype).unsqueeze(0)
        rows.append(margins.sum() / c)
    loss = tp.stack(rows)
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    if _C._autocast_armed():
        anchor, positive, negative = _C._autocast_args("triplet_margin_loss", anchor, positive,
                                                       negative)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = tp.minimum(d_neg, d_swap)
    return _reduce(tp.clamp(margin + d_pos - d_neg, min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = tp.minimum(d_neg, dist(positive, negative))
    return _reduce(tp.clamp(margin + d_pos - d_neg, min=0), reduction)


# ================================================================== CTC
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss: -log of the total probability of every
    alignment of each target, by the forward (alpha) recursion in log space, batched."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 and not isinstance(target_lengths, int) \
            else targets
    T, N, C = tuple(log_probs.shape)
    il = input_lengths.tolist() if isinstance(input_lengths, Tensor) else \
        ([input_lengths] if isinstance(input_lengths, int) else list(input_lengths))
    tl = target_lengths.tolist() if isinstance(target_lengths, Tensor) else \
        ([target_lengths] if isinstance(target_lengths, int) else list(target_lengths))
    if len(il) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(il)} and {N}")
    if len(tl) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tl)} and {N}")
    # per-sample target rows (2-D padded targets, or 1-D concatenated)
    if targets.dim() == 1:
        flat, rows, off = targets.tolist(), [], 0
        for n in tl:
            rows.append(flat[off:off + n])
            off += n
    else:
        rows = [targets[i, :tl[i]].tolist() for i in range(N)]
    for i in range(N):
        if il[i] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{il[i]} (while checking arguments for ctc_loss_cpu)")
    S = max(tl) if tl else 0
    L = 2 * S + 1
    ext = [[blank] * L for _ in range(N)]
    skip = [[False] * L for _ in range(N)]
    for i, row in enumerate(rows):
        for k, lab in enumerate(row):
            ext[i][2 * k + 1] = int(lab)
            if k > 0 and row[k] != row[k - 1]:
                skip[i][2 * k + 1] = True
    dev = log_probs.device
    ext_t = tp.tensor(ext, dtype=tp.int64, device=dev)
    skip_t = tp.tensor(skip, dtype=tp.bool, device=dev)
    valid_t = tp.tensor([[s <= 2 * tl[i] for s in range(L)] for i in range(N)], dtype=tp.bool,
                       device=dev)
    dtype = log_probs.dtype
    neg_inf = tp.full((), float("-inf"), dtype=dtype)
    tiny = tp.finfo(dtype).tiny

    def lse(*xs):  # log-sum-exp that stays -inf (with zero gradient) where all terms are
        st = tp.stack(xs)
        m = st.amax(0).detach()
        dead = tp.isinf(m)
        m = tp.where(dead, tp.zeros((), dtype=dtype), m)
        val = m + tp.log(tp.clamp(tp.exp(st - m).sum(0), min=tiny))
        return tp.where(dead, neg_inf, val)

    def shift(a, k):
        return tp.cat([tp.full((N, k), float("-inf"), dtype=dtype, device=dev), a[:, :L - k]], 1)

    lp0 = log_probs[0].gather(1, ext_t)
    init = tp.full((N, L), float("-inf"), dtype=dtype, device=dev)
    first = tp.zeros((N, L), dtype=tp.bool, device=dev)
    first[:, 0] = True
    if L > 1:
        first[:, 1] = tp.tensor([n > 0 for n in tl], dtype=tp.bool, device=dev)
    alpha = tp.where(first & valid_t, lp0, init)
    lens = tp.tensor(il, dtype=tp.int64, device=dev).unsqueeze(1)
    for t in range(1, T):
        a2 = shift(alpha, 1) if L > 1 else tp.full((N, L), float("-inf"), dtype=dtype, device=dev)
        a3 = tp.where(skip_t, shift(alpha, 2), neg_inf) if L > 2 else \
            tp.full((N, L), float("-inf"), dtype=dtype, device=dev)
        new = lse(alpha, a2, a3) + log_probs[t].gather(1, ext_t)
        new = tp.where(valid_t, new, neg_inf)
        alpha = tp.where(lens > t, new, alpha)
    end = tp.tensor([2 * n for n in tl], dtype=tp.int64, device=dev).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = alpha.gather(1, (end - 1).clamp(min=0)).squeeze(1)
    before = tp.where(end.squeeze(1) > 0, before, neg_inf)
    loss = -lse(last, before)
    # PyTorch's CTC backward returns exp(log_probs) - posterior (the gradient with respect to
    # the logits behind a log_softmax) for t < input_length; add the exp term, value-neutral
    steps = tp.arange(T, device=dev).unsqueeze(1) < tp.tensor(il, dtype=tp.int64, device=dev).unsqueeze(0)
    w = (tp.exp(log_probs.detach()) * steps.unsqueeze(2).to(dtype))
    term = (log_probs * w).sum((0, 2))
    loss = loss + (term - term.detach())
    if zero_infinity:
        loss = tp.where(tp.isinf(loss), tp.zeros((), dtype=dtype), loss)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        tlen = tp.tensor(tl, dtype=dtype).clamp(min=1)
        return (loss / tlen).mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")
