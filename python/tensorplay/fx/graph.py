"""Graph: an ordered list of Nodes with unique names, the edits passes make on it (insert,
erase, copy, dead-code elimination, lint) and its translation to Python source
(python_code), which GraphModule compiles into ``forward``.
"""
import builtins
import contextlib
import copy
import enum
import inspect
import keyword
import math
import re
import warnings

from tensorplay.fx.node import Node, _format_arg, _get_qualified_name, _type_repr, map_arg

__all__ = ['Graph', 'PythonCode', 'CodeGen']

# Python operators the generated code spells as operators (operator.add -> a + b)
reflectable_magic_methods = {
    'add': '{} + {}', 'sub': '{} - {}', 'mul': '{} * {}', 'floordiv': '{} // {}',
    'truediv': '{} / {}', 'div': '{} / {}', 'mod': '{} % {}', 'pow': '{} ** {}',
    'lshift': '{} << {}', 'rshift': '{} >> {}', 'and_': '{} & {}', 'or_': '{} | {}',
    'xor': '{} ^ {}', 'getitem': '{}[{}]', 'matmul': '{} @ {}',
}
magic_methods = {
    'eq': '{} == {}', 'ne': '{} != {}', 'lt': '{} < {}', 'gt': '{} > {}', 'le': '{} <= {}',
    'ge': '{} >= {}', 'pos': '+{}', 'neg': '-{}', 'invert': '~{}', **reflectable_magic_methods,
}
inplace_methods = {
    'iadd': '{} += {}', 'iand': '{} &= {}', 'ifloordiv': '{} //= {}', 'ilshift': '{} <<= {}',
    'imod': '{} %= {}', 'imul': '{} *= {}', 'imatmul': '{} @= {}', 'ior': '{} |= {}',
    'ipow': '{} **= {}', 'irshift': '{} >>= {}', 'isub': '{} -= {}', 'itruediv': '{} /= {}',
    'ixor': '{} ^= {}', 'setitem': '{}[{}] = {}',
}

_snake_case_sub = re.compile(r'(?<=[a-z])([A-Z])').sub
_illegal_char_regex = re.compile('[^0-9a-zA-Z_]+')
# a name's base and its numeric suffix: 'linear_3' -> ('linear', '3')
_name_regex = re.compile(r'^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$')


# names a value may not take (keywords, builtins and the custom builtins below, unless the
# value is that builtin)
_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)
_CUSTOM_BUILTINS = {}


def _custom_builtins():
    """Names every generated function sees, beside Python's builtins."""
    if not _CUSTOM_BUILTINS:
        import tensorplay
        _CUSTOM_BUILTINS.update({'inf': math.inf, 'nan': math.nan, 'NoneType': type(None),
                                 'tensorplay': tensorplay, 'device': tensorplay.device})
        _illegal_names.update(_CUSTOM_BUILTINS)
    return _CUSTOM_BUILTINS


def _snake_case(s):
    """``mod.pascalCase`` -> ``mod.pascal_case``, ``ALL_CAPS`` -> ``all_caps``."""
    return _snake_case_sub(r'_\1', s).lower()


class _Namespace:
    """Unique names for objects: each object gets one name, no two objects the same one,
    and no name shadows a builtin unless the object is that builtin."""

    def __init__(self):
        _custom_builtins()
        self._obj_to_name = {}
        self._used_names = set()
        self._base_count = {}

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub('_', candidate) or '_unnamed'
            if candidate[0].isdigit():
                candidate = f'_{candidate}'
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f'{base}_{num}'
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f'{base}_{num}'
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name, obj):
        if self._obj_to_name.setdefault(obj, name) is not name:
            raise RuntimeError(f"_Namespace: '{obj}' already has a name")

    def _rename_object(self, obj, name):
        self._obj_to_name[obj] = name
        self._used_names.add(name)


class PythonCode:
    """Generated source: ``src`` (a ``def forward(self, ...)``) and the ``globals`` it
    reads (functions and types it names)."""

    def __init__(self, src, globals, _lineno_map=None):
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map


def _format_target(base, target):
    r = base
    for e in target.split('.'):
        r = f'{r}.{e}' if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


def _is_from_tensorplay(obj):
    module = getattr(obj, '__module__', None)
    return isinstance(module, str) and (module == 'tensorplay' or module.startswith('tensorplay.'))


