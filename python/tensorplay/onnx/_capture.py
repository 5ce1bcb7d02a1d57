"""Graph capture for tp.onnx: the model traced by make_fx (once, or several times when some
axes are dynamic: Note [Dynamic dims by multi-trace fitting] in _symbolic.py), the traces
compared node by node, and every int that changes between them replaced by a Sym."""
import contextlib
import math
import traceback

import tensorplay as tp
from tensorplay._subclasses.fake_tensor import (DataDependentOutputException,
                                                 DynamicOutputShapeException)
from tensorplay.fx.experimental import proxy_tensor
from tensorplay.fx.experimental.proxy_tensor import make_fx
from tensorplay.fx.node import Node
from tensorplay.utils._pytree import tree_flatten, tree_unflatten

from tensorplay.onnx._errors import DynamicShapeError, OnnxExportError
from tensorplay.onnx._symbolic import FitError, Plan, Unfit, fit

__all__ = ['Capture', 'capture', 'user_frame', 'node_location']


def node_location(node):
    """'File "...", line N, in fn\\n    source' of the user's line that ran the node ('' if
    unknown)."""
    st = node.meta.get('stack_trace') if node is not None else None
    if not st and node is not None and node.op in ('get_attr', 'placeholder'):
        for user in node.users:  # a constant: where it is used
            st = user.meta.get('stack_trace')
            if st:
                break
    if not st:
        return ''
    lines = st.rstrip('\n').split('\n')
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith('  File '):
            return '\n    '.join(x.strip() for x in lines[i:i + 2])
    return ''


