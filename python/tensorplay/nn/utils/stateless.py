"""functional_call: run a module with some parameters and buffers swapped for given tensors."""
import contextlib


def _swap(module, name, value):
    *path, last = name.split(".")
    owner = module.get_submodule(".".join(path))
    if last in owner._parameters:
        old = owner._parameters[last]
        owner._parameters[last] = value
        return lambda: owner._parameters.__setitem__(last, old)
    if last in owner._buffers:
        old = owner._buffers[last]
        owner._buffers[last] = value
        return lambda: owner._buffers.__setitem__(last, old)
    old = getattr(owner, last)
    object.__setattr__(owner, last, value)
    return lambda: object.__setattr__(owner, last, old)


@contextlib.contextmanager
def _reparametrize(module, tensors, strict=False):
    if strict:
        names = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing = sorted(names - set(tensors))
        unexpected = sorted(set(tensors) - names)
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): {}.".format(", ".join(map(repr, unexpected))))
            if missing:
                msgs.append("Missing key(s): {}.".format(", ".join(map(repr, missing))))
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    undo = [_swap(module, name, value) for name, value in tensors.items()]
    try:
        yield
    finally:
        for u in reversed(undo):
            u()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters/buffers replaced by the given tensors
    for the duration of the call (the module is unchanged afterwards)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    else:
        tensors = {}
        for d in parameter_and_buffer_dicts:
            overlap = set(d) & set(tensors)
            if overlap:
                raise ValueError(f"{sorted(overlap)} appeared in multiple dictionaries; behavior "
                                 "of functional call is ambiguous")
            tensors.update(d)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, strict):
        return module(*args, **(kwargs or {}))
