"""Node (grad_fn) methods, removable hook handles, and the saved-tensor hooks."""
import threading

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


class saved_tensors_hooks:
    """Context manager: tensors saved for backward while it is active (by built-in ops and
    custom Functions alike) are passed to ``pack_hook`` at save time; a backward reading one
    gets ``unpack_hook(packed)``, which must return a tensor of the saved tensor's value::

        with tp.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = x.exp()   # saves a copy of its result
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        _active_hooks().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        _active_hooks().pop()


_hooks_tls = threading.local()


def _active_hooks():
    """This thread's saved-tensor hook pairs, innermost last (a context that installs its own
    pair can hand what it does not keep to the enclosing one, as FSDP does)."""
    stack = getattr(_hooks_tls, "stack", None)
    if stack is None:
        stack = _hooks_tls.stack = []
    return stack


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept as copies in CPU memory (pinned if ``pin_memory``) and moved
    back to their device when a backward reads them."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            packed = _C.empty(tuple(tensor.shape), dtype=tensor.dtype, device="cpu")
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager under which registering saved-tensor hooks raises
    ``RuntimeError(error_message)`` (as does entering it while hooks are registered)."""

    def __init__(self, error_message):
        self.error_message = error_message
        self._previous = None

    def __enter__(self):
        self._previous = _C._set_saved_tensors_hooks_disabled(self.error_message)
        return self

    def __exit__(self, *exc):
        _C._set_saved_tensors_hooks_disabled(self._previous)
