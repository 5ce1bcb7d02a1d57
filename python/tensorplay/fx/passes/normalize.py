"""Normalize: calls with positional arguments rewritten to keyword arguments, named by the
op's schema or the function's / module's signature."""
import inspect

from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult

__all__ = ['Normalize']


def _op_param_names(target):
    """The parameter names of ``target`` in positional order, or None if they cannot be
    known (C functions without a signature, *args)."""
    schema = getattr(target, '_schema', None)
    if schema is not None:
        return [a.name for a in schema.arguments if not a.kwarg_only]
    try:
        sig = inspect.signature(getattr(target, '__wrapped__', target))
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY):
            if p.kind is p.POSITIONAL_ONLY:
                return None
            names.append(p.name)
    return names


class Normalize(PassBase):
    """Every ``call_function`` of an op handle (names from its schema) or of a Python
    function with a signature, and every ``call_module`` (names from the module's
    ``forward``), takes its arguments by keyword only. Operators (``operator.add``) and
    method calls keep their positions, as in torch.fx's normalization."""

    def call(self, gm):
        modified = False
        for node in gm.graph.nodes:
            if not node.args:
                continue
            if node.op == 'call_function' and getattr(node.target, '__module__', '') != '_operator':
                names = _op_param_names(node.target)
            elif node.op == 'call_module':
                mod = gm.get_submodule(node.target)
                names = _op_param_names(type(mod).forward)
                names = names[1:] if names else None  # self
            else:
                continue
            if names is None or len(node.args) > len(names):
                continue
            kwargs = dict(zip(names, node.args))
            if any(k in node.kwargs for k in kwargs):
                continue
            kwargs.update(node.kwargs)
            node.args, node.kwargs = (), kwargs
            modified = True
        return PassResult(gm, modified)
