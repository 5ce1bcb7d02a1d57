"""Pytrees (PyTorch's ``torch.utils._pytree``, the part tp.func needs): nested tuples,
lists, dicts and namedtuples flattened to their leaves and rebuilt from a spec."""
__all__ = ['TreeSpec', 'LeafSpec', 'tree_flatten', 'tree_unflatten', 'tree_map', 'tree_leaves']


class TreeSpec:
    """How to rebuild a node: its type, context (dict keys / namedtuple type) and children."""
    __slots__ = ('type', 'context', 'children_specs', 'num_leaves')

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children_specs == other.children_specs)

    def __repr__(self):
        if self.type is None:
            return '*'
        return f'TreeSpec({self.type.__name__}, {self.context}, {self.children_specs})'


def LeafSpec():
    """The spec of a single leaf."""
    return _LEAF


_LEAF = TreeSpec(None, None, [])
_LEAF.num_leaves = 1


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), '_fields')


def _children(x):
    """(children, type, context) of a container, or None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return x, t, None
    if t is dict:
        keys = list(x)
        return [x[k] for k in keys], dict, keys
    if _is_namedtuple(x):
        return list(x), tuple, t
    return None


def tree_flatten(tree):
    """(leaves, spec): the leaves in order, and what tree_unflatten needs to rebuild."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    node = _children(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, t, ctx = node
    return TreeSpec(t, ctx, [_flatten(c, leaves) for c in children])


def tree_unflatten(leaves, spec):
    """The tree of ``spec`` with ``leaves`` in its leaf positions."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f'tree_unflatten(leaves, treespec): `leaves` has length {len(leaves)} '
                         f'but the spec refers to a pytree that holds {spec.num_leaves} items '
                         f'({spec}).')
    return _unflatten(iter(leaves), spec)


def _unflatten(it, spec):
    if spec.type is None:
        return next(it)
    children = [_unflatten(it, c) for c in spec.children_specs]
    if spec.type is dict:
        return dict(zip(spec.context, children))
    if spec.context is not None:  # a namedtuple
        return spec.context(*children)
    return spec.type(children)


def tree_leaves(tree):
    """The leaves of ``tree``, in order."""
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    """The tree with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
