"""ASGD: averaged stochastic gradient descent (Polyak-Ruppert averaging after t0 steps)."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _eval_closure,
                                        _get_scalar_dtype, _get_value, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged SGD: SGD with the decaying rate ``eta = lr / (1 + lambd * lr * t) ** alpha``
    that also keeps ``ax``, the running average of the parameters from step ``t0`` on.

    >>> opt = tp.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_state = ("step", "eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.zeros((), dtype=_get_scalar_dtype())
        state["eta"] = tp.as_tensor(_to_scalar(group["lr"]), dtype=_get_scalar_dtype()).clone().detach()
        state["mu"] = tp.ones((), dtype=_get_scalar_dtype())
        state["ax"] = tp.zeros_like(p, memory_format=tp.preserve_format)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one ASGD step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (mus, axs, etas, state_steps) = _gather_group(
                self, group, ("mu", "ax", "eta", "step"), self._init_state)
            asgd(params, grads, axs, mus, etas, state_steps, lambd=group["lambd"], lr=group["lr"],
                 t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"],
                 foreach=group["foreach"], maximize=group["maximize"], differentiable=group["differentiable"],
                 capturable=group["capturable"])
        return loss


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False, differentiable=False,
         capturable=False, *, lambd, lr, t0, alpha, weight_decay):
    """The ASGD update in place (functional form of :class:`ASGD`)."""
    if capturable:
        _check_capturable(params, mus, etas, state_steps, what="params, mus, etas, and state_steps")
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        mu, ax, eta, step_t = mus[i], axs[i], etas[i], state_steps[i]
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = _get_value(eta)
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = _get_value(step_t)
        eta.copy_(tp.as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
        mu.copy_(tp.as_tensor(1 / max(1, step - t0)))
