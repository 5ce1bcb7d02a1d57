"""Symbolic tracing: Tracer runs a module's forward (or a function) on Proxies and records
the calls it makes into a Graph; ``symbolic_trace`` wraps the result in a GraphModule.
``wrap`` marks a module-level function to be recorded as one call instead of traced into.
"""
import builtins
import collections
import functools
import inspect
import math
import types

import tensorplay
from tensorplay import Tensor, nn
from tensorplay.fx.graph import Graph
from tensorplay.fx.graph_module import GraphModule
from tensorplay.fx.node import has_side_effect, map_aggregate
from tensorplay.fx.proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase

__all__ = ['Tracer', 'symbolic_trace', 'wrap', 'PH', 'PHBase', 'is_fx_tracing']

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_is_fx_tracing_flag = False


def is_fx_tracing():
    """Whether a symbolic trace is running."""
    return _is_fx_tracing_flag


class PHBase:
    """The object of ``concrete_args`` that stays an input (the rest are fixed values)."""

    def __repr__(self):
        return 'PH'


PH = PHBase()


@has_side_effect
def _assert_is_none(value, msg):
    """The check a graph keeps for an input traced with ``concrete_args={name: None}``."""
    assert value is None, msg


class _Patcher:
    """Swaps attributes of dicts and classes for the length of a trace, then puts every
    one back (in reverse order)."""

    def __init__(self):
        self._undo = []
        self._visited = set()

    def patch(self, frame_dict, name, new_fn):
        if name in frame_dict:
            self._undo.append((frame_dict.__setitem__, name, frame_dict[name]))
        else:
            self._undo.append((lambda n, _v, d=frame_dict: d.pop(n, None), name, None))
        frame_dict[name] = new_fn

    def patch_method(self, cls, name, new_fn):
        self._undo.append((functools.partial(setattr, cls), name, getattr(cls, name)))
        setattr(cls, name, new_fn)

    def visit_once(self, thing):
        """True the first time ``thing`` is seen during this trace."""
        if id(thing) in self._visited:
            return False
        self._visited.add(id(thing))
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            setter, name, value = self._undo.pop()
            setter(name, value)


# (id of a module's globals, function name) -> the globals, for wrap()
_wrapped_fns_to_patch = {}


def wrap(fn_or_name):
    """At module scope, ``wrap('f')`` (or ``wrap(f)``) makes symbolic tracing record calls
    of the module's ``f`` that receive a Proxy as one ``call_function`` node instead of
    tracing into ``f``. Returns its argument.

        def cap(x):
            return x if len(x) < 4 else x[:4]
        tp.fx.wrap('cap')"""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise TypeError('wrap: expected a function or a function name, got '
                        f'{type(fn_or_name).__name__}')
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != '<module>':
        raise NotImplementedError('wrap must be called at the top level of a module')
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _find_proxy(args, kwargs):
    found = []

    def look(x):
        if not found and isinstance(x, Proxy):
            found.append(x)
    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None


def _create_wrapped_func(orig_fn):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy('call_function', orig_fn, args, kwargs)
            out.node.meta['is_wrapped'] = True
            return out
        return orig_fn(*args, **kwargs)
    return wrapped


def _autowrap_check(patcher, frame_dict, function_ids):
    if patcher.visit_once(frame_dict):
        for name, value in list(frame_dict.items()):
            if not name.startswith('_') and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


def _patch_function(fn, nargs):
    """``fn`` with its ``*args`` / ``**kwargs`` turned into plain positional parameters
    (so the Proxies of the variadic placeholders are passed as the tuple and dict)."""
    co = fn.__code__
    new_code = co.replace(co_flags=co.co_flags & ~_HAS_VARSTUFF, co_argcount=nargs,
                          co_kwonlyargcount=0)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


