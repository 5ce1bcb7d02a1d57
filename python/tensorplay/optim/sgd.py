"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
import tensorplay as tp
from tensorplay import _C
from tensorplay.optim.optimizer import (Optimizer, _check_fused_flags, _device_dtype_check_for_fused,
                                        _eval_closure, _get_value, _to_scalar, _use_fused_kernel,
                                        _use_grad_for_differentiable)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (PyTorch's formulation:
    ``buf = momentum * buf + (1 - dampening) * g``, ``p -= lr * buf``) or Nesterov momentum.

    >>> opt = tp.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    _group_defaults = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                       "fused": False}

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, tp.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Performs one SGD step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _eval_closure(closure)
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            with_momentum = group["momentum"] != 0
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                params.append(p)
                grads.append(p.grad)
                if with_momentum:
                    bufs.append(self.state[p].get("momentum_buffer"))
            sgd(params, grads, bufs, weight_decay=group["weight_decay"], momentum=group["momentum"],
                lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
                maximize=group["maximize"], foreach=group["foreach"], fused=group["fused"],
                differentiable=group["differentiable"])
            if with_momentum:
                for p, buf in zip(params, bufs):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(params, d_p_list, momentum_buffer_list, foreach=None, fused=None, *, weight_decay, momentum,
        lr, dampening, nesterov, maximize, differentiable=False):
    """The SGD update of ``params`` in place (functional form of :class:`SGD`); missing
    entries (None) of ``momentum_buffer_list`` are filled with the new buffers."""
    if _use_fused_kernel(params, fused, foreach, differentiable):
        _fused_sgd(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum,
                   lr=lr, dampening=dampening, nesterov=nesterov, maximize=maximize)
    else:
        _single_tensor_sgd(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay,
                           momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                           maximize=maximize)


def _single_tensor_sgd(params, grads, bufs, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            if isinstance(weight_decay, tp.Tensor) and weight_decay.requires_grad:
                grad = grad.addcmul_(param.clone(), weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if buf is None:
                buf = grad.detach().clone()
                bufs[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        if isinstance(lr, tp.Tensor) and lr.requires_grad:
            param.addcmul_(grad, lr, value=-1)
        else:
            param.add_(grad, alpha=-lr)


def _fused_sgd(params, grads, bufs, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """One kernel call; a second one the first time some parameters get their buffers."""
    kw = dict(weight_decay=float(_get_value(weight_decay)), momentum=float(momentum),
              lr=float(_get_value(lr)), dampening=float(dampening), nesterov=nesterov, maximize=maximize)
    if momentum == 0:
        _C._fused_sgd_(params, grads, [], is_first_step=False, **kw)
        return
    new = [i for i, b in enumerate(bufs) if b is None]
    if not new:
        _C._fused_sgd_(params, grads, bufs, is_first_step=False, **kw)
        return

    def run(rows, first):
        _C._fused_sgd_([params[i] for i in rows], [grads[i] for i in rows], [bufs[i] for i in rows],
                       is_first_step=first, **kw)

    old = [i for i, b in enumerate(bufs) if b is not None]
    if old:
        run(old, False)
    for i in new:
        bufs[i] = tp.empty_like(grads[i])
    run(new, True)