class CodeGen:
    """Turns a Graph into Python source. Subclass it (``Graph.set_codegen``) to change the
    signature (``gen_fn_def``) or the return statement (``generate_output``)."""

    def __init__(self):
        self._body_transformer = None
        self._func_name = 'forward'

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        """``def forward(self, <free_vars>)<annotation>:``"""
        if not free_vars or free_vars[0] != 'self':
            free_vars.insert(0, 'self')
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, repr_fn=repr):
        """The return statement (not indented)."""
        return f'return {repr_fn(output_args)}'

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def additional_globals(self):
        return []

    def _gen_python_code(self, nodes, root_module, namespace, *, verbose=False,
                         include_stride=False, include_device=False, colored=False):
        free_vars, body, globals_, wrapped_fns = [], [], {}, {}
        return_annotation = ['']

        def add_global(name_hint, obj):
            # Note [Generated code names tensorplay]: functions of tensorplay are spelled
            # by their dotted path from the `tensorplay` global (as torch.fx spells torch's),
            # so the code reads as the user wrote it; anything else gets a unique global.
            if _is_from_tensorplay(obj) and obj is not device_type:
                return _get_qualified_name(obj) if callable(obj) and not isinstance(obj, type) \
                    else f'{obj.__module__}.{obj.__qualname__}'
            name = namespace.create_name(name_hint, obj)
            if name in globals_ and globals_[name] is not obj:
                raise RuntimeError(f'python_code: global name {name} already names another object')
            globals_[name] = obj
            return name

        builtins_ = _custom_builtins()
        device_type = builtins_['device']
        for name, obj in builtins_.items():
            add_global(name, obj)
        from tensorplay import Tensor
        from tensorplay._ops import OpOverload

        names = {}

        def node_name(n):
            name = names.get(n)
            if name is None:
                name = names[n] = namespace.create_name(n.name, n)
            return name

        def type_repr(o):
            if o == ():
                return '()'
            if isinstance(o, type):
                return add_global(_type_repr(o), o)
            return repr(o)

        def get_repr(a):
            if isinstance(a, Node):
                return node_name(a)
            t = type(a)
            if t is tuple:
                return f'({get_repr(a[0])},)' if len(a) == 1 else \
                    '(' + ', '.join(get_repr(x) for x in a) + ')'
            if isinstance(a, list):
                return '[' + ', '.join(get_repr(x) for x in a) + ']'
            if isinstance(a, dict):
                return '{' + ', '.join(f'{get_repr(k)}: {get_repr(v)}' for k, v in a.items()) + '}'
            if isinstance(a, tuple) and hasattr(a, '_fields'):
                return f'{add_global(_type_repr(t), t)}{get_repr(tuple(a))}'
            if isinstance(a, OpOverload):
                return _get_qualified_name(a)
            if isinstance(a, enum.Enum):
                return f'{add_global(t.__name__, t)}.{a.name}'
            if isinstance(a, Tensor):
                return f"tensorplay.Tensor(size={list(a.size())}, dtype={str(a.dtype).split('.')[-1]})"
            if t is slice:
                return f'slice({get_repr(a.start)}, {get_repr(a.stop)}, {get_repr(a.step)})'
            if isinstance(a, type):
                return add_global(_type_repr(a), a)
            return repr(a)

        def format_args(args, kwargs):
            res = [get_repr(a) for a in args]
            res.extend(f'{k} = {get_repr(v)}' for k, v in kwargs.items())
            return ', '.join(res)

        # the last user of each value frees it (`x = None`) so memory follows the program
        last_use = {}
        frees = {}
        for n in reversed(nodes):
            for i in n._input_nodes:
                if i not in last_use:
                    last_use[i] = n
                    frees.setdefault(n, []).append(i)

        prev_summary = [None]
        if verbose:
            from tensorplay.fx.passes.shape_prop import _short_type

        def annotation(n):
            if not verbose:
                return '' if n.type is None else f' : {type_repr(n.type)}'
            meta = n.meta.get('val', n.meta.get('tensor_meta'))
            s = _short_type(meta, include_stride, include_device) if meta is not None else None
            if s is not None:
                return f': "{s}"'
            return '' if n.type is None else f' : {type_repr(n.type)}'

        for n in nodes:
            op = n.op
            if verbose and op not in ('placeholder', 'output'):
                summary = '# No stacktrace found for following nodes'
                if n.stack_trace:
                    summary = '# ' + _summarize_stack(n.stack_trace)
                if summary != prev_summary[0]:
                    prev_summary[0] = summary
                    body.append(f'\n{summary}\n')
            ann = annotation(n)
            me = node_name(n)
            if op == 'placeholder':
                default = f' = {get_repr(n.args[0])}' if n.args else ''
                free_vars.append(f'{n.target}{ann}{default}')
                raw = n.target.replace('*', '')
                if raw != me:
                    body.append(f'{me} = {raw}\n')
                continue
            if op == 'call_method':
                body.append(f'{me}{ann} = {_format_target(get_repr(n.args[0]), n.target)}'
                            f'({format_args(n.args[1:], n.kwargs)})')
            elif op == 'call_function':
                t = n.target
                fname = getattr(t, '__name__', None)
                if getattr(t, '__module__', '') == '_operator' and fname in magic_methods:
                    body.append(f'{me}{ann} = ' + magic_methods[fname].format(
                        *(get_repr(a) for a in n.args)))
                elif getattr(t, '__module__', '') == '_operator' and fname in inplace_methods:
                    body.append(inplace_methods[fname].format(*(get_repr(a) for a in n.args))
                                + f';  {me}{ann} = {get_repr(n.args[0])}')
                else:
                    gname = add_global(_get_qualified_name(t), t)
                    if gname == 'getattr' and len(n.args) == 2 and isinstance(n.args[1], str) \
                            and n.args[1].isidentifier():
                        body.append(f'{me}{ann} = {_format_target(get_repr(n.args[0]), n.args[1])}')
                    else:
                        body.append(f'{me}{ann} = {gname}({format_args(n.args, n.kwargs)})')
                    if n.meta.get('is_wrapped', False):
                        wrapped_fns.setdefault(gname)
            elif op == 'call_module':
                body.append(f'{me}{ann} = {_format_target(root_module, n.target)}'
                            f'({format_args(n.args, n.kwargs)})')
            elif op == 'get_attr':
                body.append(f'{me}{ann} = {_format_target(root_module, n.target)}')
            elif op == 'output':
                if n.type is not None:
                    return_annotation[0] = f' -> {type_repr(n.type)}'
                body.append(self.generate_output(n.args[0], repr_fn=get_repr) + '\n')
                continue
            else:
                raise NotImplementedError(f'python_code: node {n.name} has op {op}')
            dead = list(frees.get(n, ()))
            if not n.users:
                dead.append(n)
            if dead:
                body.append(';  ' + ' = '.join([node_name(d) for d in dead] + ['None']) + '\n')
            else:
                body.append('\n')

        if not body:
            body.append('pass\n')
        wrap_stmts = ''
        if wrapped_fns:
            wrap_stmts = '\n'.join(f'tensorplay.fx._symbolic_trace.wrap("{name}")'
                                   for name in wrapped_fns)
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = self.gen_fn_def(free_vars, return_annotation[0])
        code = ''.join(body).lstrip('\n')
        code = '\n'.join('    ' + line for line in code.split('\n'))
        src = f'\n{wrap_stmts}\n\n{prologue}\n{code}'
        return PythonCode(src, globals_)