class Tracer(TracerBase):
    """Turns a module or function into a Graph by running it on Proxies.

    Calls of leaf modules (those of ``tensorplay.nn`` other than Sequential, unless
    ``is_leaf_module`` is overridden) become ``call_module`` nodes named by their dotted
    path; other modules are traced into. Parameters read in forward become ``get_attr``
    nodes. ``autowrap_modules`` / ``autowrap_functions``: functions recorded as one call
    when given a Proxy (``math`` by default). ``param_shapes_constant``: a parameter's
    shape, size and dim are its real values, not recorded nodes."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for m in autowrap_modules for name, value in m.__dict__.items()
            if not name.startswith('_') and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root_module_name = ''
        self.scope = Scope('', None)
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self.node_name_to_scope = {}

    def create_arg(self, a):
        """Tracer's additions to TracerBase.create_arg: a parameter, buffer or submodule of
        the root becomes a ``get_attr`` of its path; any other tensor is kept on the root as
        ``_tensor_constant<N>`` and read with a ``get_attr``."""
        if isinstance(a, nn.Parameter):
            name = self._param_names().get(id(a))
            if name is None:
                raise NameError('parameter is not a member of this module')
            return self.create_node('get_attr', name, (), {})
        if isinstance(a, Tensor):
            name = self._buffer_names().get(id(a))
            if name is not None:
                return self.create_node('get_attr', name, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                qualname = self.get_fresh_qualname('_tensor_constant')
                self.tensor_attrs[id(a)] = qualname
                self._constants.append(a)  # keeps id(a) unique for the trace
                setattr(self.root, qualname, a)
            return self.create_node('get_attr', qualname, (), {})
        if isinstance(a, nn.Module):
            for n, m in self.root.named_modules():
                if a is m:
                    return self.create_node('get_attr', n, (), {})
        return super().create_arg(a)

    def _param_names(self):
        if self._param_name_cache is None:
            names = {}
            for n, p in self.root.named_parameters():
                names.setdefault(id(p), n)
            self._param_name_cache = names
        return self._param_name_cache

    def _buffer_names(self):
        if self._buffer_name_cache is None:
            names = {}
            for n, b in self.root.named_buffers():
                names.setdefault(id(b), n)
            self._buffer_name_cache = names
        return self._buffer_name_cache

    def is_leaf_module(self, m, module_qualified_name):
        """Whether a call of ``m`` is recorded as one ``call_module`` node (TensorPlay's own
        layers, Sequential excepted) rather than traced into."""
        module = type(m).__module__
        return (module.startswith('tensorplay.nn') or module.startswith('torch.nn')) and \
            not isinstance(m, nn.Sequential)

    def path_of_module(self, mod):
        """The dotted path of submodule ``mod`` in the root (its first path when shared).
        NameError if it is not in the root."""
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError('module is not installed as a submodule')
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError('module is not installed as a submodule')

    def call_module(self, m, forward, args, kwargs):
        """A submodule called during the trace: a leaf becomes a ``call_module`` node,
        anything else is traced into (``forward(*args, **kwargs)``)."""
        qualname = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(qualname, type(m))) as scope:
            self.module_stack[scope.module_path] = (qualname, scope.module_type)
            try:
                if not self.is_leaf_module(m, qualname):
                    return forward(*args, **kwargs)
                return self.create_proxy('call_module', qualname, args, kwargs)
            finally:
                self.module_stack.popitem(last=True)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A module attribute read during the trace: a parameter of the root becomes one
        ``get_attr`` node (shared by later reads); anything else is returned as it is."""
        if isinstance(attr_val, nn.Parameter):
            name = self._param_names().get(id(attr_val))
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            name = self._buffer_names().get(id(attr_val))
        else:
            return attr_val
        if name is None:
            return attr_val
        if name not in parameter_proxy_cache:
            factory = None
            if self.param_shapes_constant and isinstance(attr_val, nn.Parameter):
                def factory(node, name=name, p=attr_val):
                    return ParameterProxy(self, node, name, p)
            parameter_proxy_cache[name] = self.create_proxy('get_attr', name, (), {},
                                                            proxy_factory_fn=factory)
        return parameter_proxy_cache[name]

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """The placeholders for ``root_fn``'s parameters (``self`` excepted for a module),
        and the function to call with them."""
        fn = inspect.unwrap(root_fn)
        co = fn.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names = iter(co.co_varnames)
        args = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError('``self`` argument cannot be part of *args expansion!')
            skip = 1
            next(names)
            args.append(self.root)
        sig = inspect.signature(fn)
        if isinstance(concrete_args, tuple) and concrete_args and co.co_flags & _HAS_VARSTUFF \
                and total_args == 1:
            for i, c in enumerate(concrete_args):
                args.append(self.create_proxy('placeholder', f'input_{i}', (), {}))
            return root_fn, args
        arg_names = [next(names) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f'Tracing expected {len(arg_names)} arguments but got '
                                   f'{len(concrete_args)} concrete arguments')
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._proxy_placeholder(n, concrete_args, sig, fn) for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder('*' + next(names), concrete_args, sig, fn))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder('**' + next(names), concrete_args, sig, fn))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name, concrete_args, sig, fn):
        if concrete_args is not None and name in concrete_args:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            count = [0]

            def replace_ph(x):
                count[0] += 1
                out = self.create_proxy('placeholder', f'{name}_{count[0]}', default, {})
                if isinstance(x, PHBase):
                    return out
                if type(x) in (bool, int, float, str, complex):
                    tensorplay._assert(out == x, f'{name} has been specialized to have value '
                                                 f'{x} but got another value')
                elif x is None:
                    self.create_proxy('call_function', _assert_is_none,
                                      (out, f'{name} has been specialized to have value None '
                                            'but got another value'), {})
                else:
                    import warnings
                    warnings.warn(f'Was not able to add assertion to guarantee correct input '
                                  f'{name} to specialized function. It is up to the user to '
                                  'make sure that your inputs match the inputs you specialized '
                                  'the function with.')
                return x
            return _tree_map(replace_ph, concrete_args[name])
        if name[0] == '*':
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy('placeholder', name, default, {},
                                 type_expr=fn.__annotations__.get(name, None))

    def trace(self, root, concrete_args=None):
        """Traces ``root`` (a Module, whose ``forward`` runs, or a function) and returns the
        Graph. A function's constants are kept on a fresh Module, ``self.root``."""
        global _is_fx_tracing_flag
        old_flag, _is_fx_tracing_flag = _is_fx_tracing_flag, True
        try:
            if isinstance(root, nn.Module):
                self.root = root
                fn = type(root).forward
                self.submodule_paths = {}
                for name, mod in root.named_modules():
                    self.submodule_paths.setdefault(mod, name)
            else:
                self.root = nn.Module()
                fn = root
            self._param_name_cache = self._buffer_name_cache = None
            self.graph = Graph(tracer_cls=getattr(self, '__class__', None))
            if hasattr(fn, '__code__'):
                code = fn.__code__
                self.graph._co_fields = {'co_name': code.co_name, 'co_filename': code.co_filename,
                                         'co_firstlineno': code.co_firstlineno}
            # tensors held as plain attributes of modules are read with get_attr of their path
            self.tensor_attrs = {}
            self._constants = []
            for path, m in self.root.named_modules():
                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs.setdefault(id(v), f'{path}.{k}' if path else k)
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, nn.Module), concrete_args)
            parameter_proxy_cache = {}
            orig_getattr = nn.Module.__getattr__
            orig_call = nn.Module.__call__
            tracer = self

            def module_getattr_wrapper(mod, attr):
                return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return orig_call(mod, *args, **kwargs)
                _autowrap_check(patcher, getattr(getattr(mod, 'forward', mod), '__globals__', {}),
                                tracer._autowrap_function_ids)
                return tracer.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(nn.Module, '__getattr__', module_getattr_wrapper)
                patcher.patch_method(nn.Module, '__call__', module_call_wrapper)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                self.create_node('output', 'output', (self.create_arg(fn(*args)),), {},
                                 type_expr=fn.__annotations__.get('return', None))
            self.submodule_paths = None
            return self.graph
        finally:
            _is_fx_tracing_flag = old_flag

    def get_fresh_qualname(self, prefix):
        """``prefix<N>`` for the first N the root has no attribute of."""
        i = 0
        while hasattr(self.root, f'{prefix}{i}'):
            i += 1
        return f'{prefix}{i}'


def _patch_wrapped_functions(patcher):
    for (_, name), frame_dict in _wrapped_fns_to_patch.items():
        if name not in frame_dict and hasattr(builtins, name):
            orig = getattr(builtins, name)
        else:
            orig = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig))


def _tree_map(fn, x):
    if isinstance(x, (list, tuple)) and not hasattr(x, '_fields'):
        return type(x)(_tree_map(fn, e) for e in x)
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    return fn(x)


def symbolic_trace(root, concrete_args=None):
    """Traces ``root`` (a Module or function) with a Tracer and returns a GraphModule.

        gm = tp.fx.symbolic_trace(model)
        print(gm.code)

    ``concrete_args`` fixes some inputs to values (the graph asserts them), e.g. a flag that
    selects a branch."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
