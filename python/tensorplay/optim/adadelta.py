"""Adadelta: step sizes from running averages of squared gradients and squared updates."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _eval_closure,
                                        _get_scalar_dtype, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta: ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g`` with both
    averages decaying by ``rho``; ``p -= lr * delta``.

    >>> opt = tp.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.zeros((), dtype=_get_scalar_dtype())
        state["square_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
        state["acc_delta"] = tp.zeros_like(p, memory_format=tp.preserve_format)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one Adadelta step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (square_avgs, acc_deltas, state_steps) = _gather_group(
                self, group, ("square_avg", "acc_delta", "step"), self._init_state)
            adadelta(params, grads, square_avgs, acc_deltas, state_steps, lr=group["lr"], rho=group["rho"],
                     eps=group["eps"], weight_decay=group["weight_decay"], foreach=group["foreach"],
                     maximize=group["maximize"], differentiable=group["differentiable"],
                     capturable=group["capturable"])
        return loss


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, *, lr, rho, eps, weight_decay, maximize):
    """The Adadelta update in place (functional form of :class:`Adadelta`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps, supports_xla=False)
    lr = _to_scalar(lr)
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step += 1
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        if differentiable:
            delta = delta.clone()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)
