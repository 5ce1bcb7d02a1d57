"""Adam (with AMSGrad, maximize, L2 or decoupled weight decay); AdamW builds on it."""
import tensorplay as tp
from tensorplay import _C
from tensorplay.optim.optimizer import (Optimizer, _check_capturable, _cuda_graph_capture_health_check, _check_fused_flags, _check_moment_args,
                                        _device_dtype_check_for_fused, _eval_closure, _get_scalar_dtype,
                                        _get_value, _to_scalar, _use_fused_kernel,
                                        _use_grad_for_differentiable)

__all__ = ["Adam", "adam"]


def _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable):
    """Adam's and AdamW's hyper-parameter checks, with PyTorch's messages."""
    if isinstance(lr, tp.Tensor):
        if foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    _check_moment_args(eps, betas, weight_decay)
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], tp.Tensor) and isinstance(betas[1], tp.Tensor))):
        raise ValueError("betas must be either both floats or both Tensors")
    for i in (0, 1):
        if isinstance(betas[i], tp.Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")


class Adam(Optimizer):
    """Adam: per-parameter step sizes from running averages of the gradient and its square,
    bias-corrected. ``amsgrad`` keeps the running maximum of the second moment;
    ``decoupled_weight_decay=True`` makes it AdamW.

    >>> opt = tp.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
    """

    _group_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _tensor_state = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable)
        betas = tuple(map(_to_scalar, betas))
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
        amsgrad, fused = group["amsgrad"], group["fused"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            params.append(p)
            grads.append(grad)
            state = self.state[p]
            if len(state) == 0:
                if fused:
                    _device_dtype_check_for_fused(p)
                state["step"] = (tp.zeros((), dtype=_get_scalar_dtype(is_fused=fused), device=p.device)
                                 if group["capturable"] or fused
                                 else tp.tensor(0.0, dtype=_get_scalar_dtype()))
                state["exp_avg"] = tp.zeros_like(p, memory_format=tp.preserve_format)
                state["exp_avg_sq"] = tp.zeros_like(p, memory_format=tp.preserve_format)
                if amsgrad:
                    state["max_exp_avg_sq"] = tp.zeros_like(p, memory_format=tp.preserve_format)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            if group["differentiable"] and state["step"].requires_grad:
                raise RuntimeError("`requires_grad` is not supported for `step` in differentiable mode")
            if group["foreach"] and isinstance(group["lr"], tp.Tensor) and not group["capturable"]:
                raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one Adam step; ``closure`` re-evaluates the model and returns the loss."""
        _cuda_graph_capture_health_check(self)
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
            beta1, beta2 = group["betas"]
            self._init_group(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
            adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 foreach=group["foreach"], capturable=group["capturable"],
                 differentiable=group["differentiable"], fused=group["fused"],
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False, *,
         amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """The Adam update of ``params`` and their state in place (functional form of
    :class:`Adam`); each ``state_steps`` tensor is incremented."""
    if not all(isinstance(t, tp.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if capturable:
        _check_capturable(params, state_steps)
    kw = dict(amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
              maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
    if _use_fused_kernel(params, fused, foreach, differentiable):
        _C._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else [],
                        state_steps, lr=float(_get_value(lr)), beta1=float(_get_value(beta1)),
                        beta2=float(_get_value(beta2)), weight_decay=float(weight_decay),
                        eps=float(eps), amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay)
    else:
        _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                            differentiable=differentiable, capturable=capturable, **kw)


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad,
                        beta1, beta2, lr, weight_decay, eps, maximize, differentiable,
                        decoupled_weight_decay, capturable=False):
    """PyTorch's for-loop path, op by op (the differentiable one keeps the graph)."""
    lr, beta1, beta2 = _to_scalar(lr), _to_scalar(beta1), _to_scalar(beta2)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            elif differentiable and isinstance(weight_decay, tp.Tensor) and weight_decay.requires_grad:
                grad = grad.addcmul_(param.clone(), weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        if differentiable and isinstance(beta2, tp.Tensor) and beta2.requires_grad:
            exp_avg_sq.lerp_(tp.square(grad), weight=1 - beta2)
        else:
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if differentiable or capturable:
            # the bias corrections stay tensors (capturable: on the step's device, so a
            # CUDA graph replays them with the step it increments)
            bias_correction1 = 1 - beta1 ** step_t
            bias_correction2 = 1 - beta2 ** step_t
            step_size_neg = (lr / bias_correction1).neg()
            scale = bias_correction2.sqrt() * step_size_neg
            if amsgrad:
                max_exp_avg_sqs[i].copy_(tp.maximum(max_exp_avg_sqs[i].clone(), exp_avg_sq))
                denom = (max_exp_avg_sqs[i].sqrt() / scale).add_(eps / step_size_neg)
            else:
                denom = (exp_avg_sq.sqrt() / scale).add_(eps / step_size_neg)
            param.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom)
        else:
            step = _get_value(step_t)
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                tp.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
                denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)
