"""The translation of a captured graph to an ONNX graph: each op node goes through its
entry of the translation table (_table.py), which emits ONNX nodes through the
``GraphContext`` below; parameters become initializers, dynamic axes symbolic dims.

Note [In-place ops in the exported graph]
ONNX values are immutable. An in-place op (``fill_``, ``add_``, ``masked_fill_``, ...) is
translated by its functional form; the result then becomes the new value of the tensor it
wrote: of that tensor itself when it owns its memory (later readers get the new value), or,
when it is a view (a chain of view ops from an owner), of the owner, by scattering the new
elements into it at the positions the view covers (found by replaying the view ops on an
``arange`` with the owner's shape, which needs static shapes). Views of a written owner are
re-derived from its new value where they are read afterwards.
"""
import math
import operator

import numpy as np

import tensorplay as tp
from tensorplay.fx.node import Node, map_aggregate
from tensorplay.onnx._capture import node_location
from tensorplay.onnx._errors import OnnxExportError, UnsupportedOperatorError
from tensorplay.onnx._symbolic import Sym, SymUsedAsNumber, Unfit

__all__ = ['GraphContext', 'Value', 'onnx_dtype', 'np_dtype']


def _dtype_table():
    from onnx import TensorProto as P
    rows = [(tp.float32, P.FLOAT, np.float32), (tp.float64, P.DOUBLE, np.float64),
            (tp.float16, P.FLOAT16, np.float16), (tp.bfloat16, P.BFLOAT16, None),
            (tp.int64, P.INT64, np.int64), (tp.int32, P.INT32, np.int32),
            (tp.int16, P.INT16, np.int16), (tp.int8, P.INT8, np.int8),
            (tp.uint8, P.UINT8, np.uint8), (tp.bool, P.BOOL, np.bool_)]
    return {d: (o, n) for d, o, n in rows}


_DT = None


def _dt():
    global _DT
    if _DT is None:
        _DT = _dtype_table()
    return _DT


def onnx_dtype(dtype):
    try:
        return _dt()[dtype][0]
    except KeyError:
        raise OnnxExportError(f'tp.onnx.export: dtype {dtype} has no ONNX equivalent here') from None


def np_dtype(dtype):
    return _dt()[dtype][1]


def is_float(dtype):
    return dtype in (tp.float32, tp.float64, tp.float16, tp.bfloat16)


class Value:
    """A translated value as translators see it: the ONNX value's ``name``, the tensor's
    ``dtype`` and ``shape`` (ints and Syms)."""
    __slots__ = ('name', 'dtype', 'shape')

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f'Value({self.name}, {self.dtype}, {self.shape})'


INT64_MAX = 2 ** 63 - 1


def _mutates(target):
    try:
        a = target._schema.arguments
    except AttributeError:
        return False
    return bool(a) and a[0].alias_info is not None and a[0].alias_info.is_write


def _is_view(target):
    return getattr(target, 'is_view', False) is True


def _functional_form(target):
    """``aten.add_.Tensor`` -> ``aten.add.Tensor`` (None if there is none)."""
    name = target._opname
    if not name.endswith('_'):
        return None
    packet = getattr(tp.ops.aten, name[:-1], None)
    if packet is None:
        return None
    return getattr(packet, target._overloadname, None)


