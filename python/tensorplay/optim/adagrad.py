"""Adagrad: step sizes shrinking with each parameter's accumulated squared gradients."""
import tensorplay as tp
from tensorplay import _C
from tensorplay.optim.optimizer import (Optimizer, _check_fused_flags, _device_dtype_check_for_fused,
                                        _eval_closure, _get_scalar_dtype, _get_value,
                                        _to_scalar, _use_fused_kernel,
                                        _use_grad_for_differentiable)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad: ``sum += g * g``, ``p -= clr * g / (sqrt(sum) + eps)`` with
    ``clr = lr / (1 + (step - 1) * lr_decay)``. Its state exists from construction on.

    >>> opt = tp.optim.Adagrad(model.parameters(), lr=1e-2)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, tp.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(self.state[p], p, group, initial_accumulator_value)

    @staticmethod
    def _init_state(state, p, group, initial_accumulator_value):
        state["step"] = (tp.zeros((), dtype=_get_scalar_dtype(is_fused=group["fused"]), device=p.device)
                         if group["fused"]
                         else tp.tensor(0.0, dtype=_get_scalar_dtype()))
        state["sum"] = tp.full_like(p, initial_accumulator_value, memory_format=tp.preserve_format)

    def _init_group(self, group, params, grads, state_sums, state_steps):
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if group["fused"]:
                _device_dtype_check_for_fused(p)
            params.append(p)
            grads.append(grad)
            state = self.state[p]
            if len(state) == 0:
                self._init_state(state, p, group, self.defaults["initial_accumulator_value"])
            state_sums.append(state["sum"])
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one Adagrad step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, state_sums, state_steps = [], [], [], []
            self._init_group(group, params, grads, state_sums, state_steps)
            adagrad(params, grads, state_sums, state_steps, lr=group["lr"], weight_decay=group["weight_decay"],
                    lr_decay=group["lr_decay"], eps=group["eps"], foreach=group["foreach"],
                    maximize=group["maximize"], differentiable=group["differentiable"], fused=group["fused"])
        return loss


def adagrad(params, grads, state_sums, state_steps, fused=None, foreach=None, differentiable=False, *,
            lr, weight_decay, lr_decay, eps, maximize):
    """The Adagrad update in place (functional form of :class:`Adagrad`); each
    ``state_steps`` tensor is incremented."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if _use_fused_kernel(params, fused, foreach, differentiable):
        _C._fused_adagrad_(params, grads, state_sums, state_steps, lr=float(_get_value(lr)),
                           lr_decay=float(lr_decay), weight_decay=float(weight_decay), eps=float(eps),
                           maximize=maximize)
        return
    lr = _to_scalar(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = _get_value(step_t)
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt() + eps if differentiable else state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
