"""RMSprop (optionally centered, with momentum)."""
import tensorplay as tp
from tensorplay.optim.optimizer import (Optimizer, _check_capturable, _check_lr, _eval_closure,
                                        _get_scalar_dtype, _to_scalar,
                                        _use_grad_for_differentiable)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop: ``square_avg = alpha * square_avg + (1 - alpha) * g^2``,
    ``p -= lr * g / (sqrt(square_avg) + eps)``; ``centered`` subtracts the squared mean
    gradient first, ``momentum`` accumulates the scaled steps.

    >>> opt = tp.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.99)
    """

    _group_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                       "differentiable": False, "capturable": False}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_group(self, group, params, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = tp.zeros((), dtype=_get_scalar_dtype())
                state["square_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = tp.zeros_like(p, memory_format=tp.preserve_format)
                if group["centered"]:
                    state["grad_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
            square_avgs.append(state["square_avg"])
            state_steps.append(state["step"])
            if group["momentum"] > 0:
                momentum_buffer_list.append(state["momentum_buffer"])
            if group["centered"]:
                grad_avgs.append(state["grad_avg"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one RMSprop step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps = [], [], [], [], [], []
            self._init_group(group, params, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps)
            rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=group["lr"],
                    alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                    momentum=group["momentum"], centered=group["centered"], foreach=group["foreach"],
                    maximize=group["maximize"], differentiable=group["differentiable"],
                    capturable=group["capturable"])
        return loss


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None,
            maximize=False, differentiable=False, capturable=False, *, lr, alpha, eps, weight_decay, momentum,
            centered):
    """The RMSprop update in place (functional form of :class:`RMSprop`)."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps)
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        state_steps[i] += 1
        grad = grads[i] if not maximize else -grads[i]
        square_avg = square_avgs[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
