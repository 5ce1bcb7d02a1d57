"""FusionGroups: groups of connected pointwise nodes, each computable in one loop over its
elements; the compiler generates one kernel per group."""
import operator

from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult

__all__ = ['FusionGroups', 'is_pointwise', 'fusion_groups']

_POINTWISE_OPERATORS = frozenset((operator.add, operator.sub, operator.mul, operator.truediv,
                                  operator.neg, operator.pow, operator.eq, operator.ne,
                                  operator.lt, operator.le, operator.gt, operator.ge,
                                  operator.and_, operator.or_, operator.xor, operator.invert,
                                  operator.pos, operator.abs, operator.floordiv, operator.mod))
_POINTWISE_MODULES = frozenset('ReLU ReLU6 GELU SiLU Sigmoid Tanh LeakyReLU ELU SELU CELU '
                               'Hardtanh Hardsigmoid Hardswish Mish Softplus Softsign '
                               'Tanhshrink Identity'.split())
_pointwise_names = None


def _names():
    """Names of functions and methods whose aten op is tagged pointwise (``add``,
    ``relu``, ``gelu``, ``add_`` ...)."""
    global _pointwise_names
    if _pointwise_names is None:
        from tensorplay._ops import Tag, ops
        names = set()
        for name in dir(ops.aten):
            packet = getattr(ops.aten, name, None)
            overloads = getattr(packet, 'overloads', None)
            if overloads is None:
                continue
            if any(Tag.pointwise in getattr(packet, o).tags for o in overloads()):
                names.add(name)
                names.add(name + '_')
        _pointwise_names = frozenset(names)
    return _pointwise_names


def is_pointwise(node):
    """Whether ``node`` computes each output element from the same element of its inputs
    (an elementwise op, an activation module), and yields a tensor where ShapeProp or fake
    metadata says what it yields."""
    import tensorplay
    val = node.meta.get('val', node.meta.get('tensor_meta'))
    if val is not None and not isinstance(val, tensorplay.Tensor) and \
            type(val).__name__ != 'TensorMetadata':
        return False  # shape arithmetic on Python numbers
    if node.op == 'call_function':
        t = node.target
        if t in _POINTWISE_OPERATORS:
            return True
        from tensorplay._ops import Tag
        tags = getattr(t, 'tags', None)
        if tags is not None:
            return Tag.pointwise in tags
        return getattr(t, '__module__', '').startswith('tensorplay') and \
            getattr(t, '__name__', '') in _names()
    if node.op == 'call_method':
        return node.target in _names()
    if node.op == 'call_module' and node.graph.owning_module is not None:
        mod = node.graph.owning_module.get_submodule(node.target)
        return type(mod).__name__ in _POINTWISE_MODULES and type(mod).__module__.startswith(
            'tensorplay.nn')
    return False


def _reaches(src_group, dst, members, lo):
    """Whether a path from a node of ``src_group`` leads to ``dst`` through a node outside
    ``members`` (merging them would then make the groups' graph cyclic)."""
    stack = [i for i in dst._input_nodes if i not in members]
    seen = set()
    while stack:
        n = stack.pop()
        if n in src_group:
            return True
        if n in seen or n._sort_key < lo:
            continue
        seen.add(n)
        stack.extend(n._input_nodes)
    return False


def fusion_groups(graph):
    """The fusion groups of ``graph``: lists of two or more pointwise nodes, in program
    order, each connected through producer-consumer edges, with no path between two nodes
    of a group that leaves it (so each group can run as one kernel)."""
    group_of = {}
    for node in graph.nodes:
        if not is_pointwise(node):
            continue
        mine = [node]
        group_of[node] = mine
        for i in node._input_nodes:
            g = group_of.get(i)
            if g is None or g is mine:
                continue
            members = set(g) | set(mine)
            lo = min(m._sort_key for m in members)
            if any(_reaches(set(g), m, members, lo) for m in mine):
                continue
            mine.extend(g)
            for m in g:
                group_of[m] = mine
    seen, groups = set(), []
    for node in graph.nodes:
        g = group_of.get(node)
        if g is not None and id(g) not in seen and len(g) > 1:
            seen.add(id(g))
            groups.append(sorted(g, key=lambda n: n._sort_key))
    return groups


class FusionGroups(PassBase):
    """Annotates ``node.meta['fusion_group']`` (an index into ``self.groups``) on the
    nodes of each fusion group (see ``fusion_groups``); the graph itself is unchanged."""

    def call(self, gm):
        self.groups = fusion_groups(gm.graph)
        for node in gm.graph.nodes:
            node.meta.pop('fusion_group', None)
        for i, g in enumerate(self.groups):
            for n in g:
                n.meta['fusion_group'] = i
        return PassResult(gm, False)
