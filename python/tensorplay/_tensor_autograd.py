"""Tensor methods of autograd: backward, register_hook, register_post_accumulate_grad_hook."""
from tensorplay import _C
from tensorplay.autograd.graph import RemovableHandle

Tensor = _C.Tensor


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradient of this tensor into the leaves' ``.grad``."""
    from tensorplay import autograd
    autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; it may return a
    replacement. Returns a handle whose ``remove()`` unregisters it."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    return RemovableHandle(self, self._register_hook(hook))


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after a leaf's ``.grad`` was accumulated."""
    return RemovableHandle(self, self._register_post_accumulate_grad_hook(hook))


Tensor.grad = property(Tensor._get_grad, Tensor._set_grad,
                       doc="The accumulated gradient (None until a backward reaches this leaf).")
Tensor.backward = backward
Tensor.register_hook = register_hook
Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