def _summarize_stack(stack_trace):
    """``File: <file>:<line> in <fn>, code: <source>`` for the innermost frame."""
    lines = stack_trace.strip().split('\n')
    pat = re.compile(r'^File "(.+)", line (\d+), in (.+)$')
    for i in range(len(lines) - 2, -1, -1):
        m = pat.match(lines[i].strip())
        if m:
            return f'File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {lines[i + 1].strip()}'
    return 'No stacktrace found for following nodes'


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        self.graph._insert = self.orig_insert


class _NodeList:
    """A live view of a graph's nodes, in order (``reversed`` walks backwards). Erasing
    the current node while iterating is allowed."""

    def __init__(self, graph, reverse=False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        attr = '_prev' if self._reverse else '_next'
        cur = getattr(root, attr)
        while cur is not root:
            nxt = getattr(cur, attr)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _NodeList(self._graph, not self._reverse)


class Graph:
    """A program as a list of Nodes (see Node for the six ops). Build one with
    ``placeholder`` / ``call_function`` / ... / ``output``, or get one from
    ``symbolic_trace``; ``GraphModule(root, graph)`` turns it into a runnable module.

        g = Graph()
        x = g.placeholder('x')
        g.output(g.call_function(tp.relu, (x,)))
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, '', 'root', '', (), {})
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields = {}
        self._find_nodes = {}  # (op, target) and (op, None) -> {node: None}
        self._insert = self._root.prepend

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        """The nodes in program order (a live view: ``len``, iteration, ``reversed``)."""
        return _NodeList(self)

    # ---- order keys (Note [Node order keys] in node.py)
    def _assign_key(self, n):
        p, q, root = n._prev, n._next, self._root
        if q is root:
            n._sort_key = p._sort_key + 1.0 if p is not root else 0.0
        elif p is root:
            n._sort_key = q._sort_key - 1.0
        else:
            k = (p._sort_key + q._sort_key) / 2
            if p._sort_key < k < q._sort_key:
                n._sort_key = k
            else:
                for i, m in enumerate(self.nodes):
                    m._sort_key = float(i)

    def _check_no_cycle(self, old, new, users):
        """Raises if making ``users`` read ``new`` instead of ``old`` closes a loop (``new``
        is one of them or is computed from one of them)."""
        targets = set(users)
        if new in targets:
            raise RuntimeError(f"replace_all_uses_with: replacing the uses of '{old.name}' by "
                               f"'{new.name}' would make a cycle: '{new.name}' would read itself")
        if new.graph is not self or new._erased or new._sort_key < old._sort_key:
            return  # new comes before old, so before all its users: nothing loops
        seen, stack = set(), [new]
        while stack:
            n = stack.pop()
            for i in n._input_nodes:
                if i in targets:
                    raise RuntimeError(
                        f"replace_all_uses_with: replacing the uses of '{old.name}' by "
                        f"'{new.name}' would make a cycle: '{new.name}' is computed from "
                        f"'{i.name}', which uses '{old.name}'")
                if i not in seen and i._sort_key > old._sort_key:
                    seen.add(i)
                    stack.append(i)

    # ---- building
    def _target_to_str(self, target):
        op = target.__name__ if callable(target) else target
        if op.startswith('__') and op.endswith('__') and len(op) > 4:
            op = op[2:-2]
        return _snake_case(op)

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Makes a node at the insertion point (the end, unless inside ``inserting_before``
        / ``inserting_after``) with a unique name derived from ``name`` or the target.
        A second ``output`` node replaces the graph's output."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f'create_node: args must be a tuple, got {type(args).__name__}')
        if not isinstance(kwargs, dict):
            raise TypeError(f'create_node: kwargs must be a dict, got {type(kwargs).__name__}')
        if op == 'output':
            old = next(iter(self._find_nodes.get(('output', None), ())), None)
            if old is not None:
                return self._replace_output(old, args, kwargs, type_expr)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        tables = self._find_nodes
        tables.setdefault((op, None), {})[n] = None
        if op in ('call_function', 'get_attr', 'call_module', 'call_method'):
            try:
                tables.setdefault((op, target), {})[n] = None
            except TypeError:  # an unhashable target: found by op only
                pass
        return n

    def _replace_output(self, old, args, kwargs, type_expr):
        old.args, old.kwargs, old.type = args, kwargs, type_expr
        old._remove_from_list()
        self._insert(old)
        return old

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes with ``op`` (and ``target``, if given), in program order unless
        ``sort=False``."""
        found = list(self._find_nodes.get((op, target), ()))
        if sort:
            found.sort(key=lambda n: n._sort_key)
        return found

    def erase_node(self, to_erase):
        """Removes a node no other node reads. RuntimeError if it still has users."""
        if to_erase.graph is not self:
            raise RuntimeError(f"erase_node: node '{to_erase.name}' belongs to another graph")
        if to_erase.users:
            raise RuntimeError(f'Tried to erase Node {to_erase} but it still had '
                               f'{len(to_erase.users)} users in the graph: {to_erase.users}!')
        if to_erase._erased:
            warnings.warn(f'erase_node({to_erase}) on an already erased node')
            return
        # unlinked, but keeping its own links, so a loop standing on it walks on
        p, n = to_erase._prev, to_erase._next
        p._next, n._prev = n, p
        to_erase._erased = True
        self._len -= 1
        to_erase.args, to_erase.kwargs = (), {}
        tables = self._find_nodes
        tables.get((to_erase.op, None), {}).pop(to_erase, None)
        try:
            tables.get((to_erase.op, to_erase.target), {}).pop(to_erase, None)
        except TypeError:
            pass

    def inserting_before(self, n=None):
        """``with graph.inserting_before(n):`` new nodes go just before ``n`` (the start
        of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise RuntimeError(f"inserting_before: node '{n.name}' belongs to another graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """``with graph.inserting_after(n):`` new nodes go just after ``n`` (the end of the
        graph when None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise RuntimeError(f"inserting_after: node '{n.name}' belongs to another graph")
        return _InsertPoint(self, n.append)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        """An input named ``name``; ``default_value`` makes it optional."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node('placeholder', name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """Reads the owning module's attribute at the dotted path ``qualified_name``."""
        mod = self.owning_module
        if mod is not None and not _has_path(mod, qualified_name):
            warnings.warn(f'Attempted to insert a get_attr Node with no underlying reference '
                          f"in the owning GraphModule! Call GraphModule.add_submodule to add "
                          f'the necessary submodule, GraphModule.add_parameter to add the '
                          f'necessary Parameter, or nn.Module.register_buffer to add the '
                          f'necessary buffer')
        return self.create_node('get_attr', qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """Calls the owning module's submodule at the dotted path ``module_name``."""
        mod = self.owning_module
        if mod is not None and not _has_path(mod, module_name):
            warnings.warn('Attempted to insert a call_module Node with no underlying module '
                          'in the owning GraphModule! Call GraphModule.add_submodule to add '
                          'the necessary submodule')
        return self.create_node('call_module', module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """Calls ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node('call_method', method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        """Calls ``the_function(*args, **kwargs)``."""
        return self.create_node('call_function', the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        """Makes ``result`` the graph's return value (replacing an existing output)."""
        return self.create_node('output', 'output', (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (from any graph) in this one, its input nodes mapped through
        ``arg_transform``; the meta dict is copied shallowly."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copies the nodes of ``g`` into this graph; ``val_map`` maps g's nodes to ours
        (pre-filled entries are used as they are, e.g. to substitute inputs) and is filled
        in. Returns the value g's output returns, mapped (with the output node too when
        ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == 'output':
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        g = Graph(tracer_cls=self._tracer_cls)
        memo = {} if memo is None else memo
        memo[id(self)] = g
        out = g.graph_copy(self, {}, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if out is not None:
            rv, old = out
            g.output(rv, type_expr=old.type).meta = copy.copy(old.meta)
        return g

    # ---- pickling: flat, so deep graphs do not recurse once per node
    def __reduce__(self):
        index = {n: i for i, n in enumerate(self.nodes)}
        rows = [(n.name, n.op, n.target, map_arg((n.args, n.kwargs), lambda m: _NodeRef(index[m])),
                 n.type, {k: v for k, v in n.meta.items() if k not in _UNPICKLED_META})
                for n in self.nodes]
        return _rebuild_graph, (rows, self._codegen, self._tracer_cls)

    # ---- rewriting
    def eliminate_dead_code(self, is_impure_node=None):
        """Erases nodes nothing reads that have no side effect (``Node.is_impure``, or
        ``is_impure_node(node)``); returns whether anything was erased."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not node.users and not impure:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Checks the graph's invariants: each node belongs to it, reads only nodes that
        come before it, has a unique name and consistent users; call_module and get_attr
        targets exist in the owning module. Raises RuntimeError naming the node."""
        seen_names, seen = set(), set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node.name}' does not belong to this Graph")
            if node.name in seen_names:
                raise RuntimeError(f'Node redefined name {node.name}!')
            seen_names.add(node.name)
            for i in node._input_nodes:
                if i.graph is not self:
                    raise RuntimeError(f"Argument '{i}' of Node '{node}' does not belong to this Graph")
                if i not in seen:
                    raise RuntimeError(f"Argument '{i}' of Node '{node}' was used before it "
                                       'has been defined! Please check that Nodes in the graph '
                                       'are topologically ordered')
                if node not in i.users:
                    raise RuntimeError(f"Node '{node}' reads '{i}' but is not among its users")
            for u in node.users:
                if u._erased or node not in u._input_nodes:
                    raise RuntimeError(f"Node '{node}' lists '{u}' as a user that does not read it")
            if node.op == 'output':
                outputs += 1
            seen.add(node)
        if outputs > 1:
            raise RuntimeError(f'Graph has {outputs} output nodes; a graph returns once')
        mod = self.owning_module
        if mod is not None:
            for node in self.nodes:
                if node.op == 'call_module':
                    sub = _get_path(mod, node.target)
                    from tensorplay.nn import Module
                    if not isinstance(sub, Module):
                        raise RuntimeError(f"Node {node} target {node.target} does not "
                                           "reference an nn.Module")
                elif node.op == 'get_attr' and not _has_path(mod, node.target):
                    raise RuntimeError(f'Node {node} target {node.target} references '
                                       'nonexistent attribute of the owning module')

    def set_codegen(self, codegen):
        self._codegen = codegen

    def python_code(self, root_module, *, verbose=False, include_stride=False,
                    include_device=False, colored=False):
        """The graph as Python source (a PythonCode: ``src`` and ``globals``);
        ``root_module`` is the name the code uses for the module (``'self'``). With
        ``verbose``, lines carry shape annotations from ShapeProp / fake-tensor metadata and
        stack-trace comments."""
        return self._codegen._gen_python_code(
            list(self.nodes), root_module, _Namespace(), verbose=verbose,
            include_stride=include_stride, include_device=include_device, colored=colored)

    def __str__(self):
        placeholder_names = []
        return_typename = ['']
        lines = [n.format_node(placeholder_names, return_typename) for n in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){return_typename[0]}:"
        for line in lines:
            if line:
                s += '\n    ' + line
        return s

    def print_tabular(self):
        """Prints the nodes as a table: opcode, name, target, args, kwargs."""
        rows = [['opcode', 'name', 'target', 'args', 'kwargs']]
        rows += [[n.op, n.name, n._pretty_print_target(n.target), _format_arg(n.args),
                  _format_arg(n.kwargs)] for n in self.nodes]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, '  '.join('-' * w for w in widths))
        print('\n'.join(lines))

    def to_dot(self, name='graph'):
        """The graph as Graphviz DOT text: nodes coloured by op kind, labelled with their
        target and (after ShapeProp or make_fx) their shapes."""
        from tensorplay.fx.passes.graph_drawer import graph_to_dot
        return graph_to_dot(self, name)

    def draw(self, path, format=None):
        """Renders the graph to ``path`` (SVG, PNG or PDF by its extension; ``.dot`` for
        the text) with Graphviz; RuntimeError saying what to install when ``dot`` is
        missing."""
        from tensorplay.fx.passes.graph_drawer import DotGraph
        DotGraph(self.to_dot()).write(path, format)

    def on_generate_code(self, make_transformer):
        """``with graph.on_generate_code(lambda old: new):`` ``new(body_lines)`` rewrites
        the generated body for the block (``old`` is the previous transformer or None)."""
        on_gen_code_old = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(on_gen_code_old)

        @contextlib.contextmanager
        def restore():
            try:
                yield
            finally:
                self._codegen._body_transformer = on_gen_code_old
        return restore()


# fake tensors live in one process; module stacks name classes that may be local
_UNPICKLED_META = frozenset(('val', 'example_value', 'nn_module_stack'))


class _NodeRef:
    __slots__ = ('i',)

    def __init__(self, i):
        self.i = i

    def __reduce__(self):
        return _NodeRef, (self.i,)


def _rebuild_graph(rows, codegen, tracer_cls):
    g = Graph(tracer_cls=tracer_cls)
    g._codegen = codegen
    nodes = []
    for name, op, target, packed, type_expr, meta in rows:
        args, kwargs = _map_refs(packed, nodes)
        n = g.create_node(op, target, args, kwargs, name=name, type_expr=type_expr)
        n.meta = meta
        nodes.append(n)
    return g


def _map_refs(x, nodes):
    if isinstance(x, _NodeRef):
        return nodes[x.i]
    if isinstance(x, tuple) and hasattr(x, '_fields'):
        return type(x)(*(_map_refs(e, nodes) for e in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_map_refs(e, nodes) for e in x)
    if isinstance(x, dict):
        return {k: _map_refs(v, nodes) for k, v in x.items()}
    if type(x) is slice:
        return slice(_map_refs(x.start, nodes), _map_refs(x.stop, nodes), _map_refs(x.step, nodes))
    return x


def _get_path(mod, path):
    for atom in path.split('.'):
        mod = getattr(mod, atom)
    return mod


def _has_path(mod, path):
    try:
        _get_path(mod, path)
        return True
    except AttributeError:
        return False
