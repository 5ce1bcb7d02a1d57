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
        names = ({n for n, _ in module.named_parameters(remove_duplicate=False)}
                 | {n for n, _ in module.named_buffers(remove_duplicate=False)})
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


def _untie(module, tensors):
    """With ``tie_weights``: a value given for one name of a tied parameter or buffer (one
    tensor under several names) replaces it under every name, as PyTorch does."""
    groups = {}
    for getter in (module.named_parameters, module.named_buffers):
        for name, t in getter(remove_duplicate=False):
            groups.setdefault(id(t), []).append(name)
    tensors = dict(tensors)
    for names in groups.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in tensors]
        if not given:
            continue
        if any(tensors[n] is not tensors[given[0]] for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, "
                             f"which are tied. Consider using tie_weights=False")
        for n in names:
            tensors[n] = tensors[given[0]]
    return tensors


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters/buffers replaced by the given tensors
    for the duration of the call (the module is unchanged afterwards). ``tie_weights``: a
    tensor registered under several names is replaced under all of them by the value given
    for any; ``strict``: the given names must be exactly the module's."""
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
    if tie_weights:
        tensors = _untie(module, tensors)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, strict):
        return module(*args, **(kwargs or {}))
