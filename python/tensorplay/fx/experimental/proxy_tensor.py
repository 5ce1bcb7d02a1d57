"""make_fx: op-level graph capture. The function runs on fake tensors under a dispatch mode
that records every op it reaches, below autograd, as a ``call_function`` node of a
``tp.ops.aten`` overload, with the op's fake result in ``node.meta['val']``. This is the
compiler's entry point (also ``tensorplay.graph.make_graph``).
"""
import inspect
import linecache
import operator
import os
import sys

import tensorplay
from tensorplay._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from tensorplay.fx.graph import Graph
from tensorplay.fx.graph_module import GraphModule
from tensorplay.fx.node import map_aggregate
from tensorplay.utils._python_dispatch import TorchDispatchMode

__all__ = ['make_fx']


def _layout_key(t):
    return (t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype,
            str(t.device))


class _ProxyMode(TorchDispatchMode):
    """Records each op it sees into ``graph`` and passes it on to the next mode.

    Note [Finding a tensor's node]: a tensor may reach Python as a new object each time it
    leaves C++ (Note [Tensor subclasses in C++]), so nodes are not found by object identity.
    A FakeTensor keeps one ``__dict__`` for its whole life, which keys its node; a real
    tensor (a parameter, a captured constant) is keyed by its storage and layout."""

    def __init__(self, graph, root, record_stack_traces=False, decompositions=None):
        super().__init__()
        self.graph = graph
        self.record_stack_traces = record_stack_traces
        self.decompositions = decompositions or {}
        self.root = root
        self.nodes = {}       # key -> Node
        self._keep = []       # keeps keyed dicts alive, so their ids stay unique
        self._param_names = {_layout_key(p): n for n, p in root.named_parameters()} \
            if root is not None else {}
        self._const_count = {'_param_constant': 0, '_tensor_constant': 0}
        self.root_module = tensorplay.nn.Module()

    def _key(self, t):
        d = getattr(t, '__dict__', None)
        if d is not None and isinstance(t, FakeTensor):
            return ('dict', id(d))
        return ('layout', _layout_key(t))

    def track(self, t, node):
        d = getattr(t, '__dict__', None)
        if d is not None:
            self._keep.append(d)
        self.nodes[self._key(t)] = node
        node.meta['val'] = t if isinstance(t, FakeTensor) else _fake_of(t)

    def node_of(self, t):
        key = self._key(t)
        node = self.nodes.get(key)
        if node is None:  # a tensor from outside the function: a constant of the graph
            prefix = '_param_constant' if key[0] == 'layout' and key[1] in self._param_names \
                else '_tensor_constant'
            name = f'{prefix}{self._const_count[prefix]}'
            self._const_count[prefix] += 1
            setattr(self.root_module, name, t)
            node = self.graph.create_node('get_attr', name)
            self.track(t, node)
        return node

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        decomp = self.decompositions.get(func)
        if decomp is not None:  # the op's decomposition runs instead, its ops recorded here
            with self:
                out = decomp(*args, **kwargs)
            if out is not NotImplemented:
                return out

        def to_arg(a):
            return self.node_of(a) if isinstance(a, tensorplay.Tensor) else a
        node_args = map_aggregate(args, to_arg)
        node_kwargs = map_aggregate(kwargs, to_arg)
        out = func(*args, **kwargs)
        node = self.graph.create_node('call_function', func, node_args, node_kwargs,
                                      name=self.graph._target_to_str(func._opname))
        if self.record_stack_traces:
            node.meta['stack_trace'] = _user_stack_trace()
        if isinstance(out, tensorplay.Tensor):
            self.track(out, node)
        elif isinstance(out, (tuple, list)):
            node.meta['val'] = out
            for i, o in enumerate(out):
                if isinstance(o, tensorplay.Tensor):
                    item = self.graph.create_node('call_function', operator.getitem, (node, i))
                    self.track(o, item)
        else:
            node.meta['val'] = out
        return out


