"""CSE: common subexpression elimination (one node per distinct pure computation)."""
from tensorplay.fx.node import Node
from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult

__all__ = ['CSE']


def _key(x):
    """A hashable stand-in for an argument structure (nodes by identity)."""
    if isinstance(x, Node):
        return ('node', id(x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_key(e) for e in x)
    if isinstance(x, dict):
        return ('dict',) + tuple((k, _key(v)) for k, v in x.items())
    if isinstance(x, slice):
        return ('slice', _key(x.start), _key(x.stop), _key(x.step))
    if isinstance(x, float):
        return ('float', repr(x))  # 0.0 and -0.0 differ; 1.0 is not 1
    if isinstance(x, (int, str, bool, complex, type(None))):
        return (type(x).__name__, x)
    return ('object', id(x))  # tensors, dtypes, devices: by identity


class CSE(PassBase):
    """Two nodes with the same op, target and arguments (after earlier merges) become one,
    unless they have side effects or draw random numbers (``Node.is_impure``);
    ``get_attr`` nodes of one path merge too."""

    def call(self, gm):
        seen = {}
        modified = False
        for node in list(gm.graph.nodes):
            if node.op in ('placeholder', 'output') or node.is_impure():
                continue
            try:
                target = node.target if node.op != 'call_function' else id(node.target)
                key = (node.op, target, _key(node.args), _key(node.kwargs))
            except TypeError:  # an unhashable constant argument
                continue
            first = seen.get(key)
            if first is None:
                seen[key] = node
                continue
            node.replace_all_uses_with(first)
            gm.graph.erase_node(node)
            modified = True
        return PassResult(gm, modified)

