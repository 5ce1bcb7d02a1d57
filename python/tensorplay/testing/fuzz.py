"""Differential fuzzing of the op database against PyTorch: random calls, valid and invalid.

A case starts from one op-database sample and mutates it (layouts, values, shapes, dtypes, int
arguments, the meta device, ``out=``); ``run_case`` calls it in torch and in the library under
test and reports the first disagreement.  ``main`` is the long run (scripts/fuzz.sh): workers in
subprocesses, so a crash or a hang is recorded against its case and the run goes on.

A case is a pure function of (seed, op name, index): ``make_case`` rebuilds it anywhere, and
``reproducer`` writes it as a standalone Python snippet.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib
import json
import math
import operator
import os
import random
import select
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

# Replacements for int arguments (dims, indices, sizes): in range, at and past the edges.
# Kept small: a size argument of 10**6 would make a call allocate gigabytes.
_INT_EDGES = (-1, 0, 1, 2, 7, -7)
_FLOAT_EDGES = (float('nan'), float('inf'), float('-inf'), -0.0, 0.0)

# Mutation kinds and their weights.
MUTATIONS = {'special-values': 3, 'extreme-ints': 2, 'transposed-layout': 2, 'stepped-layout': 2,
             'offset-layout': 1, 'expanded': 2, 'overlapping': 1, 'transposed-view': 1,
             'empty': 2, 'zero-dim': 1, 'size-one': 1, 'other-dtype': 2, 'int-arg': 3,
             'float-arg': 1, 'mixed-meta': 1}


# ------------------------------------------------------------------ tensors
@dataclasses.dataclass
class TensorSpec:
    """A tensor both libraries can build alike: flat storage values, then a strided view."""
    values: list
    dtype: str
    size: tuple
    stride: tuple
    offset: int = 0
    device: str = 'cpu'

    @classmethod
    def of(cls, t: torch.Tensor) -> 'TensorSpec':
        n = t.untyped_storage().nbytes() // t.element_size()
        flat = t.as_strided((n,), (1,), 0)
        values = (flat.double() if t.is_floating_point() else flat).tolist()
        return cls(values, db.dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()),
                   t.storage_offset())

    def torch(self) -> torch.Tensor:
        """The CPU torch tensor (for generating mutations)."""
        return dataclasses.replace(self, device='cpu').build(torch)

    def build(self, lib):
        dt = getattr(lib, self.dtype)
        if self.device == 'meta':
            base = lib.empty(len(self.values), dtype=dt, device='meta')
        else:
            base = lib.tensor(self.values, dtype=_carrier(lib, self.dtype)).to(dt)
        return base.as_strided(self.size, self.stride, self.offset)

    def code(self) -> str:
        dev = ", device='meta'" if self.device == 'meta' else ''
        if self.device == 'meta':
            base = f'lib.empty({len(self.values)}, dtype=lib.{self.dtype}{dev})'
        else:
            carrier = dtype_name_of_carrier(self.dtype)
            base = f'lib.tensor({_values_code(self.values)}, dtype=lib.{carrier}).to(lib.{self.dtype})'
        return f'{base}.as_strided({self.size}, {self.stride}, {self.offset})'


def dtype_name_of_carrier(dtype):
    """The dtype storage values are written in before the cast (exact for every dtype)."""
    if dtype == 'bool':
        return 'bool'
    if dtype in db.COMPLEX:  # out= of ops with complex results (linalg.eig)
        return 'complex128'
    return 'float64' if dtype in db.FLOATS else 'int64'


def _carrier(lib, dtype):
    return getattr(lib, dtype_name_of_carrier(dtype))


def _values_code(values) -> str:
    return '[' + ', '.join(_scalar_code(v) for v in values) + ']'


def _scalar_code(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return 'nan' if math.isnan(v) else ('inf' if v > 0 else '-inf')
    return repr(v)


def _contiguous_spec(t: torch.Tensor) -> TensorSpec:
    return TensorSpec.of(t.contiguous().clone())


# ------------------------------------------------------------------ cases
@dataclasses.dataclass
class Case:
    """One call of ``op`` in ``form``; args/kwargs hold TensorSpecs where tensors go."""
    op: str
    index: int
    dtype: str
    form: str
    args: tuple
    kwargs: dict
    out: object = None           # TensorSpec, a tuple of them, or None
    mutations: tuple = ()

    @property
    def key(self):
        return (self.op, self.index)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _leaves(v)]
    if isinstance(x, dict):
        return [y for v in x.values() for y in _leaves(v)]
    return [x]


def _replace(x, old, new):
    """x with the leaf ``old`` (by identity) replaced by ``new``."""
    if x is old:
        return new
    if isinstance(x, (list, tuple)) and not isinstance(x, db.Raw):
        return type(x)(_replace(v, old, new) for v in x)
    if isinstance(x, dict):
        return {k: _replace(v, old, new) for k, v in x.items()}
    return x


def _specs(case_or_tree) -> list:
    tree = case_or_tree
    if isinstance(tree, Case):
        tree = (tree.args, tree.kwargs, tree.out)
    found, seen = [], set()
    for leaf in _leaves(tree):
        if isinstance(leaf, TensorSpec) and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append(leaf)
    return found


def _to_specs(x):
    if isinstance(x, torch.Tensor):
        return TensorSpec.of(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_specs(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_specs(v) for k, v in x.items()}
    return x


_SAMPLES: dict = {}


def _samples(op, dtype) -> list:
    key = (op.name, dtype)
    if key not in _SAMPLES:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            _SAMPLES[key] = list(op.sample_inputs(dtype))
    return _SAMPLES[key]


def make_case(op, seed: int, index: int) -> Case:
    """The case (seed, op, index): a sample of a random dtype (mostly one the entry lists),
    a random form, 0-3 mutations, maybe the meta device and a wrong out=."""
    rng = random.Random(f'{seed}:{op.name}:{index}')
    # Not the complex dtypes yet: TensorSpec writes values through real carriers and its
    # mutations (special values, other dtypes) are real ones; test_ops and the gradient
    # suites cover the entries' complex samples.
    dtypes = [d for d in op.dtypes if d not in db.COMPLEX]
    others = [d for d in db.ALL_DTYPES if d not in op.dtypes]
    dtype = rng.choice(others) if others and rng.random() < 0.2 else rng.choice(dtypes)
    samples = _samples(op, dtype) or _samples(op, dtype := dtypes[0])
    sample = rng.choice(samples)
    forms = [f for f in op.forms if op.applies(f, sample)]
    form = rng.choice(forms)
    args, kwargs = db.materialize(sample, torch)
    case = Case(op.name, index, dtype, form, _to_specs(args), _to_specs(kwargs))
    done = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        kind = rng.choices(list(MUTATIONS), weights=list(MUTATIONS.values()))[0]
        if _mutate(case, kind, rng):
            done.append(kind)
    if form == 'out':
        done.append(_choose_out(case, op, rng))
    if rng.random() < 0.08:
        for spec in _specs(case):
            spec.device = 'meta'
        done.append('meta')
    case.mutations = tuple(done)
    return case


def _mutate(case: Case, kind: str, rng) -> bool:
    """Applies one mutation in place; False where nothing in the case can take it."""
    specs = _specs(case)
    if kind in ('int-arg', 'float-arg'):
        want = int if kind == 'int-arg' else float
        spots = [(where, leaf) for where in ('args', 'kwargs')
                 for leaf in _leaf_refs(getattr(case, where)) if type(leaf[0]) is want]
        if not spots:
            return False
        where, (value, path) = rng.choice(spots)
        ndim = max((len(s.size) for s in specs), default=1)
        choices = (_INT_EDGES + (ndim, ndim + 1, -ndim - 1)) if want is int else _FLOAT_EDGES
        setattr(case, where, _set_path(getattr(case, where), path, rng.choice(choices)))
        return True
    if not specs:
        return False
    spec = rng.choice(specs)
    new = _mutated_spec(spec, kind, rng)
    if new is None:
        return False
    case.args, case.kwargs = _replace(case.args, spec, new), _replace(case.kwargs, spec, new)
    return True


def _leaf_refs(tree, path=()):
    """(value, path) of each scalar leaf of nested tuples/lists/dicts."""
    if isinstance(tree, (list, tuple)):
        return [r for i, v in enumerate(tree) for r in _leaf_refs(v, path + (i,))]
    if isinstance(tree, dict):
        return [r for k, v in tree.items() for r in _leaf_refs(v, path + (k,))]
    return [(tree, path)]


def _set_path(tree, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {k: _set_path(v, rest, value) if k == head else v for k, v in tree.items()}
    return type(tree)(_set_path(v, rest, value) if i == head else v for i, v in enumerate(tree))


def _mutated_spec(spec: TensorSpec, kind: str, rng):
    t = spec.torch()
    nd, name = t.dim(), spec.dtype
    if kind == 'special-values' and name in db.FLOATS and t.numel():
        return _with_values(t, rng, [float('nan'), float('inf'), float('-inf'), -0.0,
                                     torch.finfo(t.dtype).max])
    if kind == 'extreme-ints' and name in db.INTS and t.numel():
        info = torch.iinfo(t.dtype)
        return _with_values(t, rng, [info.min, info.max, 0, -1 if info.min < 0 else 1])
    if kind == 'transposed-layout' and nd >= 2:
        perm = list(range(nd))
        rng.shuffle(perm)
        inverse = [perm.index(i) for i in range(nd)]
        return TensorSpec.of(t.permute(perm).contiguous().permute(inverse))
    if kind == 'stepped-layout' and nd >= 1:
        wide = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype)
        wide[..., ::2] = t
        return TensorSpec.of(wide[..., ::2])
    if kind == 'offset-layout':
        flat = torch.cat([torch.zeros(3, dtype=t.dtype), t.reshape(-1)])
        return TensorSpec.of(flat[3:].view(t.shape))
    if kind in ('expanded', 'overlapping'):
        dims = [d for d in range(nd) if t.shape[d] > 1]
        if not dims or not t.numel():
            return None
        d = rng.choice(dims)
        new = _contiguous_spec(t)
        stride = list(new.stride)
        stride[d] = 0 if kind == 'expanded' or stride[d] == 1 else stride[d] // 2
        new.stride = tuple(stride)
        return new
    if kind == 'transposed-view' and nd >= 2:
        i, j = rng.sample(range(nd), 2)
        return TensorSpec.of(t.transpose(i, j))
    if kind == 'empty':
        shape = list(t.shape) or [1]
        shape[rng.randrange(len(shape))] = 0
        return _contiguous_spec(torch.zeros(shape, dtype=t.dtype))
    if kind == 'zero-dim' and nd >= 1:
        return _contiguous_spec(t.reshape(-1)[0] if t.numel() else torch.zeros((), dtype=t.dtype))
    if kind == 'size-one' and nd >= 1:
        d = rng.randrange(nd)
        return TensorSpec.of(t.narrow(d, 0, min(1, t.shape[d])))
    if kind == 'other-dtype':
        target = rng.choice([d for d in db.ALL_DTYPES if d != name])
        return _contiguous_spec(t.to(db.torch_dtype(target)))
    if kind == 'mixed-meta':
        return dataclasses.replace(spec, device='meta')
    return None


def _with_values(t, rng, choices):
    c = t.contiguous().clone().reshape(-1)
    for _ in range(rng.randint(1, 3)):
        c[rng.randrange(c.numel())] = rng.choice(choices)
    return TensorSpec.of(c.view(t.shape))


def _choose_out(case: Case, op, rng) -> str:
    """Sets case.out: the right shape and dtype (as torch's function form gives), or a wrong
    shape, a wrong dtype, an empty tensor (resized by the op), a non-contiguous tensor, or an
    input itself."""
    crash = TORCH_CRASHES.get(case.op)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:  # (not a call torch dies on: such a case gets an out= of the fallback shape)
            ref = None if crash and crash[0](case) else op.call('function', torch, *_build_call(case, torch)[:2])
        except Exception:  # noqa: BLE001 - an invalid call still gets an out=
            ref = None
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    refs = [r if isinstance(r, torch.Tensor) else torch.zeros(3, 4) for r in refs]
    kind = rng.choice(['right', 'right', 'wrong-shape', 'wrong-dtype', 'empty', 'noncontig', 'input'])
    inputs = _specs((case.args, case.kwargs))
    if kind == 'input' and inputs and len(refs) == 1:
        case.out = rng.choice(inputs)
        return 'out-input'
    outs = []
    for r in refs:
        shape, dtype = tuple(r.shape), r.dtype
        if kind == 'wrong-shape':
            shape = tuple(rng.choice((1, 2, 5)) for _ in range(max(1, len(shape))))
        elif kind == 'wrong-dtype':
            dtype = db.torch_dtype(rng.choice([d for d in db.ALL_DTYPES if d != db.dtype_name(dtype)]))
        elif kind == 'empty':
            shape = (0,)
        o = torch.full(shape, 7, dtype=dtype) if dtype != torch.bool else torch.zeros(shape, dtype=dtype)
        if kind == 'noncontig' and o.dim() >= 2:
            outs.append(TensorSpec.of(o.transpose(0, 1).contiguous().transpose(0, 1)))
        else:
            outs.append(TensorSpec.of(o))
    case.out = tuple(outs) if isinstance(ref, (tuple, list)) else outs[0]
    return f'out-{kind}'


# ------------------------------------------------------------------ running
def _build(x, lib, memo):
    if isinstance(x, TensorSpec):
        if id(x) not in memo:
            memo[id(x)] = x.build(lib)
        return memo[id(x)]
    if isinstance(x, db.Raw):
        return db.to_lib(x, lib)
    if isinstance(x, torch.dtype):
        return getattr(lib, db.dtype_name(x))
    if isinstance(x, (list, tuple)):
        return type(x)(_build(v, lib, memo) for v in x)
    if isinstance(x, dict):
        return {k: _build(v, lib, memo) for k, v in x.items()}
    return x


def _build_call(case: Case, lib):
    """(args, kwargs, out, inputs) built for lib; inputs are the tensors in spec order."""
    memo = {}
    args, kwargs, out = _build((case.args, case.kwargs, case.out), lib, memo)
    return args, kwargs, out, [memo[id(s)] for s in _specs(case)]


def _call(op, case, lib):
    """('ok', result, inputs) or ('raised', exception, inputs)."""
    try:
        args, kwargs, out, inputs = _build_call(case, lib)
    except Exception as e:  # noqa: BLE001
        raise RuntimeError(f'{case.op}#{case.index}: cannot build the inputs in {lib.__name__}') from e
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            return 'ok', op.call(case.form, lib, args, kwargs, out=out), inputs
        except Exception as e:  # noqa: BLE001 - the exception class is the outcome
            return 'raised', e, inputs


# Calls PyTorch 2.13 itself dies on (SIGSEGV): op -> (predicate on the case, what happens).
# There is no reference for them; the library under test must only not crash.
TORCH_CRASHES = {
    'embedding_bag': (lambda case: _arg_numel(case, 2) == 0 or (_arg_numel(case, 2) == 1 and _arg(case, 4) == 2
                                                               and _arg(case, 7) is True)
                      or (_arg_numel(case, 1) == 0 and isinstance(_arg(case, 2), TensorSpec)
                          and min(_arg(case, 2).values, default=0) < 0),
                      'torch.embedding_bag with empty offsets, no bag in max mode (one offset, '
                      'include_last_offset) or empty indices and a negative offset reads out of bounds (SIGSEGV)'),
    'bmm': (lambda case: _out_is_input(case), 'torch.bmm(a, b, out=a) (SIGSEGV)'),
    'baddbmm': (lambda case: _out_is_input(case) and math.prod(case.out.size) == 0,
                'torch.baddbmm(s, a, b, out=a) with an empty a to be resized (SIGSEGV)'),
    'linalg.eigvalsh': (lambda case: _out_is_input(case),
                        'torch.linalg.eigvalsh(a, out=a) corrupts the heap (abort in free())'),
    'lu_unpack': (lambda case: _arg_numel(case, 0) not in (None, 0) and isinstance(_arg(case, 1), TensorSpec)
                  and (_arg(case, 1).size or (1,))[-1] == 0 and _arg(case, 3) is not False
                  and case.kwargs.get('unpack_pivots') is not False,
                  'torch.lu_unpack of a non-empty LU with pivots empty in their last dim reads out of bounds '
                  '(SIGSEGV; seed 20261210 #27)'),
}


def _out_is_input(case):
    return any(case.out is s for s in _specs((case.args, case.kwargs)))


def _arg(case, i):
    return case.args[i] if len(case.args) > i else None


def _arg_numel(case, i):
    a = case.args[i] if len(case.args) > i else None
    return math.prod(a.size) if isinstance(a, TensorSpec) else None


@dataclasses.dataclass
class Mismatch:
    op: str
    index: int
    kind: str      # exception-class, only-torch-raised, only-ours-raised, type, dtype, shape, ...
    detail: str


def run_case(case: Case, lib, on_call=lambda lib_name: None) -> Mismatch | None:
    """Runs the case in torch and lib; the first disagreement, or None.  ``on_call(name)`` runs
    before each library's call (the long run records which one was running if it dies)."""
    op = db.get(case.op)
    crash = TORCH_CRASHES.get(case.op)
    if crash and crash[0](case):   # no reference: ours must simply not crash
        if lib is not torch:
            on_call(lib.__name__)
            _call(op, case, lib)
        return None
    on_call('torch')
    t_status, expected, t_inputs = _call(op, case, torch)
    on_call(lib.__name__)
    l_status, actual, l_inputs = _call(op, case, lib)
    miss = lambda kind, detail: Mismatch(case.op, case.index, kind, detail)
    if t_status == 'raised' or l_status == 'raised':
        if t_status == 'ok':
            return miss('only-ours-raised', f'{type(actual).__name__}: {actual}'[:300])
        if l_status == 'ok':
            return miss('only-torch-raised', f'{type(expected).__name__}: {expected}'[:300])
        if not isinstance(actual, db.lib_exception(type(expected), lib)):
            return miss('exception-class', f'torch {type(expected).__name__}: {str(expected)[:150]} | '
                                            f'ours {type(actual).__name__}: {str(actual)[:150]}')
        return None
    tol = _tolerance(op, expected, case.dtype)
    # torch computes on CPU from a meta tensor's missing data, without an error: undefined values
    values = op.compare_values and len({s.device for s in _specs(case)}) == 1
    found = _compare(actual, expected, lib, t_inputs, l_inputs, op, tol, case, values)
    if not found and values:
        found = next((('input-after-call', f'input {i} differs after the call')
                      for i, (a, e) in enumerate(zip(l_inputs, t_inputs))   # in-place writes, or corruption
                      if e.device.type != 'meta' and not _close(a, e, tol)), None)
    if found and found[0] in ('value', 'input-after-call') and _torch_undefined(op, case, expected, t_inputs):
        return None
    return miss(*found) if found else None


def _torch_undefined(op, case, expected, inputs) -> bool:
    """Whether torch gives other values when run again (it read uninitialised memory: an
    unchecked argument), so that its values are no reference."""
    status, again, again_inputs = _call(op, case, torch)
    if status != 'ok':
        return True
    flat = lambda x: [v for v in (x if isinstance(x, (tuple, list)) else [x]) if isinstance(v, torch.Tensor)]
    pairs = list(zip(flat(again) + again_inputs, flat(expected) + inputs))
    return any(not _close(a, e, (0, 0)) for a, e in pairs if a.device.type != 'meta')


def _tolerance(op, expected, dtype):
    first = expected
    while isinstance(first, (tuple, list)) and first:
        first = first[0]
    return op.tolerance(first.dtype if isinstance(first, torch.Tensor) else dtype)


def _compare(actual, expected, lib, t_inputs, l_inputs, op, tol, case, values):
    """(kind, detail) of the first difference between the results, or None."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return 'type', f'ours {type(actual).__name__}, torch {type(expected).__name__}'
        for a, e in zip(actual, expected):
            found = _compare(a, e, lib, t_inputs, l_inputs, op, tol, case, values)
            if found:
                return found
        return None
    if not isinstance(expected, torch.Tensor):
        same = actual == expected or (isinstance(expected, float) and math.isnan(expected)
                                      and isinstance(actual, float) and math.isnan(actual))
        return None if same else ('value', f'ours {actual!r}, torch {expected!r}')
    if not isinstance(actual, lib.Tensor):
        return 'type', f'ours {type(actual).__name__}, torch Tensor'
    if db.dtype_name(actual.dtype) != db.dtype_name(expected.dtype):
        return 'dtype', f'ours {db.dtype_name(actual.dtype)}, torch {db.dtype_name(expected.dtype)}'
    if tuple(actual.shape) != tuple(expected.shape):
        return 'shape', f'ours {tuple(actual.shape)}, torch {tuple(expected.shape)}'
    if actual.device.type != expected.device.type:
        return 'device', f'ours {actual.device.type}, torch {expected.device.type}'
    a_layout = layout(actual, l_inputs, lib)
    e_layout = layout(expected, t_inputs, torch)
    if a_layout != e_layout and not (expected.device.type == 'meta'
                                     and _cpu_layout(op, case) == a_layout):
        kind = 'alias' if a_layout[1:] != e_layout[1:] else 'stride'
        return kind, f'ours {a_layout}, torch {e_layout} (strides, aliased input, offset)'
    if expected.device.type != 'meta' and values and not _close(actual, expected, tol):
        return 'value', f'ours {_short(actual)}, torch {_short(expected)}'
    return None


def layout(t, inputs, lib):
    """What PyTorch promises of a result's layout (the rule of tests/python/test_meta.py): the
    strides of dims longer than 1 of a non-empty tensor, which input it aliases, and the
    storage offset where it aliases one."""
    shape = tuple(t.shape)
    if not math.prod(shape):
        return (None, None, None)
    strides = tuple(st if s > 1 else None for s, st in zip(shape, t.stride()))
    keys = [_storage_key(x, lib) for x in inputs]
    key = _storage_key(t, lib)
    alias = keys.index(key) if key in keys else None
    return (strides, alias, t.storage_offset() if alias is not None else None)


def _storage_key(t, lib):
    return t.untyped_storage()._cdata if lib is torch else lib._C._storage_id(t)


def _cpu_layout(op, case):
    """torch's CPU layout of the case's result (PyTorch's meta layout differs from its own CPU
    kernel's for a few ops: test_meta.py accepts either)."""
    cpu = dataclasses.replace(case, args=_on_cpu(case.args), kwargs=_on_cpu(case.kwargs),
                              out=_on_cpu(case.out))
    status, r, inputs = _call(op, cpu, torch)
    if status != 'ok' or not isinstance(r, torch.Tensor):
        return None
    strides, alias, offset = layout(r, inputs, torch)
    return strides, alias, offset


def _on_cpu(x):
    if isinstance(x, TensorSpec):
        return dataclasses.replace(x, device='cpu')
    if isinstance(x, (list, tuple)):
        return type(x)(_on_cpu(v) for v in x)
    if isinstance(x, dict):
        return {k: _on_cpu(v) for k, v in x.items()}
    return x


def _close(actual, expected, tol) -> bool:
    if actual.device.type == 'meta' or expected.device.type == 'meta':
        return actual.device.type == expected.device.type
    if db.dtype_name(actual.dtype) != db.dtype_name(expected.dtype) or \
            tuple(actual.shape) != tuple(expected.shape):
        return False
    try:
        torch.testing.assert_close(db.to_torch(actual), expected, rtol=tol[0], atol=tol[1],
                                   equal_nan=True, check_stride=False)
    except AssertionError:
        return False
    return True


def _short(t):
    return str(db.to_torch(t).reshape(-1)[:8].tolist()) if t.numel() else '[]'


# ------------------------------------------------------------------ reproducers
def reproducer(case: Case, mismatch: Mismatch | None = None) -> str:
    """A standalone snippet that calls the case in torch and tensorplay and prints both."""
    op = db.get(case.op)
    specs = _specs(case)
    names = {id(s): f't{i}' for i, s in enumerate(specs)}
    code = lambda x: _code(x, names)
    head = f'# {case.op} #{case.index} ({case.dtype}, {case.form}; mutations: {", ".join(case.mutations) or "none"})'
    if mismatch:
        head += f'\n# {mismatch.kind}: {mismatch.detail}'
    lines = [head, 'import operator', 'import torch', 'import tensorplay as tp',
             "nan, inf = float('nan'), float('inf')", '', 'def call(lib):']
    lines += [f'    {names[id(s)]} = {s.code()}' for s in specs]
    args = [code(a) for a in case.args]
    kw = [f'{k}={code(v)}' for k, v in case.kwargs.items()]
    if case.form == 'out':
        kw.append(f'out={code(case.out)}')
    if case.form in ('method', 'inplace'):
        self_t = args.pop(op.self_arg)
        suffix = '_' if case.form == 'inplace' else ''
        lines.append(f'    return {self_t}.{case.op}{suffix}({", ".join(args + kw)})')
    elif case.form == 'operator':
        lines.append(f'    return {_operator_code(op.operator)}({", ".join(args)})')
    else:
        lines.append(f"    fn = {_torch_function_code(case.op)} if lib is torch else tp.{case.op}")
        lines.append(f'    return fn({", ".join(args + kw)})')
    lines += ['', 'for lib in (torch, tp):', '    try:', '        r = call(lib)',
              "        print(lib.__name__, r if not hasattr(r, 'stride') else (r.dtype, tuple(r.shape), r.stride(), r))",
              '    except Exception as e:', "        print(lib.__name__, type(e).__name__, e)", '']
    return '\n'.join(lines)


def _code(x, names) -> str:
    if isinstance(x, TensorSpec):
        return names[id(x)]
    if isinstance(x, db.Raw):
        v = x.value
        return f'np.{v.dtype}({v.tolist()!r})' if isinstance(v, np.ndarray) else repr(v)
    if isinstance(x, torch.dtype):
        return f'lib.{db.dtype_name(x)}'
    if isinstance(x, tuple):
        inner = ', '.join(_code(v, names) for v in x)
        return f'({inner},)' if len(x) == 1 else f'({inner})'
    if isinstance(x, list):
        return '[' + ', '.join(_code(v, names) for v in x) + ']'
    if isinstance(x, dict):
        return '{' + ', '.join(f'{k!r}: {_code(v, names)}' for k, v in x.items()) + '}'
    return _scalar_code(x)


def _operator_code(fn) -> str:
    return f'operator.{fn.__name__}' if getattr(operator, fn.__name__, None) is fn else fn.__name__


def _torch_function_code(name: str) -> str:
    """How a fresh process reaches torch's function (opdb_nn.py makes some of torch._C._nn's
    and torch.ops.aten's reachable as torch.<name>)."""
    fn = db.resolve(torch, name)
    if getattr(torch._C._nn, name, None) is fn:
        return f'torch._C._nn.{name}'
    if getattr(fn, '__module__', '') and fn.__module__.startswith('tensorplay_'):
        return f'torch.ops.aten.{name}'
    return f'torch.{name}'


# ------------------------------------------------------------------ long runs
def _schedule(ops, batch, position):
    """The (op, index) at a position of the long run's order: rounds of `batch` cases per op."""
    per_round = len(ops) * batch
    rnd, rem = divmod(position, per_round)
    return ops[rem // batch], rnd * batch + rem % batch


def _worker(seed, batch, position, fd):
    """Runs cases from `position` on, writing 'start' before and the verdict after each."""
    import tensorplay as lib
    ops = db.op_db
    out = os.fdopen(fd, 'w', buffering=1)
    while True:
        op, index = _schedule(ops, batch, position)
        out.write(json.dumps({'start': position}) + '\n')
        case = make_case(op, seed, index)
        m = run_case(case, lib, lambda name: out.write(json.dumps({'call': name}) + '\n'))
        out.write(json.dumps({'done': position, 'mismatch': dataclasses.asdict(m) if m else None}) + '\n')
        position += 1


def main(argv=None):
    p = argparse.ArgumentParser(description='Differential fuzzing of the op database against PyTorch.')
    p.add_argument('--minutes', type=float, required=True)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--batch', type=int, default=20, help='cases per op before moving to the next op')
    p.add_argument('--start', type=int, default=0, help='position to start at (to resume a run)')
    p.add_argument('--rounds', type=int, help='stop after this many rounds over all ops')
    p.add_argument('--end', type=int, help='stop at this position (rerun the cases of an earlier run: '
                   'its "resume with --start" position)')
    p.add_argument('--report', default='fuzz_report', help='stem of the .txt summary and _repro.py files')
    p.add_argument('--hang-seconds', type=float, default=60)
    p.add_argument('--worker', type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        return _worker(args.seed, args.batch, args.start, args.worker)

    deadline = time.monotonic() + 60 * args.minutes
    position, mismatches, cases = args.start, [], 0
    end = args.rounds * len(db.op_db) * args.batch if args.rounds else math.inf
    if args.end is not None:
        end = min(end, args.end)
    while time.monotonic() < deadline and position < end:
        r, w = os.pipe()
        cmd = [sys.executable, '-m', 'tensorplay.testing.fuzz', '--minutes', '0', '--seed',
               str(args.seed), '--batch', str(args.batch), '--start', str(position), '--worker', str(w)]
        proc = subprocess.Popen(cmd, pass_fds=(w,))
        os.close(w)
        started, calling, buf = None, None, b''
        with os.fdopen(r, 'rb') as pipe:
            while True:
                left = deadline - time.monotonic()
                wait = min(max(left, 0), args.hang_seconds)
                ready, _, _ = select.select([pipe], [], [], wait)
                if not ready:
                    # a hang only when the case ran the whole hang_seconds: a case still
                    # running when the deadline comes is just cut off
                    if wait >= args.hang_seconds and started is not None:
                        mismatches.append(_dead(args, started, calling, 'hang'))
                        position = started + 1
                    proc.kill()
                    proc.wait()
                    break
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    rc = proc.wait()
                    if started is not None:
                        mismatches.append(_dead(args, started, calling, f'crash (exit {rc})'))
                        position = started + 1
                    break
                buf += chunk
                *lines, buf = buf.split(b'\n')
                for line in lines:
                    msg = json.loads(line)
                    if 'start' in msg:
                        started, calling = msg['start'], None
                    elif 'call' in msg:
                        calling = msg['call']
                    else:
                        started, position, cases = None, msg['done'] + 1, cases + 1
                        if msg['mismatch']:
                            mismatches.append((msg['done'], Mismatch(**msg['mismatch'])))
                if position >= end:
                    proc.kill()
                    proc.wait()
                    break
    _report(args, mismatches, cases, position)


def _dead(args, position, calling, how):
    """A worker died in (or hung on) the case at position, while `calling` ran it."""
    op, index = _schedule(db.op_db, args.batch, position)
    print(f'fuzz: {how} in {calling} on {op.name} #{index}', file=sys.stderr, flush=True)
    return position, Mismatch(op.name, index, how.split(' ')[0], f'{how} in {calling}')


def _report(args, mismatches, cases, position):
    by_op = collections.defaultdict(collections.Counter)
    for _, m in mismatches:
        by_op[m.op][m.kind] += 1
    kinds = collections.Counter(m.kind for _, m in mismatches)
    lines = [f'fuzz: seed {args.seed}, {cases} cases, {len(mismatches)} mismatches '
             f'(resume with --start {position})',
             'by kind: ' + ', '.join(f'{k} {n}' for k, n in kinds.most_common())]
    lines += [f'  {name}: ' + ', '.join(f'{k} {n}' for k, n in c.most_common())
              for name, c in sorted(by_op.items(), key=lambda kv: -sum(kv[1].values()))]
    summary = '\n'.join(lines)
    print(summary)
    with open(args.report + '.txt', 'w') as f:
        f.write(summary + '\n')
        for _, m in mismatches:
            f.write(f'{m.op} #{m.index} {m.kind}: {m.detail}\n')
    with open(args.report + '_repro.py', 'w') as f:
        f.write(f'# Reproducers of fuzz seed {args.seed}: one snippet per mismatch, run each alone.\n\n')
        for _, m in mismatches:
            f.write(reproducer(make_case(db.get(m.op), args.seed, m.index), m) + '\n\n')
    print(f'wrote {args.report}.txt and {args.report}_repro.py')


def _load_families():
    """The op families (opdb_*.py) register their entries on import."""
    folder = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(folder)):
        if name.startswith('opdb_') and name.endswith('.py'):
            importlib.import_module(f'tensorplay.testing.{name[:-3]}')


if __name__ == '__main__':
    _load_families()
    sys.exit(main())