_TP_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TESTING_DIR = os.path.join(_TP_DIR, 'testing')
_is_user_file = {}   # co_filename -> whether it is outside TensorPlay (tensorplay.testing counts as outside)


def _user_file(filename):
    r = _is_user_file.get(filename)
    if r is None:
        path = os.path.abspath(filename)
        r = _is_user_file[filename] = (not path.startswith(_TP_DIR + os.sep)
                                       or path.startswith(_TESTING_DIR + os.sep))
    return r


def _user_stack_trace():
    """The Python stack at this point, outermost first, in ``traceback``'s format, keeping
    only the frames outside TensorPlay (the user's program): what ``node.stack_trace``
    holds, the innermost frame being the user's line that ran the op."""
    frames = []
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if _user_file(code.co_filename):
            frames.append((code.co_filename, f.f_lineno, code.co_name))
        f = f.f_back
    lines = []
    for filename, lineno, name in reversed(frames):
        lines.append(f'  File "{filename}", line {lineno}, in {name}\n')
        src = linecache.getline(filename, lineno).strip()
        if src:
            lines.append(f'    {src}\n')
    return ''.join(lines)


def _fake_of(t):
    return FakeTensorMode().from_tensor(t)


def _placeholder_names(f, n):
    fn = f.forward if isinstance(f, tensorplay.nn.Module) else f
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    if len(params) >= n and all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                for p in params[:n]) and not isinstance(f, tensorplay.nn.Module):
        return [f'{p.name}_1' for p in params[:n]]
    return [f'arg{i}_1' for i in range(n)]


def make_fx(f, decomposition_table=None, tracing_mode='real', _allow_non_fake_inputs=False,
            pre_dispatch=False, record_module_stack=False, record_stack_traces=False):
    """``make_fx(f)(*example_inputs)`` -> GraphModule of the ``tp.ops.aten`` ops ``f`` runs
    (a function or Module), every node carrying ``meta['val']``, a FakeTensor with the
    value's shape, dtype, strides and device. Nothing is computed: tracing runs on fake
    tensors in both tracing modes ('real' and 'fake'), so ops whose result depends on data
    (``nonzero``, ``item``) raise. Parameters and captured tensors become ``get_attr``
    nodes (``_param_constant<N>`` / ``_tensor_constant<N>``).

        gm = make_fx(lambda x: tp.relu(x) * 2)(tp.randn(3))
        [n.target for n in gm.graph.nodes]   # aten.relu.default, aten.mul.Tensor

    ``decomposition_table`` ({op handle: function}) traces an op through its function
    (written with other ops, which are recorded instead; returning NotImplemented records
    the op itself), as PyTorch's.

    ``record_stack_traces=True`` records in each op node's ``meta['stack_trace']`` (also
    ``node.stack_trace``) the Python stack that ran the op, outside TensorPlay's own frames,
    in ``traceback``'s format: its last entry is the user's source line."""
    if tracing_mode not in ('real', 'fake'):
        raise ValueError(f"make_fx: tracing_mode must be 'real' or 'fake', got '{tracing_mode}'")

    def wrapped(*args):
        graph = Graph()
        root = f if isinstance(f, tensorplay.nn.Module) else None
        mode = _ProxyMode(graph, root, record_stack_traces, decomposition_table)
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        names = _placeholder_names(f, len(args))
        fake_args = []
        for name, a in zip(names, args):
            node = graph.placeholder(name)
            if isinstance(a, tensorplay.Tensor):
                a = fake_mode.from_tensor(a)
                mode.track(a, node)
            else:
                node.meta['val'] = a
            fake_args.append(a)
        with fake_mode, mode:
            out = f(*fake_args)
        graph.output(map_aggregate(out, lambda o: mode.node_of(o)
                                   if isinstance(o, tensorplay.Tensor) else o))
        return GraphModule(mode.root_module, graph)
    return wrapped
