"""RAdam: Adam with the variance of the adaptive step size rectified in early steps."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _check_moment_args,
                                        _eval_closure, _get_scalar_dtype, _get_value, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """RAdam: while the approximated SMA length ``rho_t`` is at most 5 the step is plain
    momentum SGD; later Adam's step scaled by the rectification term.

    >>> opt = tp.optim.RAdam(model.parameters(), lr=1e-3)
    """

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                       "decoupled_weight_decay": False, "capturable": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_moment_args(eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay, "differentiable": differentiable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.tensor(0.0, dtype=_get_scalar_dtype())
        state["exp_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
        state["exp_avg_sq"] = tp.zeros_like(p, memory_format=tp.preserve_format)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one RAdam step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (exp_avgs, exp_avg_sqs, state_steps) = _gather_group(
                self, group, ("exp_avg", "exp_avg_sq", "step"), self._init_state)
            beta1, beta2 = group["betas"]
            radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2, lr=group["lr"],
                  weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                  foreach=group["foreach"], capturable=group["capturable"],
                  differentiable=group["differentiable"],
                  decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, *, beta1, beta2, lr, weight_decay, eps, maximize=False):
    """The RAdam update in place (functional form of :class:`RAdam`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps)
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        step = _get_value(step_t)
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            exp_avg_sq_sqrt = exp_avg_sq.sqrt()
            exp_avg_sq_sqrt = exp_avg_sq_sqrt.add(eps) if differentiable else exp_avg_sq_sqrt.add_(eps)
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq_sqrt
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
