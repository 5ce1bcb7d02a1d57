"""NAdam: Adam with Nesterov momentum (momentum_decay schedule, optional decoupled decay)."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _gather_group, _check_capturable, _check_lr, _check_moment_args,
                                        _eval_closure, _get_scalar_dtype, _get_value, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """NAdam: Adam whose first moment is looked ahead with the momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``.

    >>> opt = tp.optim.NAdam(model.parameters(), lr=2e-3)
    """

    _group_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                       "decoupled_weight_decay": False}
    _tensor_state = ("step", "mu_product")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_moment_args(eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = tp.tensor(0.0, dtype=_get_scalar_dtype())
        state["mu_product"] = tp.tensor(1.0, dtype=_get_scalar_dtype())
        state["exp_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
        state["exp_avg_sq"] = tp.zeros_like(p, memory_format=tp.preserve_format)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one NAdam step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, (exp_avgs, exp_avg_sqs, mu_products, state_steps) = _gather_group(
                self, group, ("exp_avg", "exp_avg_sq", "mu_product", "step"), self._init_state)
            beta1, beta2 = group["betas"]
            nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                  eps=group["eps"], maximize=group["maximize"],
                  decoupled_weight_decay=group["decoupled_weight_decay"], foreach=group["foreach"],
                  capturable=group["capturable"], differentiable=group["differentiable"])
        return loss


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False,
          foreach=None, capturable=False, differentiable=False, *, beta1, beta2, lr, weight_decay,
          momentum_decay, eps, maximize=False):
    """The NAdam update in place (functional form of :class:`NAdam`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if not all(isinstance(t, tp.Tensor) for t in mu_products):
        raise RuntimeError("API has changed, `mu_products` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, mu_products, state_steps, what="params, mu_products and state_steps")
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], state_steps[i]
        step_t += 1
        step = _get_value(step_t)
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product *= mu
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        if differentiable:
            denom = denom.add(eps)
            mu_product_next = mu_product * mu_next
            grad = grad * (-lr * (1.0 - mu) / (1.0 - mu_product))
            exp_avg = exp_avg * (-lr * mu_next / (1.0 - mu_product_next))
            param.addcdiv_(grad, denom)
            param.addcdiv_(exp_avg, denom)
        else:
            mu_product_next = _get_value(mu_product) * mu_next
            denom.add_(eps)
            param.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - _get_value(mu_product))))
            param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
