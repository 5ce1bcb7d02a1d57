"""functionalize: runs a function with its in-place and out= ops replaced by their
out-of-place forms plus one copy into the written tensor (Note [Functionalize])."""
import functools

from tensorplay._ops import Tag, ops
from tensorplay.utils._python_dispatch import TorchDispatchMode

__all__ = ['functionalize']

# Note [Functionalize]
# A dispatch mode sees every op below autograd. For an in-place form (``add_.Tensor``) it
# calls the functional form (``add.Tensor``) and copies the result into ``self``; for an
# out= form (``add.out``) the functional form's result is copied into ``out``. The program
# then computes with out-of-place ops only, and the one remaining write per mutation is a
# ``copy_`` into the mutated tensor, the form that a captured graph (tp.fx.make_fx under
# functionalize) shows and compilers keep. Views stay views in eager mode (the copies go
# through them into their bases, as the original writes did); remove='mutations_and_views'
# is accepted with that same eager behaviour.


def _functional_form(func):
    """The functional handle of an in-place or out= handle, or None."""
    cached = getattr(func, '_functional_form', False)
    if cached is not False:
        return cached
    form = None
    packet = getattr(ops, func.namespace)
    if Tag.inplace in func.tags and func._opname.endswith('_'):
        p = getattr(packet, func._opname[:-1], None)
        form = getattr(p, func._overloadname, None) if p is not None else None
    elif Tag.out in func.tags:  # the overload taking the same arguments less out=
        p = getattr(packet, func._opname, None)
        want = [a.name for a in func._schema.arguments if not a.is_out]
        for name in (p.overloads() if p is not None else ()):
            h = getattr(p, name)
            if Tag.out not in h.tags and [a.name for a in h._schema.arguments] == want:
                form = h
                break
    func._functional_form = form
    return form


class _FunctionalizeMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        form = _functional_form(func)
        # in-place views (t_, squeeze_, ...) write no data: they stay, as views do in eager mode
        if form is None or func is ops.aten.copy_.default or Tag.inplace_view in func.tags:
            return func(*args, **kwargs)
        if Tag.inplace in func.tags:
            result = form(*args, **kwargs)
            return args[0].copy_(result)
        out = kwargs.pop('out')
        result = form(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            for o, r in zip(out, result):
                _copy_out(o, r)
            return out
        return _copy_out(out, result)


def _copy_out(out, result):
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    return out.copy_(result)


def functionalize(func, *, remove='mutations'):
    """``func`` with its mutations replaced by out-of-place ops and copies (PyTorch's
    ``torch.func.functionalize``); results and mutated inputs are the same as ``func``'s.

        >>> def f(x):
        ...     y = x.clone(); y.add_(1); return y
        >>> tp.fx.make_fx(tp.func.functionalize(f))(tp.ones(2))   # add + copy_, no add_
    """
    if remove not in ('mutations', 'mutations_and_views'):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for "
                           f"remove={remove}. Valid options are:\n     remove='mutations': all "
                           f"inplace and out= operators will be removed from the program, and "
                           f"replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all aliasing "
                           f"operators {{view}} will be replaced with their non-aliasing "
                           f"counterparts, {{view}}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        with _FunctionalizeMode():
            return func(*args, **kwargs)
    return wrapped
