"""tensorplay.autograd: reverse-mode differentiation (the engine is C++, csrc/autograd)."""
from tensorplay import _C
from tensorplay.autograd.anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from tensorplay.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                           is_inference_mode_enabled, no_grad, set_grad_enabled)
from tensorplay.autograd.gradcheck import gradcheck, gradgradcheck
from tensorplay.autograd import graph  # noqa: F401  (Node.register_hook)
from tensorplay.autograd import function  # noqa: F401
from tensorplay.autograd import forward_ad, functional  # noqa: F401
from tensorplay.autograd.function import Function

__all__ = ['backward', 'grad', 'no_grad', 'enable_grad', 'set_grad_enabled', 'inference_mode',
           'is_grad_enabled', 'is_inference_mode_enabled', 'detect_anomaly', 'set_detect_anomaly',
           'gradcheck', 'gradgradcheck', 'is_anomaly_enabled', 'Function']

Tensor = _C.Tensor


def _as_tuple(x, name):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (list, tuple)):
        return tuple(x)
    raise TypeError(f"{name} must be a Tensor or a sequence of Tensors, not {type(x).__name__}")


def _make_grads(outputs, grads, is_grads_batched=False):
    if grads is None:
        grads = (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError("grad can be implicitly created only for scalar outputs"
                           if not grads else
                           f"Mismatch in number of gradients: got {len(grads)} gradients "
                           f"for {len(outputs)} outputs")
    result = []
    for out, g in zip(outputs, grads):
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.is_floating_point() or out.is_complex():
                    raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                g = _C.ones(tuple(out.shape), dtype=out.dtype, device=out.device)
        elif isinstance(g, Tensor):
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{len(result)}] has a shape of "
                                   f"{tuple(g.shape)} and output[{len(result)}] has a shape of "
                                   f"{tuple(out.shape)}.")
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        result.append(g)
    return tuple(result)


# One entry per running backward/grad call, innermost last: whether that call computes every
# leaf's gradient (a plain backward) and so may run a reentrant checkpoint's inner backward.
_checkpoint_valid = []
# True once a reentrant checkpoint exists (tensorplay.utils.checkpoint sets it): until then a
# backward skips the bookkeeping above (0.2-0.3 us of a small backward).
_track_checkpoint = False
# Set by tensorplay.autograd.profiler while a profiler records: hooks the nodes of a backward
# about to run (returns the hook handles). None otherwise: a backward pays one check.
_profile_backward = None


def _is_checkpoint_valid():
    """False inside ``grad()`` or ``backward(inputs=...)``: a reentrant checkpoint's inner
    backward would accumulate into ``.grad`` instead of the asked-for gradients."""
    return not _checkpoint_valid or _checkpoint_valid[-1]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulates into the leaves' ``.grad`` the gradient of ``tensors`` (weighted by
    ``grad_tensors``). ``inputs`` restricts accumulation to those tensors."""
    tensors = _as_tuple(tensors, 'tensors')
    if grad_variables is not None:
        grad_tensors = grad_variables
    grad_tensors = _as_tuple(grad_tensors, 'grad_tensors')
    if inputs is not None and len(_as_tuple(inputs, 'inputs')) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    inputs = _as_tuple(inputs, 'inputs') or ()
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if not _track_checkpoint and _profile_backward is None:
        _C._run_backward(list(tensors), list(grads), retain_graph, create_graph, list(inputs), True)
        return
    _checkpoint_valid.append(not inputs)
    hooks = _profile_backward(tensors) if _profile_backward is not None else ()
    try:
        _C._run_backward(list(tensors), list(grads), retain_graph, create_graph, list(inputs), True)
    finally:
        _checkpoint_valid.pop()
        for h in hooks:
            h.remove()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (a tuple), without touching
    any ``.grad``."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs, 'outputs')
    inputs = _as_tuple(inputs, 'inputs')
    grad_outputs = _as_tuple(grad_outputs, 'grad_outputs')
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if not _track_checkpoint and _profile_backward is None:
        result = _C._run_backward(list(outputs), list(grads), retain_graph, create_graph,
                                  list(inputs), False)
    else:
        _checkpoint_valid.append(False)
        hooks = _profile_backward(outputs) if _profile_backward is not None else ()
        try:
            result = _C._run_backward(list(outputs), list(grads), retain_graph, create_graph,
                                      list(inputs), False)
        finally:
            _checkpoint_valid.pop()
            for h in hooks:
                h.remove()
    out = []
    for i, (g, inp) in enumerate(zip(result, inputs)):
        if g is None:
            if materialize_grads:
                g = _C.zeros(tuple(inp.shape), dtype=inp.dtype, device=inp.device)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired behavior.")
        out.append(g)
    return tuple(out)