def user_frame(exc):
    """The innermost frame of an exception's traceback outside TensorPlay, formatted."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if proxy_tensor._user_file(f.filename)]
    if not frames:
        return ''
    f = frames[-1]
    return f'File "{f.filename}", line {f.lineno}, in {f.name}\n    {(f.line or "").strip()}'


@contextlib.contextmanager
def _export_mode(model):
    """No autograd while tracing: no_grad, and the parameters marked as not requiring grad
    (some functions take a gradient-only path when they do, F.embedding's padding_idx)."""
    params = []
    if isinstance(model, tp.nn.Module):
        params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        with tp.no_grad():
            yield
    finally:
        for p in params:
            p.requires_grad_(True)


class _Inputs:
    """The model's example arguments: the tensors among the leaves of (args, kwargs) are the
    graph's inputs, in order; other leaves are fixed."""

    def __init__(self, model, args, kwargs):
        self.leaves, self.spec = tree_flatten((tuple(args), dict(kwargs)))
        self.tensor_pos = [i for i, x in enumerate(self.leaves) if isinstance(x, tp.Tensor)]
        self.tensors = [self.leaves[i] for i in self.tensor_pos]
        self.names = self._default_names(model, args, kwargs)

    def rebuild(self, tensors):
        leaves = list(self.leaves)
        for i, t in zip(self.tensor_pos, tensors):
            leaves[i] = t
        return tree_unflatten(leaves, self.spec)

    def _default_names(self, model, args, kwargs):
        """The forward's parameter names (nested containers add _0, _1, ...; keyword
        arguments their keys)."""
        import inspect
        fn = model.forward if isinstance(model, tp.nn.Module) else model
        try:
            params = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        names = []
        for i, a in enumerate(args):
            base = params[i] if i < len(params) else f'input_{i}'
            names += _leaf_names(a, base)
        for k, v in kwargs.items():
            names += _leaf_names(v, k)
        return names


def _leaf_names(x, base):
    leaves, _ = tree_flatten(x)
    tensors = [v for v in leaves if isinstance(v, tp.Tensor)]
    if len(leaves) == 1 and isinstance(x, tp.Tensor):
        return [base]
    return [f'{base}_{i}' for i in range(len(tensors))]


class Capture:
    """The captured program: ``gm`` the example trace (stack traces recorded), ``graphs``
    the node lists of all traces (aligned), ``plan`` the sizes of each trace (None without
    dynamic axes), ``axes`` {input index: {axis: name}}, ``args`` / ``shapes`` the per-node
    arguments and output shapes with Syms."""

    def __init__(self):
        self.gm = None
        self.gms = []
        self.graphs = []
        self.plan = None
        self.axes = {}
        self.args = {}      # node -> (args, kwargs) with Syms; absent: node.args/kwargs
        self.shapes = {}    # node -> shape list (or list of them for tuple values)
        self.inputs = None
        self.out_spec = None
        self.n_out = 0

    def node_args(self, node):
        r = self.args.get(node)
        return r if r is not None else (node.args, node.kwargs)

    def shape_of(self, node):
        """The node's value's shape, ints and Syms (the example sizes without dynamic axes)."""
        r = self.shapes.get(node)
        if r is not None:
            return r
        v = node.meta.get('val')
        if isinstance(v, tp.Tensor):
            return list(v.shape)
        if isinstance(v, (tuple, list)):
            return [list(x.shape) if isinstance(x, tp.Tensor) else None for x in v]
        return None

    def per_trace(self, node):
        """The node in every trace (aligned lists), for translators that decide per trace."""
        i = self._index[node]
        return [g[i] for g in self.graphs]

    def fit(self, values, what=None, node=None):
        """Ints of one slot across traces -> int or Sym (DynamicShapeError if unfittable)."""
        if self.plan is None:
            return values[0]
        try:
            return fit(values, self.plan)
        except FitError as e:
            raise _specialised(node, f'{what or "a size"} {e}', self.plan) from None


def _specialised(node, why, plan):
    where = node_location(node)
    op = f'{node.target}' if node is not None and node.op == 'call_function' else \
        (node.name if node is not None else '')
    msg = (f'tp.onnx.export: a dynamic axis cannot be expressed: in {op}'
           f'{" (node " + node.name + ")" if node is not None else ""}, {why}. The model '
           f'specialises on that size (it branches on it, loops over it, or computes a shape '
           f'from it in a way the exporter cannot express); make that axis static.')
    if where:
        msg += f'\n  {where}'
    return DynamicShapeError(msg)


def _trace(model, inputs, tensors, record):
    def fn(*ts):
        args, kwargs = inputs.rebuild(ts)
        out = model(*args, **kwargs)
        leaves, spec = tree_flatten(out)
        fn.spec = spec
        fn.tensor_pos = [i for i, x in enumerate(leaves) if isinstance(x, tp.Tensor)]
        return tuple(x for x in leaves if isinstance(x, tp.Tensor))
    from tensorplay.onnx._decompositions import DECOMPOSITIONS
    from tensorplay.onnx._rnn import recurrent_layers_as_ops
    with _export_mode(model), recurrent_layers_as_ops():
        gm = make_fx(fn, decomposition_table=DECOMPOSITIONS, record_stack_traces=record)(*tensors)
    return gm, (fn.spec, fn.tensor_pos)


def _resized(tensors, axes, sizes):
    out = []
    for i, t in enumerate(tensors):
        ax = axes.get(i)
        if not ax:
            out.append(t)
            continue
        shape = list(t.shape)
        for a, name in ax.items():
            shape[a] = sizes[name]
        out.append(tp.empty(shape, dtype=t.dtype, device=t.device))
    return out


def _alt_candidates(n):
    c = [n + 1, 2 * n]
    if n - 1 >= 2:
        c.append(n - 1)
    return c


def _check_candidates(n, alt):
    out = []
    for c in (2 * n + 3, 3 * n + 1, n + 2, n + 3, n - 2, n - 3):
        if c >= 2 and c != n and c != alt and c not in out:
            out.append(c)
    return out


def capture(model, args, kwargs, axes, inputs=None):
    """Trace ``model(*args, **kwargs)``; ``axes``: {flat tensor input index: {axis: name}}."""
    inputs = inputs if inputs is not None else _Inputs(model, args, kwargs)
    cap = Capture()
    cap.inputs = inputs
    cap.axes = axes
    try:
        gm, out_info = _trace(model, inputs, inputs.tensors, True)
    except (DataDependentOutputException, DynamicOutputShapeException) as e:
        kind = 'reads a tensor value (.item(), bool(), a Python branch or loop on a tensor)' \
            if isinstance(e, DataDependentOutputException) else \
            'calls an op whose output shape depends on the data'
        where = user_frame(e)
        raise OnnxExportError(
            f'tp.onnx.export: the model {kind} ({e}): data-dependent control flow and shapes '
            f'cannot be captured in an ONNX graph.' + (f'\n  {where}' if where else '')) from e
    cap.gm = gm
    cap.gms = [gm]
    cap.out_spec, cap.out_pos = out_info
    base_nodes = list(gm.graph.nodes)
    cap.graphs = [base_nodes]
    cap._index = {n: i for i, n in enumerate(base_nodes)}
    names = []
    base = {}
    for i, ax in axes.items():
        t = inputs.tensors[i]
        for a, name in ax.items():
            n = t.shape[a]
            if name in base and base[name] != n:
                raise DynamicShapeError(
                    f'tp.onnx.export: dynamic axis {name!r} has example sizes {base[name]} and '
                    f'{n} in different inputs; one name stands for one size')
            if name not in base:
                if n < 2:
                    raise DynamicShapeError(
                        f'tp.onnx.export: dynamic axis {name!r} (input {inputs.names[i]!r}, dim '
                        f'{a}) has example size {n}; give an example size of at least 2 (sizes 0 '
                        f'and 1 take broadcasting and empty-tensor paths that specialise the '
                        f'graph)')
                base[name] = n
                names.append(name)
    if not names:
        return cap
    _multi_trace(cap, model, inputs, names, [base[n] for n in names])
    return cap


def _multi_trace(cap, model, inputs, names, base):
    k = len(names)
    traces = {}  # corner tuple -> node list

    def run(sizes):
        gm, out_info = _trace(model, inputs, _resized(inputs.tensors, cap.axes, sizes), False)
        if out_info[1] != cap.out_pos:
            raise _specialised(None, 'the model returns different outputs', None)
        return gm

    base_sizes = dict(zip(names, base))
    alt = []
    for j, name in enumerate(names):
        first_err = None
        for cand in _alt_candidates(base[j]):
            try:
                gm = run({**base_sizes, name: cand})
            except Exception as e:  # noqa: BLE001 - any failure: try another size
                first_err = first_err or e
                continue
            alt.append(cand)
            traces[tuple(1 if i == j else 0 for i in range(k))] = gm
            break
        else:
            where = user_frame(first_err)
            raise DynamicShapeError(
                f'tp.onnx.export: dynamic axis {name!r}: the model cannot run with any other '
                f'size for it than {base[j]} (tried {_alt_candidates(base[j])}): '
                f'{type(first_err).__name__}: {first_err}' + (f'\n  {where}' if where else '')
            ) from first_err
    plan = Plan(names, base, alt, [0] * k)
    for c in plan.corners:
        if c in traces or not any(c):
            continue
        sizes = {n: (alt[j] if c[j] else base[j]) for j, n in enumerate(names)}
        try:
            traces[c] = run(sizes)
        except Exception as e:  # noqa: BLE001
            raise DynamicShapeError(
                f'tp.onnx.export: the model cannot run at sizes {sizes}: '
                f'{type(e).__name__}: {e}') from e
    check_cands = [_check_candidates(b, a) for b, a in zip(base, alt)]
    first_err = None
    for r in range(max(len(c) for c in check_cands)):
        check = [c[min(r, len(c) - 1)] for c in check_cands]
        try:
            check_gm = run(dict(zip(names, check)))
        except Exception as e:  # noqa: BLE001
            first_err = first_err or e
            continue
        break
    else:
        raise DynamicShapeError(
            f'tp.onnx.export: the model cannot run at any third set of sizes for the dynamic '
            f'axes {names}: {type(first_err).__name__}: {first_err}') from first_err
    plan = Plan(names, base, alt, check)
    cap.plan = plan
    cap.gms = [cap.gm] + [traces[c] for c in plan.corners[1:]] + [check_gm]
    cap.graphs = [list(g.graph.nodes) for g in cap.gms]
    _diff(cap, plan)


class _Mismatch(Exception):
    pass


def _diff(cap, plan):
    graphs = cap.graphs
    base = graphs[0]
    n = len(base)
    pos = [{node: i for i, node in enumerate(g)} for g in graphs]
    # structure: the same ops in the same order in every trace
    for t, g in enumerate(graphs[1:], 1):
        bad = None
        for i in range(min(n, len(g))):
            a, b = base[i], g[i]
            if a.op != b.op or a.target != b.target or len(a.args) != len(b.args) \
                    or set(a.kwargs) != set(b.kwargs):
                bad = i
                break
        if bad is None and len(g) != n:
            bad = min(n, len(g)) - 1
        if bad is not None:
            changed = ', '.join(f'{name}={plan.points[t][name]}' for name in plan.names
                                if plan.points[t][name] != plan.points[0][name])
            node = base[min(bad, n - 1)]
            raise _specialised(
                node, f'the traced graph changes when {changed} (instead of the example '
                f'sizes): different ops run from here on', plan)
    walker = _Walker(pos, plan)
    for i, node in enumerate(base):
        group = [g[i] for g in graphs]
        try:
            if node.op == 'get_attr':
                _same_constant([getattr(g, node.target, None) for g in cap.gms], node)
                continue
            if node.op in ('call_function', 'output'):
                args = walker.walk([x.args for x in group])
                kwargs = walker.walk([x.kwargs for x in group])
                if walker.changed:
                    cap.args[node] = (args, kwargs)
                    walker.changed = False
            vals = [x.meta.get('val') for x in group]
            shape = walker.shape(vals)
            if walker.changed:
                cap.shapes[node] = shape
                walker.changed = False
        except _Mismatch as e:
            raise _specialised(node, str(e), plan) from None
        except FitError as e:
            raise _specialised(node, f'a size {e}', plan) from None


def _same_constant(tensors, node):
    """A constant made inside the model (a tensor built from Python values) must not depend
    on the sizes: the traces' copies must be equal."""
    from tensorplay.fx.experimental.proxy_tensor import _layout_key
    t0 = tensors[0]
    k0 = _layout_key(t0) if t0 is not None else None
    for t in tensors[1:]:
        if t is None or t0 is None or t is t0 or _layout_key(t) == k0:  # the same tensor
            continue
        if tuple(t.shape) != tuple(t0.shape) or t.dtype != t0.dtype or not tp.equal(t, t0):
            raise _Mismatch(f'the constant {node.target} (a tensor made outside the traced ops, '
                            f'e.g. from numpy) is computed from a dynamic size')


class _Walker:
    def __init__(self, pos, plan):
        self.pos = pos
        self.plan = plan
        self.changed = False

    def walk(self, vals):
        v0 = vals[0]
        t = type(v0)
        for v in vals:
            if type(v) is not t and not (isinstance(v, (list, tuple))
                                         and isinstance(v0, (list, tuple))):
                raise _Mismatch(f'an argument changes type between traces ({v0!r} vs {v!r})')
        if t is Node:
            p = self.pos[0][v0]
            for k in range(1, len(vals)):
                if self.pos[k][vals[k]] != p:
                    raise _Mismatch('an op reads a different value between traces')
            return v0
        if t is int:
            for v in vals:
                if v != v0:
                    self.changed = True
                    try:
                        return fit(vals, self.plan)
                    except FitError as e:  # an error only if a translation uses it
                        return Unfit(str(e), vals)
            return v0
        if isinstance(v0, (list, tuple)):
            m = len(v0)
            for v in vals:
                if len(v) != m:
                    raise _Mismatch(f'a list argument changes length between traces '
                                    f'({list(v0)} vs {list(v)})')
            out = [self.walk([v[i] for v in vals]) for i in range(m)]
            return tuple(out) if isinstance(v0, tuple) else out
        if t is dict:
            return {key: self.walk([v[key] for v in vals]) for key in v0}
        if t is float:
            for v in vals:
                if v != v0 and not (math.isnan(v) and math.isnan(v0)):
                    raise _Mismatch(f'a float argument changes with the sizes ({v0!r} vs {v!r})')
            return v0
        for v in vals:
            if not (v is v0 or v == v0):
                raise _Mismatch(f'an argument changes between traces ({v0!r} vs {v!r})')
        return v0

    def shape(self, vals):
        v0 = vals[0]
        if isinstance(v0, tp.Tensor):
            for v in vals:
                if not isinstance(v, tp.Tensor) or v.dim() != v0.dim() or v.dtype != v0.dtype:
                    raise _Mismatch('an op\'s result changes rank or dtype between traces')
            return [self.walk([v.shape[d] for v in vals]) for d in range(v0.dim())]
        if isinstance(v0, (tuple, list)):
            return [self.shape([v[i] for v in vals]) for i in range(len(v0))]
        return None

