"""nn.utils.skip_init: a module built without running its parameter initialisation."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers (built on the
    meta device, then given empty storage on ``device``, default CPU); the class must take a
    ``device`` argument.

        >>> m = tp.nn.utils.skip_init(tp.nn.Linear, 5, 1)
    """
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
