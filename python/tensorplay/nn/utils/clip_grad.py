"""clip_grad_norm_ and clip_grad_value_, with PyTorch's arithmetic (norm of the per-tensor
norms; scale clamped to 1 with a 1e-6 guard)."""
import math

import tensorplay as tp


def _grads(parameters):
    if isinstance(parameters, tp.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so their total norm is at most max_norm; returns the
    total norm (before clipping)."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return tp.tensor(0.0)
    with tp.no_grad():
        norms = [tp.linalg.vector_norm(g, norm_type) for g in grads]
        total_norm = tp.linalg.vector_norm(tp.stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(total_norm.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = tp.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with tp.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
