"""Proxy: the stand-in value symbolic tracing runs a program on. Every operation on a
Proxy (an operator, a method call, an attribute, a TensorPlay function reached through
``__torch_function__``) records a Node in the tracer's graph and returns a new Proxy.
"""
import dis
import enum
import inspect
import linecache
import operator
import os

from tensorplay import Tensor
from tensorplay._ops import OpOverload
from tensorplay.fx.graph import magic_methods, reflectable_magic_methods
from tensorplay.fx.node import Node, map_aggregate

__all__ = ['TraceError', 'TracerBase', 'GraphAppendingTracer', 'Proxy', 'Attribute',
           'ParameterProxy', 'Scope', 'ScopeContextManager']

_FX_DIR = os.path.dirname(os.path.abspath(__file__))
_TP_DIR = os.path.dirname(_FX_DIR)


class TraceError(ValueError):
    """A traced program did something a symbolic value cannot do (branch on it, iterate
    it); the message names the user's line."""


def _user_frame_summary():
    """'  File "...", line N, in fn\\n    <source>' for the innermost frame outside
    TensorPlay (the user's line that used the Proxy)."""
    f = inspect.currentframe()
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_TP_DIR):
        f = f.f_back
    if f is None:
        return ''
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f'\n  File "{f.f_code.co_filename}", line {f.f_lineno}, in {f.f_code.co_name}\n    {src}'


class Scope:
    """The module being traced: its dotted path and type (``node.meta['nn_module_stack']``)."""

    def __init__(self, module_path, module_type):
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets the tracer's scope for the block and restores it after."""

    def __init__(self, scope, current_scope):
        self._prev_scope = Scope(scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self):
        return self._scope

    def __exit__(self, *args):
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


_BASE_TYPES = None


def _base_types():
    global _BASE_TYPES
    if _BASE_TYPES is None:
        import tensorplay
        _BASE_TYPES = frozenset((str, int, float, bool, complex, type(None), type(...),
                                 tensorplay.dtype, tensorplay.device, tensorplay.memory_format,
                                 range, bytes))
    return _BASE_TYPES


