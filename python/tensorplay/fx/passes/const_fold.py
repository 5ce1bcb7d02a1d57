"""ConstFold: computes once the parts of a graph that read only attributes and literals,
and reads their results as attributes."""
from tensorplay.fx.node import map_arg
from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult

__all__ = ['ConstFold']


class ConstFold(PassBase):
    """Runs every pure node whose inputs are all constant (``get_attr`` nodes, literals, other
    constant nodes) and replaces each constant tensor read by a non-constant node with a
    ``get_attr`` of a buffer ``_fx_const_folded_attrs_<n>`` holding the value; the folded
    nodes are then dead and erased. For inference graphs: folded parameters no longer
    follow later changes to the parameters."""

    def call(self, gm):
        import tensorplay
        from tensorplay.fx.interpreter import Interpreter
        interp = Interpreter(gm, garbage_collect_values=False)
        values = {}
        for node in gm.graph.nodes:
            if node.op == 'get_attr':
                values[node] = interp.fetch_attr(node.target)
            elif node.op in ('call_function', 'call_method', 'call_module') and \
                    all(i in values for i in node._input_nodes) and not node.is_impure():
                args = map_arg(node.args, values.__getitem__)
                kwargs = map_arg(node.kwargs, values.__getitem__)
                with tensorplay.no_grad():
                    values[node] = getattr(interp, node.op)(node.target, args, kwargs)
        modified = False
        for node, value in values.items():
            if node.op == 'get_attr' or not isinstance(value, tensorplay.Tensor):
                continue
            if all(u in values for u in node.users):
                continue  # only constants read it: the frontier further down replaces it
            name = _fresh_name(gm)
            gm.register_buffer(name, value.detach())
            with gm.graph.inserting_before(node):
                attr = gm.graph.get_attr(name)
            node.replace_all_uses_with(attr, lambda u: u not in values)
            modified = True
        if modified:
            gm.graph.eliminate_dead_code()
            gm.delete_all_unused_submodules()
        return PassResult(gm, modified)


def _fresh_name(gm):
    i = 0
    while hasattr(gm, f'_fx_const_folded_attrs_{i}'):
        i += 1
    return f'_fx_const_folded_attrs_{i}'
