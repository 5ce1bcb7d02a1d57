"""Rprop: per-element step sizes grown or shrunk by the sign agreement of gradients."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _eval_closure,
                                        _get_scalar_dtype, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Rprop: each element's step size is multiplied by ``etas[1]`` while its gradient keeps
    its sign and by ``etas[0]`` when it flips (clamped to ``step_sizes``); the update is
    ``-sign(g) * step_size``, skipped after a flip.

    >>> opt = tp.optim.Rprop(model.parameters(), lr=1e-2)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.zeros((), dtype=_get_scalar_dtype())
        state["prev"] = tp.zeros_like(p, memory_format=tp.preserve_format)
        state["step_size"] = tp.full_like(p.grad, _to_scalar(group["lr"]))

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one Rprop step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (prevs, step_sizes, state_steps) = _gather_group(
                self, group, ("prev", "step_size", "step"), self._init_state)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
                  step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus, foreach=group["foreach"],
                  maximize=group["maximize"], differentiable=group["differentiable"],
                  capturable=group["capturable"])
        return loss


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False, maximize=False,
          differentiable=False, *, step_size_min, step_size_max, etaminus, etaplus):
    """The Rprop update in place (functional form of :class:`Rprop`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps)
    for param, grad, prev, step_size, step in zip(params, grads, prevs, step_sizes, state_steps):
        grad = grad if not maximize else -grad
        step += 1
        sign = grad.mul(prev.clone() if differentiable else prev).sign()
        sign[sign.gt(0)] = etaplus
        sign[sign.lt(0)] = etaminus
        sign[sign.eq(0)] = 1
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        grad = grad.clone()
        grad[sign.eq(etaminus)] = 0
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