class GraphContext:
    """What translators build with. ``op`` emits a node; ``const``/``ints``/``scalar`` make
    constants; ``sym`` turns a symbolic size into an int64 tensor of the input shapes;
    ``out`` is the current node's result (dtype, shape)."""

    def __init__(self, cap, opset, table, param_names):
        import onnx  # noqa: F401  (fail early with a clear ImportError)
        from onnx import helper
        self.helper = helper
        self.cap = cap
        self.opset = opset
        self.table = table
        self.param_names = param_names
        self.nodes = []
        self._main_nodes = self.nodes
        self.initializers = []
        self.used_names = set()
        self._const_cache = {}
        self._sym_cache = {}
        self.sym_source = {}
        self.env = {}
        self._env_version = {}
        self._version = {}
        self.node = None
        self._count = {}

    # ---- names and nodes -------------------------------------------------------------
    def fresh(self, hint):
        hint = hint.replace('::', '_') or 'v'
        n = self._count.get(hint, 0)
        name = hint if n == 0 and hint not in self.used_names else f'{hint}_{n}'
        while name in self.used_names:
            n += 1
            name = f'{hint}_{n}'
        self._count[hint] = n + 1
        self.used_names.add(name)
        return name

    def op(self, op_type, *inputs, outputs=1, domain='', **attrs):
        """Emits ``op_type(*inputs)``; returns its output name (or a list of ``outputs``
        names when that is not 1). Inputs are names ('' or None for a missing optional)."""
        base = self.node.name if self.node is not None else 'n'
        outs = [self.fresh(f'{base}_{op_type}') for _ in range(outputs if isinstance(outputs, int)
                                                                else len(outputs))] \
            if not isinstance(outputs, list) else outputs
        ins = ['' if i is None else i for i in inputs]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        n = self.helper.make_node(op_type, ins, outs, name=self.fresh(f'{base}/{op_type}'),
                                  domain=domain or None, **attrs)
        self.nodes.append(n)
        return outs[0] if len(outs) == 1 and (outputs == 1) else outs

    def initializer(self, array, hint='const'):
        from onnx import numpy_helper
        name = self.fresh(hint)
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = array.copy()
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def const(self, value, dtype=None):
        """A constant tensor (numpy array, list or Python scalar; ``dtype`` a tp dtype)."""
        arr = np.asarray(value, dtype=np_dtype(dtype) if dtype is not None else None)
        if dtype is None and arr.dtype == np.float64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)
        if arr.size <= 64:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            name = self._const_cache.get(key)
            if name is None:
                name = self._const_cache[key] = self.initializer(arr)
            return name
        return self.initializer(arr)

    def scalar(self, value, dtype):
        """A 0-d constant of tp dtype ``dtype`` (bfloat16 goes through float32 and a Cast);
        a Sym gives the 0-d tensor of its value, computed from the input shapes."""
        if isinstance(value, Unfit):
            raise SymUsedAsNumber(value)
        if isinstance(value, Sym):
            return self.int0(value, dtype)
        if dtype == tp.bfloat16:
            return self.op('Cast', self.const(np.float32(value)), to=onnx_dtype(dtype))
        return self.const(np.array(value, dtype=np_dtype(dtype)))

    def subgraph(self):
        """``with g.subgraph() as body:`` collects the nodes emitted inside into
        ``body.nodes`` (a Scan or Loop body) instead of the main graph."""
        return _Subgraph(self)

    # ---- sizes -------------------------------------------------------------------------
    def ints(self, values):
        """A 1-D int64 tensor of ints and Syms."""
        values = list(values)
        for v in values:
            if isinstance(v, Unfit):
                raise SymUsedAsNumber(v)
        if not any(isinstance(v, Sym) for v in values):
            return self.const(np.array([int(v) for v in values], dtype=np.int64))
        parts, run = [], []
        for v in values:
            if isinstance(v, Sym):
                if run:
                    parts.append(self.const(np.array(run, dtype=np.int64)))
                    run = []
                parts.append(self.sym(v))
            else:
                run.append(int(v))
        if run:
            parts.append(self.const(np.array(run, dtype=np.int64)))
        return parts[0] if len(parts) == 1 else self.op('Concat', *parts, axis=0)

    def int1(self, v):
        """A 1-D int64 tensor of one element."""
        if isinstance(v, Unfit):
            raise SymUsedAsNumber(v)
        return self.sym(v) if isinstance(v, Sym) else self.const(np.array([int(v)], np.int64))

    def int0(self, v, dtype=tp.int64):
        """A 0-d tensor of an int or a Sym, of tp dtype ``dtype``."""
        if isinstance(v, Sym):
            r = self.op('Squeeze', self.sym(v), self.const(np.array([0], np.int64)))
            return r if dtype == tp.int64 else self.op('Cast', r, to=onnx_dtype(dtype))
        return self.scalar(v, dtype)

    def sym(self, s):
        """A Sym as an int64 tensor of shape [1], computed from the graph inputs' shapes."""
        name = self._sym_cache.get(s)
        if name is not None:
            return name
        saved, self.nodes = self.nodes, self._main_nodes  # sizes live in the main graph
        try:
            name = self._sym_cache[s] = self._emit_sym(s)
        finally:
            self.nodes = saved
        return name

    def _emit_sym(self, s):
        den = 1
        for c in s.coefs.values():
            den = den * c.denominator // math.gcd(den, c.denominator)
        total = None
        for mono, c in sorted(s.coefs.items()):
            c = int(c * den)
            term = None
            for symbol in mono:
                t = self._symbol(symbol)
                term = t if term is None else self.op('Mul', term, t)
            if term is None:
                term = self.const(np.array([c], np.int64))
            elif c != 1:
                term = self.op('Mul', term, self.const(np.array([c], np.int64)))
            total = term if total is None else self.op('Add', total, term)
        if den != 1:
            total = self.op('Div', total, self.const(np.array([den], np.int64)))
        return total

    def _symbol(self, symbol):
        key = ('symbol', symbol)
        name = self._sym_cache.get(key)
        if name is None:
            src, axis = self.sym_source[symbol]
            name = self.fresh(f'size_{symbol}')
            self.nodes.append(self.helper.make_node('Shape', [src], [name], name=self.fresh(
                f'size_{symbol}/Shape'), start=axis, end=axis + 1))
            self._sym_cache[key] = name
        return name

    def shape_tensor(self, v):
        """The shape of a Value as a 1-D int64 tensor (a constant when static)."""
        if any(isinstance(d, (Sym, Unfit)) for d in v.shape):
            return self.op('Shape', v.name)
        return self.ints(v.shape)

    def numel(self, shape):
        """The product of a shape's sizes (int or Sym)."""
        n = 1
        for d in shape:
            n = n * d
        return n

    def static(self, v, what):
        """``v`` as a Python int, or DynamicShapeError if it depends on a dynamic size."""
        if isinstance(v, (Sym, Unfit)):
            from tensorplay.onnx._capture import _specialised
            raise _specialised(self.node, f'{what} depends on a dynamic size ({v}) and ONNX '
                               f'takes it as a fixed attribute', self.cap.plan)
        return v

    # ---- values ------------------------------------------------------------------------
    @property
    def out(self):
        """The current node's result as a Value without a name (dtype, shape)."""
        return self.meta(self.node)

    def meta(self, node, index=None):
        val = node.meta.get('val')
        shape = self.cap.shape_of(node)
        if index is not None:
            val, shape = val[index], shape[index]
        if not isinstance(val, tp.Tensor):
            return None
        return Value(None, val.dtype, shape)

    def cast(self, v, dtype):
        """A Value's (or a Python number's) name in tp dtype ``dtype``."""
        if not isinstance(v, Value):
            return self.scalar(v, dtype)
        if v.dtype == dtype:
            return v.name
        return self.op('Cast', v.name, to=onnx_dtype(dtype))

    def value(self, node):
        """The Value of an fx node (re-derived if it is a view of a tensor written since)."""
        name = self.env.get(node)
        if name is None:
            raise OnnxExportError(f'tp.onnx.export: internal error: {node.name} was not '
                                  f'translated')
        if isinstance(name, tuple):
            return name
        root = self._root(node)
        if root is not node and self._env_version.get(node, 0) != self._version.get(root, 0):
            if _mutates(node.target):  # its value is its target's current one
                name = self.value(node.args[0]).name
            else:  # a view of a tensor written since: derive it again
                saved = self.node
                self._translate(node)
                self.node = saved
                name = self.env[node]
        m = self.meta(node)
        if m is None:
            return name
        m.name = name
        return m

    # ---- the walk ----------------------------------------------------------------------
    def _root(self, node):
        while node.op == 'call_function' and (_is_view(node.target) or _mutates(node.target)) \
                and node.args and isinstance(node.args[0], Node):
            node = node.args[0]
        return node

    def _live(self, nodes):
        live = set()
        mutators = [n for n in nodes if n.op == 'call_function' and _mutates(n.target)]

        def mark(n):
            stack = [n]
            while stack:
                x = stack.pop()
                if x in live:
                    continue
                live.add(x)
                for a in x.all_input_nodes:
                    stack.append(a)
        for n in nodes:
            if n.op == 'output' or n.op == 'placeholder':
                mark(n)
        changed = True
        while changed:
            changed = False
            for m in mutators:
                if m not in live and self._root(m) in live:
                    mark(m)
                    changed = True
        return live

    def run(self, input_names):
        """Translates every live node; returns the output node's args (flattened)."""
        nodes = self.cap.graphs[0]
        live = self._live(nodes)
        placeholders = [n for n in nodes if n.op == 'placeholder']
        self.graph_inputs = []
        for n, name in zip(placeholders, input_names):
            self.used_names.add(name)
            self.env[n] = name
            self.graph_inputs.append((name, n))
        for i, ax in self.cap.axes.items():
            for a, symbol in ax.items():
                self.sym_source.setdefault(symbol, (input_names[i], a))
        out = None
        for n in nodes:
            if n not in live or n.op == 'placeholder':
                continue
            if n.op == 'get_attr':
                self._get_attr(n)
            elif n.op == 'call_function':
                self._translate(n)
            elif n.op == 'output':
                out = n
            else:
                raise OnnxExportError(f'tp.onnx.export: unexpected node {n.op} {n.name}')
        return out

    def _get_attr(self, n):
        t = getattr(self.cap.gm, n.target)
        name = self.param_names.get(_layout_key(t))
        name = self.fresh(name if name is not None else n.target)
        self.initializers.append(tensor_proto(t, name))
        self.env[n] = name

    def _translate(self, node):
        self.node = node
        target = node.target
        if target is operator.getitem:
            src, i = node.args
            outs = self.env[src]
            if not isinstance(outs, (tuple, list)) or outs[i] is None:
                self._unsupported(src.target, src, f'output {i} of')
            self.env[node] = outs[i]
            self._env_version[node] = self._version.get(self._root(node), 0)
            return
        fn = self.table.get(target)
        mutating = _mutates(target)
        if fn is None and mutating:
            f = _functional_form(target)
            fn = self.table.get(f) if f is not None else None
        if fn is None:
            self._unsupported(target, node)
        args, kwargs = self.cap.node_args(node)
        args = map_aggregate(args, lambda a: self.value(a) if isinstance(a, Node) else a)
        kwargs = map_aggregate(kwargs, lambda a: self.value(a) if isinstance(a, Node) else a)
        self.node = node
        try:
            result = fn(self, *args, **kwargs)
        except UnsupportedOperatorError:
            raise
        except SymUsedAsNumber as e:
            from tensorplay.onnx._capture import _specialised
            raise _specialised(node, str(e), self.cap.plan) from None
        except OnnxExportError as e:
            if node_location(node) and 'File "' not in str(e):
                raise type(e)(f'{e}\n  {node_location(node)}') from None
            raise
        if isinstance(result, list):
            result = tuple(result)
        self.env[node] = result
        self._env_version[node] = self._version.get(self._root(node), 0)
        if mutating:
            self._write(node.args[0], node, result)
        self.node = None

    def _unsupported(self, target, node, what=''):
        where = node_location(node)
        msg = (f'tp.onnx.export: no ONNX translation for {what + " " if what else ""}'
               f'{target} (node {node.name!r})')
        if where:
            msg += f', called at\n  {where}'
        if tp.Tag.nondeterministic_seeded in getattr(target, 'tags', ()):
            msg += ('\nIt draws random numbers: a model in training mode runs dropout and other '
                    'random layers; call model.eval() before exporting.')
        raise UnsupportedOperatorError(msg, op=target, node=node)

    def _write(self, target, node, result):
        """Note [In-place ops in the exported graph]."""
        root = self._root(target)
        self.env[root] = result if root is target else self._scatter_into(root, target, result)
        v = self._version[root] = self._version.get(root, 0) + 1
        if root is not target:
            self.env[target] = result
            self._env_version[target] = v
        self._env_version[node] = v

    def _scatter_into(self, root, view, new):
        chain = []
        x = view
        while x is not root:
            chain.append(x)
            x = x.args[0]
        chain.reverse()
        base_val = root.meta['val']
        shapes = [self.cap.shape_of(n) for n in [root] + chain]
        if any(isinstance(d, Sym) for s in shapes for d in s):
            from tensorplay.onnx._capture import _specialised
            raise _specialised(self.node, 'an in-place write into a view of a tensor with a '
                               'dynamic size', self.cap.plan)
        n = base_val.numel()
        if not base_val.is_contiguous() or base_val.storage_offset() != 0:
            raise OnnxExportError('tp.onnx.export: an in-place write into a view of a tensor '
                                  'that is itself not contiguous is not supported')
        iota = tp.arange(n, dtype=tp.int64).reshape(list(base_val.shape))
        cur = iota
        for v in chain:
            if not _mutates(v.target):  # an in-place op's result aliases its input
                cur = v.target(*((cur,) + tuple(v.args[1:])), **v.kwargs)
        idx = cur.contiguous().reshape(-1).numpy()
        view_shape = list(cur.shape)
        rv = self.meta(root)
        flat = self.op('Reshape', self.env[root], self.const(np.array([-1], np.int64)))
        upd = self.op('Expand', new, self.ints(view_shape))
        upd = self.op('Reshape', upd, self.const(np.array([-1], np.int64)))
        out = self.op('ScatterElements', flat, self.const(idx.astype(np.int64)), upd, axis=0)
        return self.op('Reshape', out, self.ints(rv.shape))


class _Subgraph:
    def __init__(self, g):
        self.g = g
        self.nodes = []

    def __enter__(self):
        self.saved = self.g.nodes
        self.g.nodes = self.nodes
        return self

    def __exit__(self, *exc):
        self.g.nodes = self.saved
        return False


def _layout_key(t):
    return (t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype,
            str(t.device))


def tensor_proto(t, name):
    """A TensorProto of a tensor's data."""
    from onnx import helper, numpy_helper
    t = t.detach()
    if t.device.type != 'cpu':
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == tp.bfloat16:
        raw = t.view(tp.int16).numpy().tobytes()
        return helper.make_tensor(name, onnx_dtype(tp.bfloat16), list(t.shape), raw, raw=True)
    return numpy_helper.from_array(t.numpy(), name)
