"""Adamax: Adam with the infinity norm of past gradients in place of the second moment."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _check_moment_args,
                                        _eval_closure, _get_scalar_dtype, _get_value, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax: ``exp_inf = max(beta2 * exp_inf, |g| + eps)``,
    ``p -= lr / (1 - beta1^t) * exp_avg / exp_inf``.

    >>> opt = tp.optim.Adamax(model.parameters(), lr=2e-3)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_moment_args(eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.tensor(0.0, dtype=_get_scalar_dtype())
        state["exp_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
        state["exp_inf"] = tp.zeros_like(p, memory_format=tp.preserve_format)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one Adamax step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (exp_avgs, exp_infs, state_steps) = _gather_group(
                self, group, ("exp_avg", "exp_inf", "step"), self._init_state)
            beta1, beta2 = group["betas"]
            adamax(params, grads, exp_avgs, exp_infs, state_steps, eps=group["eps"], beta1=beta1, beta2=beta2,
                   lr=group["lr"], weight_decay=group["weight_decay"], foreach=group["foreach"],
                   maximize=group["maximize"], differentiable=group["differentiable"],
                   capturable=group["capturable"])
        return loss


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, *, eps, beta1, beta2, lr, weight_decay):
    """The Adamax update in place (functional form of :class:`Adamax`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps)
    lr = _to_scalar(lr)
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        if not differentiable:
            tp.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
        else:
            norm_buf = tp.cat([exp_inf.mul_(beta2).unsqueeze(0), grad.abs().add_(eps).unsqueeze(0)], 0)
            exp_inf.copy_(tp.amax(norm_buf, 0, keepdim=False))
        clr = lr / (1 - beta1 ** _get_value(step_t))
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