class TracerBase:
    """What a Proxy needs from its tracer: a graph to append to, ``create_proxy`` and
    ``create_arg``, and the answers to control flow (``to_bool``, ``iter``, ``keys``)."""
    graph = None
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = 'forward'
    scope = None
    module_stack = None
    node_name_to_scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Appends a node to the graph (with the current module stack in its meta)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.module_stack:
            node.meta['nn_module_stack'] = dict(self.module_stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Records ``kind(target)(*args, **kwargs)`` (arguments turned into graph values
        by ``create_arg``) and returns its Proxy."""
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs),
                                name, type_expr)
        if self.record_stack_traces:
            node.stack_trace = _stack_trace_text()
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """``a`` as a graph argument: Proxies become their nodes, containers are walked,
        constants kept. NotImplementedError for values a graph cannot hold."""
        t = type(a)
        if t in _base_types():
            return a
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, '__fx_create_arg__'):
            return a.__fx_create_arg__(self)
        if t is tuple or t is list or isinstance(a, list):
            r = [self.create_arg(e) for e in a]
            return tuple(r) if isinstance(a, tuple) else r
        if isinstance(a, tuple):
            args = tuple(self.create_arg(e) for e in a)
            if hasattr(a, '_fields'):
                return t(*args)
            return t(args)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(f'Keys for dictionaries used as an argument cannot contain '
                                       f'a Node. Got key: {k}')
                out[k] = self.create_arg(v)
            return out
        if t is slice:
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Node):
            return a
        if isinstance(a, (OpOverload, enum.Enum, Tensor)):
            return a
        raise NotImplementedError(f'argument of type: {type(a)}')

    def to_bool(self, obj):
        """A Proxy in ``if``/``while``/``and``/``bool()``: raises TraceError (override to
        pick a branch)."""
        raise TraceError('symbolically traced variables cannot be used as inputs to control '
                         'flow' + _user_frame_summary())

    def iter(self, obj):
        """A Proxy iterated (other than unpacked to a fixed number of names): TraceError."""
        raise TraceError('Proxy object cannot be iterated. This can be attempted when the '
                         'Proxy is used in a loop or as a *args or **kwargs function argument. '
                         'Unpack it to a fixed number of names, or trace with concrete_args'
                         + _user_frame_summary())

    def keys(self, obj):
        """``**proxy``: records ``proxy.keys()``."""
        return Attribute(obj, 'keys')()


def _stack_trace_text():
    import traceback
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_TP_DIR)]
    return ''.join(traceback.format_list(frames))


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (to build nodes with Proxy arithmetic)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = Scope('', None)
        self.module_stack = {}
        self.node_name_to_scope = {}


_TENSOR_METHODS = None


def _tensor_methods():
    global _TENSOR_METHODS
    if _TENSOR_METHODS is None:
        import tensorplay
        from tensorplay import overrides
        _TENSOR_METHODS = frozenset(overrides.get_overridable_functions().get(tensorplay.Tensor, ()))
    return _TENSOR_METHODS


# Note [Functional calls as torch.fx records them]
# PyTorch's Python-level nn.functional functions hand __torch_function__ their required
# parameters by position and every parameter with a default by keyword (F.softmax(x, -1)
# reaches it as softmax(x, dim=-1, _stacklevel=3, dtype=None)); its C++ ones hand the call
# as made. Ours are all Python wrappers that hand the call as made, so Proxy re-binds calls
# of the functions that are Python in PyTorch: the graph, its node arguments and code then
# read as torch.fx's for the same program.
_FUNCTIONAL_AS_CALLED = frozenset("""
    adaptive_avg_pool1d avg_pool1d avg_pool2d avg_pool3d bilinear celu_ channel_shuffle conv1d
    conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity elu_
    gelu hardshrink hardtanh_ leaky_relu_ linear logsigmoid native_channel_shuffle one_hot
    pairwise_distance pdist pixel_shuffle pixel_unshuffle prelu relu_ rrelu_
    scaled_dot_product_attention selu_ softplus softshrink threshold_
""".split())
_binders = {}


def _functional_binder(fn):
    b = _binders.get(fn, False)
    if b is not False:
        return b
    b = None
    if getattr(fn, '__module__', None) == 'tensorplay.nn.functional' and \
            fn.__name__ not in _FUNCTIONAL_AS_CALLED:
        try:
            sig = inspect.signature(getattr(fn, '__wrapped__', fn))
        except (TypeError, ValueError):
            sig = None
        if sig is not None and all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                                   for p in sig.parameters.values()):
            required = [n for n, p in sig.parameters.items() if p.default is p.empty]
            optional = [n for n, p in sig.parameters.items() if p.default is not p.empty]

            def b(args, kwargs, sig=sig, required=required, optional=optional):
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                a = bound.arguments
                return tuple(a[n] for n in required), {n: a[n] for n in optional}
    _binders[fn] = b
    return b


class Proxy:
    """A value of the program being traced: operations on it record nodes.

    ``x + 1`` records ``operator.add``, ``x.view(2, 3)`` a ``call_method``,
    ``tp.relu(x)`` / ``F.linear(x, w)`` a ``call_function`` (via ``__torch_function__``),
    ``x.shape`` a ``getattr``. Branching on a Proxy raises TraceError."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f'Proxy({self.node.name})'

    def __getattr__(self, k):
        if k.startswith('__') and k.endswith('__'):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        import copy
        new_dict = {k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()}
        new = object.__new__(type(self))
        new.__dict__ = new_dict
        return new

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy('call_method', '__call__', (self,) + args, kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        inst = _instruction_at(frame.f_code, frame.f_lasti)
        if inst is not None and inst.opname == 'UNPACK_SEQUENCE':
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call tensorplay.fx.wrap('len') at "
                           'module scope')

    def keys(self):
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = {}

        def find_tracer(a):
            if isinstance(a, Proxy):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f'Found multiple different tracers {list(tracers)} while trying '
                               f'to trace operations {orig_method}')
        tracer = next(iter(tracers))
        if orig_method in _tensor_methods():
            return tracer.create_proxy('call_method', orig_method.__name__, args, kwargs)
        binder = _functional_binder(orig_method)
        if binder is not None:
            args, kwargs = binder(args, kwargs)
        return tracer.create_proxy('call_function', orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method.__name__))


_instructions = {}


def _instruction_at(code, offset):
    table = _instructions.get(code)
    if table is None:
        table = _instructions[code] = {i.offset: i for i in dis.get_instructions(code)}
    return table.get(offset)


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made on first use, or a ``call_method`` node when
    called (``proxy.view(...)``)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy('call_function', getattr, (self.root, self.attr),
                                                  {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy('call_method', self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy when tracing with ``param_shapes_constant``: its shape, size,
    dim, ndim, numel and nelement are the parameter's, not recorded nodes."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f'ParameterProxy({self.name})'

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _define_magic(name):
    fn = getattr(operator, name)

    def impl(*args, **kwargs):
        tracer = args[0].tracer
        return tracer.create_proxy('call_function', fn, args, kwargs)
    impl.__name__ = f'__{name.strip("_")}__'
    setattr(Proxy, impl.__name__, impl)


def _define_reflectable(name):
    fn = getattr(operator, name)
    method_name = f'__r{name.strip("_")}__'

    def impl(self, rhs):
        return self.tracer.create_proxy('call_function', fn, (rhs, self), {})
    impl.__name__ = method_name
    setattr(Proxy, method_name, impl)


for _m in magic_methods:
    if hasattr(operator, _m):  # 'div' is Python 2's
        _define_magic(_m)
for _m in reflectable_magic_methods:
    if hasattr(operator, _m):
        _define_reflectable(_m)
del _m
