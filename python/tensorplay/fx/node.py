"""Node: one operation of a Graph (placeholder, get_attr, call_function, call_method,
call_module, output), its arguments, its users and its metadata; plus the helpers that
walk nested arguments (map_arg, map_aggregate) and name call targets.
"""
import builtins
import operator
import types

from tensorplay._ops import OpOverload, OpOverloadPacket
from tensorplay.fx.immutable_collections import immutable_dict, immutable_list

__all__ = ['Node', 'map_arg', 'map_aggregate', 'has_side_effect']

_OPS = frozenset(('placeholder', 'call_method', 'call_module', 'call_function', 'get_attr',
                  'output', 'root'))

# call_function targets dead-code elimination keeps although nothing reads their result
_side_effectful_functions = {operator.setitem}


def has_side_effect(fn):
    """Marks ``fn`` as side-effectful: a call_function node of it survives dead-code
    elimination. Returns ``fn`` (usable as a decorator)."""
    _side_effectful_functions.add(fn)
    return fn


_RANDOM_NAMES = []


def _random_names():
    """Names of the functions whose aten op draws random numbers (rand_like, dropout, ...)."""
    if not _RANDOM_NAMES:
        from tensorplay._ops import Tag, ops
        # the functional dropouts reach native_dropout only when training
        names = {'dropout', 'dropout1d', 'dropout2d', 'dropout3d', 'alpha_dropout',
                 'feature_alpha_dropout'}
        for name in dir(ops.aten):
            packet = getattr(ops.aten, name, None)
            if hasattr(packet, 'overloads') and any(
                    Tag.nondeterministic_seeded in getattr(packet, o).tags
                    for o in packet.overloads()):
                names.add(name)
        _RANDOM_NAMES.append(frozenset(names))
    return _RANDOM_NAMES[0]


def _find_module_of(fn):
    module = getattr(fn, '__module__', None)
    if module is not None:
        return module
    import tensorplay
    for guess in (tensorplay, tensorplay.nn.functional):
        if getattr(guess, fn.__name__, None) is fn:
            return guess.__name__
    raise RuntimeError(f'cannot find the module of {fn}')


def _get_qualified_name(fn):
    """The dotted name generated code uses for ``fn`` (``tensorplay.relu``,
    ``operator.add``, ``tensorplay.ops.aten.add.Tensor``, ``getattr``)."""
    if isinstance(fn, OpOverload):
        return f'tensorplay.ops.{fn.namespace}.{fn._opname}.{fn._overloadname}'
    if isinstance(fn, OpOverloadPacket):
        return f'tensorplay.ops.{fn._namespace}.{fn._opname}'
    name = fn.__name__
    if getattr(builtins, name, None) is fn:
        return name
    qualname = getattr(fn, '__qualname__', name)
    if qualname.startswith('Tensor.') and getattr(fn, '__module__', None) == 'tensorplay':
        return f'tensorplay.{qualname}'
    if name == '<lambda>':
        raise RuntimeError('Unable to represent lambda')
    module = _find_module_of(fn)
    if module == '_operator':
        module = 'operator'
    return f'{module}.{name}'


def _type_repr(obj):
    if isinstance(obj, type):
        if obj.__module__ == 'builtins':
            return obj.__qualname__
        return f'{obj.__module__}.{obj.__qualname__}'
    if obj is ...:
        return '...'
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg, max_list_len=float('inf')):
    if isinstance(arg, (list, tuple)):
        items = ', '.join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = '' if len(arg) < max_list_len + 1 else f', ...[total_len={len(arg)}]'
        if isinstance(arg, list):
            return f'[{items}{more}]'
        return f"({items}{',' if len(arg) == 1 else ''}{more})"
    if isinstance(arg, dict):
        return '{' + ', '.join(f'{k}: {_format_arg(v)}' for k, v in arg.items()) + '}'
    if isinstance(arg, Node):
        return '%' + arg.name
    return str(arg)


