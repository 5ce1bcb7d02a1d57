"""Adafactor (Shazeer & Stern, 2018, in PyTorch's variant): a second-moment estimate kept as
row and column means for matrices, a relative step size, and update clipping."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _eval_closure, _gather_group, _get_scalar_dtype,
                                        _to_scalar)

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Adafactor: for a parameter of two or more dimensions the squared-gradient average is
    factored into per-row and per-column averages (memory O(n + m) instead of O(nm));
    ``beta2_t = 1 - t**beta2_decay``; the step is ``max(eps2, RMS(p)) * min(lr, 1/sqrt(t))``
    and an update whose RMS exceeds ``d`` is scaled down to it.

    >>> opt = tp.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    _group_defaults = {"foreach": None, "maximize": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                 *, foreach=None, maximize=False):
        if isinstance(lr, tp.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        checks = ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                  (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                  (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
                  (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                  (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                  (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}"))
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.tensor(0.0, dtype=_get_scalar_dtype())
        g = p.grad
        if g.dim() > 1:
            state["row_var"] = g.new_zeros(tuple(g.shape[:-1]) + (1,))
            state["col_var"] = g.new_zeros(tuple(g.shape[:-2]) + (1, g.shape[-1]))
        else:
            state["variance"] = tp.zeros_like(g, memory_format=tp.preserve_format)

    @tp.no_grad()
    def step(self, closure=None):
        """Performs one Adafactor step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (steps,) = _gather_group(self, group, ("step",), self._init_state)
            states = [self.state[p] for p in params]
            eps1, eps2 = group["eps"]
            adafactor(params, grads, [s.get("row_var") for s in states],
                      [s.get("col_var") for s in states], [s.get("variance") for s in states], steps,
                      d=group["d"], lr=group["lr"], beta2_decay=group["beta2_decay"],
                      weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                      foreach=group["foreach"], maximize=group["maximize"])
        return loss


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, foreach=None, grad_scale=None,
              found_inf=None, has_complex=False, *, d, lr, beta2_decay, weight_decay, eps1, eps2, maximize):
    """The Adafactor update in place (functional form of :class:`Adafactor`)."""
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")
    lr = _to_scalar(lr)
    for param, grad, row_var, col_var, variance, step_t in zip(params, grads, row_vars, col_vars,
                                                                variances, state_steps):
        if grad.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if maximize:
            grad = -grad
        tiny = tp.finfo(param.dtype).eps if eps1 is None else eps1
        step_t += 1
        t = step_t.item()
        weight = t ** beta2_decay  # 1 - beta2_t: how much of this step's square enters
        step_size = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * min(lr, t ** -0.5)
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var.lerp_(grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1], weight)
            col_var.lerp_(grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2], weight)
            # rank-one reconstruction: outer(row, col) / mean(row)
            estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=tiny)
        else:
            variance.lerp_(grad * grad, weight)
            estimate = variance.clone()
        update = estimate.clamp(min=tiny * tiny).rsqrt() * grad
        clip = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
        param.add_(update, alpha=-step_size / clip)
