"""GraphModule: an nn.Module whose ``forward`` is Python code generated from a Graph; it
holds the submodules, parameters and buffers the graph's call_module / get_attr nodes name.
"""
import copy
import itertools
import linecache

from tensorplay.fx.graph import Graph
from tensorplay.nn import Module

__all__ = ['GraphModule']

_next_id = itertools.count()


def _addindent(s, num_spaces):
    """Indents every line after the first by ``num_spaces`` (blank lines stay empty)."""
    first, *rest = s.split('\n')
    return '\n'.join([first] + [' ' * num_spaces + line if line.strip() else '' for line in rest])


_compiled = {}  # source -> code object, for the most recent sources (Note [Compiled code])


def _exec_forward(src, globals_):
    """Compiles ``src`` (a ``def forward``) with a file name that linecache knows, so
    tracebacks through generated code show its lines."""
    # Note [Compiled code]: recompiling a graph whose code did not change (recompile() after
    # an edit that cancels out, a second GraphModule of one graph) reuses the code object;
    # compile() is most of what recompile() costs.
    code = _compiled.get(src)
    if code is None:
        key = f'<eval_with_key>.{next(_next_id)}'
        linecache.cache[key] = (len(src), None, src.splitlines(True), key)
        code = compile(src, key, 'exec')
        if len(_compiled) >= 64:
            _compiled.pop(next(iter(_compiled)))
        _compiled[src] = code
    g = dict(globals_)
    exec(code, g)
    return g['forward']


def _copy_attr(from_module, to_module, target):
    """Copies the attribute at dotted path ``target`` of ``from_module`` into ``to_module``
    at the same path (intermediate modules made as empty Modules); a buffer stays a buffer."""
    *prefix, field = target.split('.')
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # already installed (a shared parent): nothing to copy
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(from_module, Module) and field in from_module._buffers:
        to_module.register_buffer(field, orig, persistent=field not in
                                  from_module._non_persistent_buffers_set)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target):
    *prefix, field = target.split('.')
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    setattr(to_module, field, from_obj)


class GraphModule(Module):
    """A Module built from ``root`` and ``graph``: ``forward`` runs the graph's generated
    code (``gm.code``). ``root`` is a Module (the submodules and attributes the graph names
    are copied from it) or a dict from dotted path to object.

        gm = GraphModule(model, graph)
        gm.graph.erase_node(...); gm.recompile()
    """

    def __new__(cls, *args, **kwargs):
        # Note [One class per GraphModule]: forward is generated per graph, and a method
        # lives on a class, so each GraphModule gets a class of its own (named after the
        # traced module's class).
        for base in cls.__mro__:
            if base.__dict__.get('_is_graph_module_impl'):
                cls = base.__bases__[0]  # rebuilding from an impl class: derive from its base
                break

        class GraphModuleImpl(cls):
            _is_graph_module_impl = True
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name='GraphModule'):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, 'training'):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ('get_attr', 'call_module'):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = [n.target for n in graph.nodes if n.op in ('get_attr', 'call_module')]
            for t in targets:
                if t not in root:
                    raise RuntimeError(f"Node with target '{t}' references target '{t}' but "
                                       'that target was not provided in ``root``!')
                _assign_attr(root[t], self, t)
        else:
            raise RuntimeError(f'Unsupported type {type(root).__name__} passed for root!')
        self.meta = getattr(root, 'meta', {}) if isinstance(root, Module) else {}
        self.graph = graph

    @property
    def graph(self):
        """The Graph; assigning one takes ownership of it and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f'GraphModule.graph must be a Graph, not {type(g).__name__}')
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of ``forward``."""
        if not hasattr(self, '_code'):
            raise RuntimeError('Code has not been generated! Please report a bug to TensorPlay')
        return self._code

    def recompile(self):
        """Regenerates ``forward`` from the graph (after editing ``self.graph``); returns
        the PythonCode."""
        python_code = self._graph.python_code(root_module='self')
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        cls.forward = _exec_forward(self._code, python_code.globals)
        self._cache_children()
        return python_code

    # Note [GraphModule child cache]
    # Generated code reads submodules as `self.<name>`; a Module keeps them in _modules, so
    # each read would miss the instance dict and run Module.__getattr__ (~0.6 us, most of
    # what a traced forward adds to eager). GraphModule also keeps its direct children in
    # its __dict__. Module.__setattr__ drops that entry when a child is replaced, and the
    # overrides below drop it on delattr / add_module; recompile() refreshes it.
    def _cache_children(self):
        d = self.__dict__
        for name, mod in d['_modules'].items():
            if not hasattr(type(self), name):  # never shadow a method or property
                d[name] = mod

    def _uncache(self, name):
        d = self.__dict__
        if d.get(name) is d.get('_modules', {}).get(name, d):
            del d[name]

    def __delattr__(self, name):
        self._uncache(name)
        super().__delattr__(name)

    def add_module(self, name, module):
        self._uncache(name)
        super().add_module(name, module)

    register_module = add_module

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        """The module as a class definition, with shape annotations from node metadata and
        the source line of each group of nodes; printed unless ``print_output=False``."""
        return _print_readable(self, self._get_name(), print_output, include_stride,
                               include_device)

    def add_submodule(self, target, m):
        """Installs module ``m`` at dotted path ``target``, making empty Modules on the
        way; False if a non-Module attribute is in the way."""
        *prefix, field = target.split('.')
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        if mod is self:
            self._cache_children()
        return True

    def delete_submodule(self, target):
        """Removes the submodule at dotted path ``target``; False if there is none."""
        *path, name = target.split('.')
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, name) or not isinstance(getattr(mod, name), Module):
            return False
        delattr(mod, name)
        return True

    def delete_all_unused_submodules(self):
        """Removes every submodule that no call_module / get_attr node reaches."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ('call_module', 'get_attr'):
                atoms = node.target.split('.')
                for i in range(1, len(atoms) + 1):
                    used.add('.'.join(atoms[:i]))
                if node.op == 'call_module':
                    sub = self.get_submodule(node.target)
                    for name, _ in sub.named_modules():
                        if name:
                            used.add(f'{node.target}.{name}')
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __copy__(self):
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, 'meta', {})
        return res

    def __deepcopy__(self, memo):
        res = Module.__new__(type(self))
        memo[id(self)] = res
        state = {k: v for k, v in self.__dict__.items() if k != '_graph'}
        state = copy.deepcopy(state, memo)
        res.__dict__.update(state)
        res.graph = copy.deepcopy(self._graph, memo)
        return res

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ('_graph', '_code')}
        return _rebuild_graph_module, (state, self._graph, self._get_name())

    def __str__(self):
        return '\n'.join([super().__str__(), self._code])


def _rebuild_graph_module(state, graph, class_name):
    gm = GraphModule.__new__(GraphModule)
    gm.__dict__.update(state)
    type(gm).__name__ = class_name
    gm.graph = graph
    return gm


def _print_readable(module, module_name, print_output, include_stride, include_device):
    code = module.graph.python_code(root_module='self', verbose=True,
                                    include_stride=include_stride,
                                    include_device=include_device).src.lstrip('\n')
    code = _addindent(f'class {module_name}(tensorplay.nn.Module):\n' + code, 4)
    subs = ['']
    for name, sub in module.named_children():
        if isinstance(sub, GraphModule):
            subs.append(_print_readable(sub, name, False, include_stride, include_device))
    out = code + _addindent('\n'.join(subs), 4)
    if print_output:
        print(out)
    return out