class Node:
    """One operation of a Graph.

    ``op`` is one of ``placeholder`` (an input; ``target`` its parameter name),
    ``get_attr`` (a parameter, buffer or attribute of the owning module; ``target`` its
    dotted path), ``call_function`` (``target`` a callable), ``call_method`` (``target``
    the method name, called on ``args[0]``), ``call_module`` (``target`` a submodule's
    dotted path) and ``output`` (``args[0]`` the returned value). ``args`` / ``kwargs``
    hold constants and other Nodes of the same graph; ``users`` the Nodes that read this
    one; ``meta`` anything passes attach (``'val'``, ``'tensor_meta'``, ``'stack_trace'``).
    """

    # Note [Node order keys]
    # Each node carries a float _sort_key increasing along the graph's list, so "is a
    # before b" is one comparison (used by lint and the cycle check of
    # replace_all_uses_with). Inserting between two nodes takes the midpoint; when the
    # floats run out of room the graph renumbers all keys.
    __slots__ = ('graph', 'name', 'op', 'target', '_args', '_kwargs', '_input_nodes', 'users',
                 'type', 'meta', '_prev', '_next', '_erased', '_sort_key', '__weakref__')

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Node: op must be one of {sorted(_OPS - {'root'})}, got '{op}'")
        if op in ('call_method', 'call_module', 'get_attr', 'placeholder') and \
                not isinstance(target, str):
            raise ValueError(f"Node {name}: the target of a {op} node must be a string, "
                             f'not {type(target).__name__}')
        if op == 'call_function' and not callable(target):
            raise ValueError(f'Node {name}: the target of a call_function node must be '
                             f'callable, not {target!r}')
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self.meta = {}
        self._prev = self._next = self
        self._erased = False
        self._sort_key = 0.0
        self._args = ()
        self._kwargs = {}
        self.__update_args_kwargs(args, kwargs)

    # ---- list links
    @property
    def next(self):
        """The node after this one in the graph (the graph's root sentinel at the end)."""
        return self._next

    @property
    def prev(self):
        """The node before this one."""
        return self._prev

    def prepend(self, x):
        """Inserts node ``x`` (moving it if it is already in the graph) just before this one."""
        if self is x:
            raise ValueError('Node.prepend: cannot prepend a node to itself')
        if x.graph is not self.graph:
            raise ValueError(f"Node.prepend: node '{x.name}' belongs to another graph than "
                             f"'{self.name}'")
        if x._erased or self._erased:
            raise ValueError(f"Node.prepend: node '{(x if x._erased else self).name}' was erased")
        if x._next is not x:  # unlink it first
            x._prev._next, x._next._prev = x._next, x._prev
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x
        self.graph._assign_key(x)

    def append(self, x):
        """Inserts node ``x`` just after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments
    @property
    def args(self):
        """The positional arguments (a tuple; Nodes inside are this node's inputs)."""
        return self._args

    @args.setter
    def args(self, a):
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        """The keyword arguments (a dict; Nodes inside are this node's inputs)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        """The Nodes this one reads, in order of first appearance in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        """Sets ``args[idx]``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        """Inserts a positional argument at ``idx``."""
        args = list(self._args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        """Sets ``kwargs[key]``."""
        self.kwargs = {**self._kwargs, key: arg}

    def __update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        inputs = {}

        def collect(n):
            if n.graph is not self.graph:
                raise ValueError(f"Node '{self.name}': argument '{n.name}' belongs to another graph")
            inputs.setdefault(n)
            return n
        self._args = map_arg(tuple(new_args), collect)
        self._kwargs = map_arg(dict(new_kwargs), collect)
        self._input_nodes = inputs
        for n in inputs:
            n.users.setdefault(self)

    @property
    def stack_trace(self):
        """The Python stack (as text) where the node was made, if recorded."""
        return self.meta.get('stack_trace', None)

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta['stack_trace'] = trace

    def __repr__(self):
        return self.name

    # ---- edits
    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Makes every user of this node (those for which ``delete_user_cb(user)`` is true)
        read ``replace_with`` instead; returns the users changed. ``propagate_meta`` copies
        this node's meta onto ``replace_with`` (which must have none). Raises RuntimeError
        when the change would make a node depend on itself."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError('Called node.replace_all_uses_with(replace_with, '
                                   'propagate_meta=True), but replace_with already has .meta keys')
            replace_with.meta.update(self.meta)
        users = [u for u in self.users if delete_user_cb is None or delete_user_cb(u)]
        if isinstance(replace_with, Node) and users:
            self.graph._check_no_cycle(self, replace_with, users)
        for u in users:
            u._replace_input_with(self, replace_with)
        return users

    def replace_input_with(self, old_input, new_input):
        """Replaces every occurrence of ``old_input`` in args and kwargs by ``new_input``."""
        self._replace_input_with(old_input, new_input)

    def _replace_input_with(self, old, new):
        def swap(n):
            return new if n is old else n
        self.__update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random=True):
        """Whether dead-code elimination must keep this node although no one reads it:
        inputs, outputs, side-effectful functions, in-place methods, mutating ops, modules
        marked ``_is_impure``, and (with ``impure_random``) ops that draw random numbers."""
        if self.op in ('placeholder', 'output'):
            return True
        if self.op == 'call_function':
            t = self.target
            if t in _side_effectful_functions:
                return True
            schema = getattr(t, '_schema', None)
            if schema is not None:
                if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
                    return True
                if impure_random:
                    from tensorplay._ops import Tag
                    return Tag.nondeterministic_seeded in getattr(t, 'tags', ())
                return False
            return impure_random and getattr(t, '__module__', '').startswith('tensorplay') and \
                getattr(t, '__name__', None) in _random_names()
        if self.op == 'call_method':
            return (self.target.endswith('_') and not self.target.endswith('__')) or \
                (impure_random and self.target in _random_names())
        if self.op == 'call_module':
            mod = self.graph.owning_module
            if mod is None:
                raise RuntimeError('Node.is_impure: the graph has no owning module to look '
                                   f"'{self.target}' up in")
            return getattr(mod.get_submodule(self.target), '_is_impure', False)
        return False

    # ---- printing
    def _pretty_print_target(self, target):
        if isinstance(target, str):
            return target
        if hasattr(target, '__module__') or hasattr(target, '_schema'):
            try:
                return _get_qualified_name(target)
            except (RuntimeError, AttributeError):
                pass
        return str(target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """A one-line description (``%name : [num_users=N] = op[target=...](args = ...)``).
        With ``placeholder_names`` (as Graph.__str__ passes), a placeholder adds its name
        there and returns None."""
        typename = f'{_type_repr(self.type)} ' if self.type is not None else ''
        if self.op == 'placeholder':
            arg_str = self.target
            if self.type:
                arg_str += f': {_type_repr(self.type)}'
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default = f'(default={self.args[0]})' if self.args else ''
            return (f'%{self.name} : {typename}[num_users={len(self.users)}] = '
                    f'{self.op}[target={self.target}]{default}')
        if self.op == 'get_attr':
            return (f'%{self.name} : {typename}[num_users={len(self.users)}] = '
                    f'{self.op}[target={self._pretty_print_target(self.target)}]')
        if self.op == 'output':
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f' -> {_type_repr(self.type)}'
            return f'return {self.args[0]}'
        return (f'%{self.name} : {typename}[num_users={len(self.users)}] = '
                f'{self.op}[target={self._pretty_print_target(self.target)}]('
                f'args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})')


def map_arg(a, fn):
    """``a`` with each Node inside (at any depth of tuples, lists, dicts and slices)
    replaced by ``fn(node)``."""
    if not callable(fn):
        raise TypeError('map_arg: the second argument must be callable')
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a, fn):
    """``a`` with each leaf (anything not a tuple, list, dict or slice) replaced by
    ``fn(leaf)``; lists become immutable_list and dicts immutable_dict, named tuples
    keep their type."""
    t = type(a)
    if t is tuple:
        return tuple(map_aggregate(e, fn) for e in a)
    if t is list or t is immutable_list:
        return immutable_list(map_aggregate(e, fn) for e in a)
    if t is dict or t is immutable_dict:
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, tuple):
        mapped = [map_aggregate(e, fn) for e in a]
        return t(*mapped) if hasattr(a, '_fields') else t(mapped)
    if t is slice:
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)
