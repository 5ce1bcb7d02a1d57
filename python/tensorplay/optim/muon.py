"""Muon: momentum SGD for 2-D parameters whose update is orthogonalised by a Newton-Schulz
iteration (in bfloat16, as PyTorch's), with a shape-dependent learning-rate scale."""
import math

import tensorplay as tp
from tensorplay.optim.optimizer import Optimizer, _eval_closure, _gather_group, _to_scalar

__all__ = ["Muon", "muon"]

# the quintic Newton-Schulz coefficients and defaults of PyTorch's Muon
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5
_EPS = 1e-7


def _orthogonalise(grad, ns_coefficients, ns_steps, eps):
    """Approximately U V^T of grad = U S V^T: ``ns_steps`` quintic Newton-Schulz steps
    X <- a X + (b G + c G^2) X, G = X X^T, on the wide orientation of ``grad``."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.bfloat16()
    if tall:
        x = x.t()
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.t()
        poly = tp.addmm(gram, gram, gram, beta=b, alpha=c)
        x = tp.addmm(x, poly, x, beta=a)
    return x.t() if tall else x


def _lr_scale(adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return 1.0


class Muon(Optimizer):
    """Muon: ``buf = lerp(buf, g, 1 - momentum)``; the update (Nesterov: ``lerp(g, buf,
    momentum)``) is orthogonalised, then ``p *= 1 - lr * weight_decay`` and
    ``p -= lr * scale * update`` (``scale`` from ``adjust_lr_fn``: 'original' sqrt(max(1,
    rows/cols)), 'match_rms_adamw' 0.2 sqrt(max(rows, cols))). Parameters must be 2-D.

    >>> opt = tp.optim.Muon([layer.weight], lr=2e-2)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS_COEFFICIENTS, eps=_EPS, ns_steps=_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, tp.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a parameter "
                                     f"with size: {p.size()}")

    @staticmethod
    def _init_state(state, p, group):
        state["momentum_buffer"] = tp.zeros_like(p.grad, memory_format=tp.preserve_format)

    @tp.no_grad()
    def step(self, closure=None):
        """Performs one Muon step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (bufs,) = _gather_group(self, group, ("momentum_buffer",), self._init_state)
            muon(params, grads, bufs, lr=group["lr"], weight_decay=group["weight_decay"],
                 momentum=group["momentum"], nesterov=group["nesterov"],
                 ns_coefficients=group["ns_coefficients"], ns_steps=group["ns_steps"], eps=group["eps"],
                 adjust_lr_fn=group["adjust_lr_fn"])
        return loss


def muon(params, grads, muon_momentum_bufs, *, foreach=None, lr, weight_decay, momentum, nesterov,
         ns_coefficients, ns_steps, eps, adjust_lr_fn, has_complex=False):
    """The Muon update in place (functional form of :class:`Muon`)."""
    if foreach:
        raise RuntimeError("Foreach is not supported for Muon yet")
    lr = _to_scalar(lr)
    for param, grad, buf in zip(params, grads, muon_momentum_bufs):
        if grad.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if nesterov else buf
        update = _orthogonalise(update, ns_coefficients, ns_steps, eps)
        param.mul_(1 - lr * weight_decay)
        param.add_(update, alpha=-lr * _lr_scale(adjust_lr_fn, param.shape))
