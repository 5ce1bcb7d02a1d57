"""Node (grad_fn) methods and removable hook handles."""
from tensorplay import _C

Node = _C._Node


class RemovableHandle:
    """Removes the hook it was returned for."""

    def __init__(self, owner, hook_id):
        self._owner, self.id = owner, hook_id

    def remove(self):
        if self._owner is not None:
            self._owner._remove_hook(self.id)
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _node_register_hook(self, fn):
    """fn(grad_inputs, grad_outputs) runs after the node; may return new grad_inputs."""
    return RemovableHandle(self, self._register_hook(fn))


def _node_register_prehook(self, fn):
    """fn(grad_outputs) runs before the node; may return new grad_outputs."""
    return RemovableHandle(self, self._register_prehook(fn))


Node.register_hook = _node_register_hook
Node.register_prehook = _node_register_prehook
