"""The TensorPlay op database ("opdb").

Every entry is an :class:`OpInfo` describing one public op: its name as in
``tp.<name>``, which call forms exist, the dtypes PyTorch 2.13 supports for it
on CPU, a per-dtype tolerance, a ``sample_inputs(dtype)`` generator and an
``error_inputs()`` generator.  ``tests/python/test_ops.py`` runs every entry
against PyTorch, which is the reference oracle.

Samples are written with *torch tensors* (or numpy arrays, or ``Raw`` values
passed unchanged); the harness (:func:`to_lib`) converts them for whichever
library runs, so this module imports only numpy and torch, never tensorplay.

Adding an op
------------
Most ops fit a family helper, one line each::

    unary('cbrt', domain=(-5, 5))                        # float-result unary
    binary('nextafter', dtypes=FLOATS, scalars=())       # tensor (+) tensor
    binary('bitwise_and', dtypes=INTEGRAL, operator=operator.and_)

Anything else is a plain entry whose sample function receives the OpInfo and a
:class:`Maker` bound to the dtype under test::

    def _frobnicate_samples(op, mk):
        yield from pointwise_samples(mk, 1)              # shapes/layout suite
        yield Sample((mk((3, 4)),), {'alpha': 2})

    register(OpInfo('frobnicate', _frobnicate_samples, dtypes=FLOATS,
                    inplace=True, out=True, errors=_frobnicate_errors))

``errors`` yields :class:`ErrorInput` tuples.  Ops with a function form get a
generic "argument of the wrong type -> TypeError" error input automatically.

Note [Complex dtypes in the op database]
----------------------------------------
'complex64' and 'complex128' (``COMPLEX``) go into an entry's ``dtypes`` where PyTorch and
TensorPlay both support the op for them; the Maker then draws real and imaginary parts
from the domain, and every suite (forms, gradients, forward AD, meta, vmap) runs them.
They are not in ``ALL_DTYPES``: test_ops.py's test_complex_support covers an entry without
them instead.  Where torch rejects complex input too, both must raise the same exception;
where torch supports it and TensorPlay does not yet, the op is listed in
``COMPLEX_NOT_YET`` with the reason, and TensorPlay must raise NotImplementedError there
(the test fails once support lands, so the list stays exact).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import operator
import zlib
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np
import torch

# --------------------------------------------------------------------- dtypes
ALL_DTYPES = ('bool', 'uint8', 'int8', 'int16', 'int32', 'int64',
              'float16', 'bfloat16', 'float32', 'float64')
INTEGRAL = ALL_DTYPES[:6]          # bool and the integer types
INTS = ALL_DTYPES[1:6]
FLOATS = ALL_DTYPES[6:]
NO_BOOL = ALL_DTYPES[1:]
HALF_DTYPES = ('float16', 'bfloat16')
BITS = {'uint8': 8, 'int8': 8, 'int16': 16, 'int32': 32, 'int64': 64}

# Complex dtypes stay out of ALL_DTYPES (the "every other dtype must fail as in torch"
# sweep of test_unsupported_dtypes): an entry lists them where both libraries support them,
# and test_complex_support checks the rest (Note [Complex dtypes in the op database]).
COMPLEX = ('complex64', 'complex128')
FLOATS_AND_COMPLEX = FLOATS + COMPLEX
ALL_AND_COMPLEX = ALL_DTYPES + COMPLEX

# Ops whose entries take COMPLEX (register() adds them): complex kernels (ops.yaml
# `complex: true`), ops that only move elements, the indexed writes (sums and products of
# complex numbers), products through cgemm/zgemm, and the composites built on those.
COMPLEX_OPS = frozenset("""
    abs absolute add addbmm addmm addmv addr allclose argwhere as_strided as_tensor asarray
    atleast_1d atleast_2d atleast_3d baddbmm bfloat16 block_diag bmm bool broadcast_to
    cartesian_prod cat chunk clone column_stack combinations concat concatenate
    constant_pad_nd copy_ cos count_nonzero cov cross cumprod cumsum cumulative_trapezoid
    diag diag_embed diagflat diagonal diagonal_scatter diff div divide dot double dsplit
    dstack einsum empty empty_like empty_strided eq equal exp eye fill_ flatten flip fliplr
    flipud float full full_like gather ger gru_cell half hsplit hstack index_add index_copy
    index_fill index_put index_reduce index_select inner int isclose kron linalg.eig
    linalg.eigvals linalg.matrix_power linalg.solve linalg.vecdot log long lstm_cell
    lu_unpack masked_fill masked_scatter masked_select matmul matrix_power mean meshgrid mm
    moveaxis movedim mul multiply mv narrow native_dropout native_dropout_backward ne neg
    negative nonzero not_equal ones ones_like outer permute put reciprocal reflection_pad1d
    reflection_pad2d reflection_pad3d repeat repeat_interleave replication_pad1d
    replication_pad2d replication_pad3d rnn_tanh_cell roll rot90 rsub scatter scatter_add
    scatter_reduce select select_scatter sgn sigmoid sin slice_scatter split sqrt squeeze
    stack sub subtract sum swapaxes swapdims t take take_along_dim tanh tensor tensor_split
    tensordot tile to trace transpose trapezoid tril triu true_divide unbind unflatten
    unfold unsqueeze vdot view vsplit vstack where zero_ zeros zeros_like
""".split()) | frozenset("""
    rsqrt exp2 expm1 log2 log10 log1p tan asin acos atan arcsin arccos arctan sinh cosh asinh
    acosh atanh arcsinh arccosh arctanh square nan_to_num logical_not isnan isinf isfinite pow
    float_power logaddexp logical_and logical_or logical_xor lerp addcmul addcdiv sinc
    nn.functional.silu ldexp prod all any logsumexp var std var_mean std_mean linalg.vector_norm
    linalg.matrix_norm linalg.norm norm frobenius_norm dist renorm corrcoef linspace logspace
    rms_norm _fused_rms_norm logcumsumexp
""".split())

# The linalg ops on complex LAPACK (c/z routines of OpenBLAS; CPU only) and the composites
# built on them (Note [Complex linalg gradients] in csrc/autograd/formulas_linalg.cpp).
COMPLEX_OPS = COMPLEX_OPS | frozenset("""
    linalg.det det linalg.slogdet slogdet logdet linalg.inv linalg.inv_ex inverse
    linalg.cholesky linalg.cholesky_ex cholesky linalg.svdvals triangular_solve
    linalg.lu_factor linalg.lu_factor_ex linalg.lu lu linalg.lu_solve lu_solve
    linalg.solve_ex linalg.ldl_factor linalg.ldl_factor_ex linalg.ldl_solve linalg.lstsq
    linalg.pinv pinverse linalg.matrix_rank linalg.matrix_exp matrix_exp linalg.eigvalsh
    orgqr ormqr
""".split()) | frozenset("""
    conv1d conv_transpose1d conv2d conv_transpose2d conv3d conv_transpose3d im2col col2im
""".split()) | frozenset(["nuclear_norm"])  # conv: Note [Complex convolution] in nn_conv.cpp

# Ops PyTorch computes for complex and TensorPlay does not yet: they raise
# NotImplementedError there (test_complex_support), with the reason. Empty now: every op
# database entry PyTorch computes for complex is in COMPLEX_OPS. (matrix_norm / linalg.norm /
# norm draw their singular-value orders, 2, -2 and 'nuc', for float32/float64 only:
# SVD_FLOATS.)
COMPLEX_NOT_YET: dict = {}

EXACT = (0.0, 0.0)
EXACT_TOL = {d: EXACT for d in FLOATS_AND_COMPLEX}  # op.tol for ops that must match bit for bit
# (rtol, atol) per floating or complex dtype (a complex one is compared as its parts' floats);
# integer and bool results must match exactly.
DEFAULT_TOL = {'float16': (1e-3, 1e-5), 'bfloat16': (1.6e-2, 1e-5),
               'float32': (1.3e-6, 1e-5), 'float64': (1e-7, 1e-7),
               'complex64': (1.3e-6, 1e-5), 'complex128': (1e-7, 1e-7)}
# fused ops (lerp, addcmul, ...) may round intermediates differently in half types
FUSED_TOL = {'float16': (2e-3, 2e-3), 'bfloat16': (1.6e-2, 1.6e-2)}

NAN, INF = float('nan'), float('inf')
SPECIAL = [NAN, INF, -INF, 0.0, -0.0]
GRID = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5]

LAYOUTS = ('contiguous', 'transposed', 'strided')  # the layouts every suite runs; 'conj' is test_conj_bit.py's


def dtype_name(dtype) -> str:
    """'float32' for torch.float32, tensorplay.float32, or the string itself."""
    return str(dtype).rsplit('.', 1)[-1]


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


# -------------------------------------------------------------------- samples
@dataclasses.dataclass(frozen=True)
class Raw:
    """A sample argument handed to both libraries unchanged (e.g. a numpy array
    for ``from_numpy``, or nested lists for ``tensor``)."""
    value: Any


@dataclasses.dataclass
class Sample:
    """One call: ``op(*args, **kwargs)``.

    Tensor arguments are torch tensors or numpy arrays; the harness converts
    them.  ``layout`` asks the harness to make every tensor argument
    non-contiguous the same way in both libraries: 'transposed' builds the
    transpose and calls ``.transpose(0, 1)`` (arguments with ndim >= 2),
    'strided' builds a tensor twice as wide and slices the last dim with
    ``[..., ::2]`` (ndim >= 1); 'conj' makes each complex tensor a conjugate view
    holding the same values (the conjugate, built, then ``.conj()``: the
    conjugate bit is set; test_conj_bit.py runs the complex samples so).
    """
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    layout: str = 'contiguous'

    def __post_init__(self):
        assert self.layout in LAYOUTS + ('conj',), self.layout

    def tensors(self) -> list:
        return [v for v in (*self.args, *self.kwargs.values()) if _is_input_tensor(v)]

    def traits(self) -> set:
        """Coverage traits: '0-dim', 'empty', 'noncontig', 'broadcast', 'scalar'."""
        ts = [torch.as_tensor(t) for t in self.tensors()]
        traits = set()
        if any(t.dim() == 0 for t in ts):
            traits.add('0-dim')
        if any(t.numel() == 0 for t in ts):
            traits.add('empty')
        min_dim = 2 if self.layout == 'transposed' else 1
        if self.layout != 'contiguous' and any(t.dim() >= min_dim for t in ts):
            traits.add('noncontig')
        if len({tuple(t.shape) for t in ts}) > 1:
            traits.add('broadcast')
        if any(isinstance(a, (bool, int, float)) for a in self.args):
            traits.add('scalar')
        return traits

    def __repr__(self):
        parts = [describe(a) for a in self.args]
        parts += [f'{k}={describe(v)}' for k, v in self.kwargs.items()]
        lay = '' if self.layout == 'contiguous' else f' [{self.layout}]'
        return f"Sample({', '.join(parts)}){lay}"


class ErrorInput(NamedTuple):
    """A call that must raise ``exc_type`` (checked against torch too); ``match``
    is an optional regex both messages must contain; ``form`` is 'function',
    'method', 'inplace' or 'operator'."""
    args: tuple
    kwargs: dict
    exc_type: type
    match: str | None = None
    form: str = 'function'
    layout: str = 'contiguous'

    def __repr__(self):
        s = Sample(self.args, self.kwargs, self.layout)
        return f'{self.form}{repr(s)[6:]} -> {self.exc_type.__name__}'


def describe(v) -> str:
    if isinstance(v, torch.Tensor):
        return f'{dtype_name(v.dtype)}{list(v.shape)}'
    if isinstance(v, np.ndarray):
        return f'np.{v.dtype}{list(v.shape)}'
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, Raw):
        return f'raw:{describe(v.value)}'
    if isinstance(v, (list, tuple)) and len(repr(v)) > 40:
        return f'{type(v).__name__}(len={len(v)})'
    return repr(v)


def _is_input_tensor(v) -> bool:
    return isinstance(v, (torch.Tensor, np.ndarray))


class Maker:
    """Deterministic torch tensors for one dtype; what sample functions receive.

    ``mk(shape, domain=(lo, hi), int_domain=(lo, hi), nonzero=, min_abs=,
    dtype=)`` draws uniform floats in ``domain`` or integers in ``int_domain``
    (clipped at 0 for uint8) or random bools, then casts to ``dtype``
    (default: the dtype under test).  ``mk.values([...])`` builds a 1-D tensor
    from explicit values.
    """

    def __init__(self, dtype: str, seed: int):
        self.dtype = dtype
        self._gen = torch.Generator().manual_seed(seed)

    is_float = property(lambda self: self.dtype in FLOATS)
    is_complex = property(lambda self: self.dtype in COMPLEX)
    is_int = property(lambda self: self.dtype in INTS)
    is_bool = property(lambda self: self.dtype == 'bool')

    def __call__(self, shape=(3, 4), *, dtype=None, domain=(-5.0, 5.0), int_domain=(-9, 9),
                 nonzero=False, min_abs=0.0) -> torch.Tensor:
        dt, shape = dtype or self.dtype, tuple(shape)
        if dt == 'bool':
            if nonzero:
                return torch.ones(shape, dtype=torch.bool)
            return torch.randint(0, 2, shape, generator=self._gen).bool()
        if dt in INTS:
            lo, hi = int_domain
            lo = max(lo, 0) if dt == 'uint8' else lo
            t = torch.randint(lo, hi + 1, shape, generator=self._gen)
            if nonzero:
                t[t == 0] = 1 if lo <= 1 <= hi else hi
            return t.to(torch_dtype(dt))
        lo, hi = domain
        t = torch.rand(shape, generator=self._gen, dtype=torch.float64) * (hi - lo) + lo
        if min_abs:  # for complex: on the real part, which keeps |z| >= min_abs
            t = torch.where(t.abs() < min_abs, torch.full_like(t, min_abs).copysign(t), t)
        if dt in COMPLEX:  # the imaginary part from the same domain
            t = torch.complex(t, torch.rand(shape, generator=self._gen, dtype=torch.float64) * (hi - lo) + lo)
        t = t.to(torch_dtype(dt))
        if nonzero:
            t[t == 0] = 1
        return t

    def values(self, vals, dtype=None) -> torch.Tensor:
        dt = dtype or self.dtype
        wide = torch.complex128 if dt in COMPLEX or any(isinstance(v, complex) for v in _flat(vals)) \
            else torch.float64
        return torch.tensor(vals, dtype=wide).to(torch_dtype(dt))


def _flat(vals):
    if isinstance(vals, (list, tuple)):
        for v in vals:
            yield from _flat(v)
    else:
        yield vals


# Shapes every pointwise op is run with, per arity: same shape, 0-dim, empty,
# broadcasting.  Non-contiguous variants follow with the layout flag set.
SHAPES = {
    1: [((3, 4),), ((),), ((0,),), ((2, 0),), ((2, 3, 4),)],
    2: [((3, 4), (3, 4)), ((), ()), ((3, 4), ()), ((), (3, 4)), ((0,), (0,)),
        ((2, 0), (1, 0)), ((0, 3), (3,)), ((3, 1), (1, 4)), ((3, 4), (4,)),
        ((2, 3, 4), (3, 1))],
    3: [((3, 4),) * 3, ((),) * 3, ((0,),) * 3, ((3, 4), (), ()), ((3, 1), (1, 4), (4,)),
        ((2, 3, 4), (3, 1), (4,))],
}
NONCONTIG = {
    1: [('transposed', ((4, 3),)), ('strided', ((3, 4),))],
    2: [('transposed', ((4, 3), (4, 3))), ('strided', ((3, 4), (3, 4))),
        ('transposed', ((4, 3), (3,)))],
    3: [('transposed', ((4, 3),) * 3), ('strided', ((3, 4),) * 3)],
}


def pointwise_samples(mk: Maker, arity: int, argopts=None, variants=({},)) -> Iterator[Sample]:
    """The shape/layout suite for a pointwise op; ``argopts[i]`` are Maker
    options for argument i; kwargs variants after the first run on one shape."""
    argopts = argopts or [{}] * arity
    make = lambda shapes: tuple(mk(s, **o) for s, o in zip(shapes, argopts))
    for i, kw in enumerate(variants):
        for shapes in (SHAPES[arity] if i == 0 else SHAPES[arity][:1]):
            yield Sample(make(shapes), dict(kw))
    for layout, shapes in NONCONTIG[arity]:
        yield Sample(make(shapes), dict(variants[0]), layout)


# --------------------------------------------------------------------- OpInfo
SampleFn = Callable[['OpInfo', Maker], Iterable[Sample]]


@dataclasses.dataclass(eq=False)
class OpInfo:
    """One op.  Forms: ``function`` -> ``tp.name(*args)``; ``method`` ->
    ``args[self_arg].name(*rest)``; ``inplace`` -> ``self.name_(*rest)``;
    ``out`` -> ``tp.name(*args, out=t)``; ``operator`` -> a Python operator
    such as ``operator.add`` applied to the positional args.

    ``dtypes`` are the dtypes PyTorch 2.13 CPU accepts (for the tensor inputs,
    the target of conversions, or the ``dtype=`` of creation ops); the others
    are checked to fail the same way in both libraries.  ``coverage`` lists
    the sample traits (see ``Sample.traits``) the samples must include.
    ``message_names``: words an error message may use to name the op
    (whole words, case-insensitive; default: the name without a trailing '_').
    A dotted name ('linalg.vector_norm') is looked up attribute by attribute.
    """
    name: str
    samples: SampleFn
    dtypes: tuple = ALL_DTYPES
    function: bool = True
    method: bool = True
    inplace: bool = False
    out: bool = False
    operator: Callable | None = None
    self_arg: int = 0
    tol: dict = dataclasses.field(default_factory=dict)
    errors: Callable[['OpInfo'], Iterable[ErrorInput]] | None = None
    compare_values: bool = True
    coverage: tuple = ()
    message_names: tuple = ()

    def __post_init__(self):
        self.message_names = self.message_names or (self.name.rstrip('_'),)

    def sample_inputs(self, dtype: str) -> Iterator[Sample]:
        seed = zlib.crc32(f'{self.name}:{dtype}'.encode())
        yield from self.samples(self, Maker(dtype, seed))

    def error_inputs(self) -> Iterator[ErrorInput]:
        if self.errors:
            yield from self.errors(self)
        if self.function:
            yield from _wrong_type_errors(self)

    def tolerance(self, dtype) -> tuple:
        name = dtype_name(dtype)
        if name not in FLOATS_AND_COMPLEX:
            return EXACT
        return self.tol.get(name, DEFAULT_TOL[name])

    @property
    def forms(self) -> list:
        flags = [('function', self.function), ('method', self.method),
                 ('inplace', self.inplace), ('out', self.out),
                 ('operator', self.operator is not None)]
        return [f for f, on in flags if on]

    @property
    def primary_form(self) -> str:
        return 'function' if self.function else 'method'

    def applies(self, form: str, sample) -> bool:
        """Whether a sample (or ErrorInput) can be called in this form."""
        if form in ('method', 'inplace'):
            return len(sample.args) > self.self_arg and _is_input_tensor(sample.args[self.self_arg])
        if form == 'operator':
            return not sample.kwargs
        return True

    def call(self, form: str, lib, args, kwargs, out=None):
        """Calls the op in ``form``.  In-place returns (result, self); out=
        returns (result, out)."""
        if form == 'function':
            return resolve(lib, self.name)(*args, **kwargs)
        if form == 'operator':
            return self.operator(*args)
        if form == 'out':
            return resolve(lib, self.name)(*args, **kwargs, out=out), out
        rest = args[:self.self_arg] + args[self.self_arg + 1:]
        self_t = args[self.self_arg]
        if form == 'method':
            return getattr(self_t, self.name)(*rest, **kwargs)
        if form == 'inplace':
            return getattr(self_t, self.name + '_')(*rest, **kwargs), self_t
        raise ValueError(form)

    def __repr__(self):
        return f'OpInfo({self.name})'


op_db: list[OpInfo] = []


def lib_exception(exc_type: type, lib) -> type:
    """The exception type lib raises where torch raises exc_type: the builtin types are
    shared; torch.linalg.LinAlgError is lib.linalg.LinAlgError."""
    if exc_type is torch.linalg.LinAlgError:
        return lib.linalg.LinAlgError
    return exc_type


def register(op: OpInfo) -> OpInfo:
    assert all(o.name != op.name for o in op_db), f'duplicate opdb entry {op.name}'
    if op.name in COMPLEX_OPS:  # Note [Complex dtypes in the op database]
        op.dtypes = tuple(op.dtypes) + COMPLEX
    op_db.append(op)
    return op


def get(name: str) -> OpInfo:
    return next(o for o in op_db if o.name == name)


def resolve(lib, name: str, default=None):
    """``lib.<name>``, following dots ('linalg.vector_norm'); ``default`` if missing."""
    obj = lib
    for part in name.split('.'):
        obj = getattr(obj, part, None)
        if obj is None:
            return default
    return obj


def _first_sample(op: OpInfo) -> Sample:
    dt = 'float32' if 'float32' in op.dtypes else op.dtypes[0]
    return next(s for s in op.sample_inputs(dt) if s.layout == 'contiguous')


def _wrong_type_errors(op: OpInfo) -> Iterator[ErrorInput]:
    """A string where a tensor (or the first argument) belongs -> TypeError."""
    s = _first_sample(op)
    spots = [i for i, a in enumerate(s.args) if _is_input_tensor(a)] or [0]
    for i in spots[:2]:
        args = s.args[:i] + ('not a tensor',) + s.args[i + 1:]
        yield ErrorInput(args, s.kwargs, TypeError)


def _errors(*makers):
    """Combines error generators (each taking the OpInfo) into one."""
    def gen(op):
        for m in makers:
            yield from m(op)
    return gen


def _broadcast_error(arity):
    def gen(op):
        dt = 'float32' if 'float32' in op.dtypes else op.dtypes[-1]
        shapes = [(3,), (4,), (3,)][:arity]
        yield ErrorInput(tuple(torch.ones(s, dtype=torch_dtype(dt)) for s in shapes), {}, RuntimeError)
    return gen


def _err(*args, exc=RuntimeError, match=None, form='function', layout='contiguous', **kwargs):
    """An error generator yielding one ErrorInput."""
    return lambda op: iter([ErrorInput(args, kwargs, exc, match, form, layout)])


def _t(vals, dtype='float32'):
    return torch.tensor(vals, dtype=torch_dtype(dtype))


# ------------------------------------------------------------ unary pointwise
POINTWISE_COVERAGE = ('0-dim', 'empty', 'noncontig')


def unary(name, dtypes=ALL_DTYPES, *, domain=(-5.0, 5.0), int_domain=(-9, 9), extras=(),
          variants=None, inplace=True, out=True, errors=None, **kw) -> OpInfo:
    """A one-tensor pointwise op; ``extras`` are float edge values added to
    nan/+-inf/+-0; ``variants(dtype)`` returns the kwargs dicts to try."""
    def samples(op, mk):
        kws = variants(mk.dtype) if variants else ({},)
        yield from pointwise_samples(mk, 1, [dict(domain=domain, int_domain=int_domain)], kws)
        if mk.is_float:
            for k in kws:
                yield Sample((mk.values(SPECIAL + list(extras)),), dict(k))
    return register(OpInfo(name, samples, dtypes, inplace=inplace, out=out, errors=errors,
                           coverage=POINTWISE_COVERAGE, **kw))


# Float-result ops (integer inputs promote to float32) with their domains.
for _name, _dom, _extras in [
        ('sqrt', (0, 10), (-1, 4)), ('rsqrt', (0.1, 10), (-1, 4)),
        ('exp', (-5, 5), (20, -20)), ('exp2', (-5, 5), (20,)), ('expm1', (-5, 5), (1e-5,)),
        ('log', (0.1, 10), (-1, 1)), ('log2', (0.1, 10), (-1, 8)),
        ('log10', (0.1, 10), (-1, 100)), ('log1p', (-0.9, 10), (-1, -2, 1e-5)),
        ('sin', (-5, 5), ()), ('cos', (-5, 5), ()), ('tan', (-1.5, 1.5), ()),
        ('asin', (-1, 1), (1, -1, 1.5)), ('acos', (-1, 1), (1, -1, 1.5)), ('atan', (-5, 5), ()),
        ('arcsin', (-1, 1), (1, -1, 1.5)), ('arccos', (-1, 1), (1, -1, 1.5)), ('arctan', (-5, 5), ()),
        ('sinh', (-5, 5), ()), ('cosh', (-5, 5), ()), ('tanh', (-5, 5), (20,)),
        ('asinh', (-5, 5), ()), ('acosh', (1, 10), (1, 0.5)), ('atanh', (-0.99, 0.99), (1, -1, 2)),
        ('arcsinh', (-5, 5), ()), ('arccosh', (1, 10), (1, 0.5)), ('arctanh', (-0.99, 0.99), (1, -1, 2)),
        ('sigmoid', (-5, 5), (20, -20)), ('erf', (-3, 3), ()), ('erfc', (-3, 3), (10,)),
        ('erfinv', (-0.99, 0.99), (1, -1, 1.5, 0.999)), ('reciprocal', (-5, 5), (1, 0.1))]:
    unary(_name, domain=_dom, extras=_extras)

unary('logit', domain=(0.01, 0.99), extras=(1, -0.1, 0.5),
      variants=lambda dt: ({}, {'eps': 0.1}, {'eps': None}))
unary('neg', NO_BOOL, operator=operator.neg,
      errors=_errors(_err(_t([True, False], 'bool')),
                     _err(_t([True, False], 'bool'), form='operator')))
unary('abs', NO_BOOL, operator=abs)
unary('negative', NO_BOOL, errors=_err(_t([True, False], 'bool')))  # aliases of neg and abs
unary('absolute', NO_BOOL)
unary('relu', NO_BOOL, inplace=True, out=False)
unary('sign', extras=(-2.5,))
unary('sgn', extras=(-2.5,))
unary('square')
unary('frac', FLOATS, extras=(2.5, -2.5))
unary('floor', NO_BOOL, extras=(2.5, -2.5))
unary('ceil', NO_BOOL, extras=(2.5, -2.5))
unary('trunc', NO_BOOL, extras=(2.5, -2.5))
unary('fix', NO_BOOL, extras=(2.5, -2.5))  # alias of trunc
for _name in ('deg2rad', 'rad2deg'):  # composites in Python (tensorplay/_elementwise.py)
    unary(_name, inplace=False, out=False)
unary('round', NO_BOOL, extras=(0.5, 1.5, 2.5, -0.5, -2.5, 1234.5),
      variants=lambda dt: ({}, {'decimals': 2}, {'decimals': -1}) if dt in FLOATS else ({},),
      errors=_err(_t([1, 2], 'int64'), decimals=2, exc=NotImplementedError))
unary('nan_to_num', extras=(1e30, -1e30),
      variants=lambda dt: ({}, {'nan': 0.5, 'posinf': 10.0, 'neginf': -10.0}, {'nan': 1.0}))
unary('logical_not')
unary('bitwise_not', INTEGRAL, operator=operator.invert, message_names=('bitwise_not', 'invert'),
      errors=_err(_t([1.5]), exc=TypeError, form='operator'))
for _name in ('isnan', 'isinf', 'isfinite', 'isposinf', 'isneginf'):
    unary(_name, inplace=False, out=_name in ('isposinf', 'isneginf'))


# ----------------------------------------------------------- binary pointwise
def _float_partner(dt):
    return 'float32' if dt != 'float32' else 'int64'


def _int_partner(dt):
    return 'int64' if dt != 'int64' else 'int16'


def _same_kind_float_partner(dt):
    return 'float64' if dt != 'float64' else 'float32'


def binary(name, dtypes=ALL_DTYPES, *, lhs=None, rhs=None, scalars=(3, 2.5, True),
           scalar_self=(), partner=_float_partner, variants=None, grid=True, extra=None,
           inplace=True, out=True, errors=None, **kw) -> OpInfo:
    """A two-tensor pointwise op.  ``lhs``/``rhs``: Maker options per operand;
    ``scalars``: Python numbers tried as the second operand, ``scalar_self``
    as the first; ``partner(dtype)``: a second dtype for a mixed-dtype pair;
    ``grid``: float edge values (nan, inf, +-0, ...) against each other;
    ``extra(mk)``: more samples."""
    lhs, rhs = lhs or {}, rhs or {}

    def samples(op, mk):
        kws = variants(mk.dtype) if variants else ({},)
        yield from pointwise_samples(mk, 2, [lhs, rhs], kws)
        for k in kws:
            for s in scalars:
                yield Sample((mk((3, 4), **lhs), s), dict(k))
            for s in scalar_self:
                yield Sample((s, mk((3, 4), **rhs)), dict(k))
        if mk.is_complex and scalars:  # a complex Python number (the scalars' kwargs variant)
            yield Sample((mk((3, 4), **lhs), 2 - 1.5j))
            if scalar_self:
                yield Sample((0.5 + 2j, mk((3, 4), **rhs)))
        p = partner(mk.dtype) if partner else None
        if p:
            yield Sample((mk((3, 4), **lhs), mk((3, 4), dtype=p, **rhs)))
            yield Sample((mk((3, 4), dtype=p, **lhs), mk((3, 4), **rhs)))
        if grid and mk.is_float:
            a = mk.values(GRID)
            for k in kws:
                yield Sample((a.reshape(-1, 1), a.reshape(1, -1)), dict(k))
        if extra:
            yield from extra(mk)

    cov = POINTWISE_COVERAGE + ('broadcast',) + (('scalar',) if scalars else ())
    no_scalars = (lambda op: iter([ErrorInput((_t([1.0, 2.0]), 2), {}, TypeError)])) if not scalars else None
    errs = [e for e in (errors, _broadcast_error(2), no_scalars) if e]
    return register(OpInfo(name, samples, dtypes, inplace=inplace, out=out, errors=_errors(*errs),
                           coverage=cov, **kw))


_NONZERO = dict(nonzero=True, min_abs=0.1)
_I64 = torch.tensor([4, -5, 7])
_ZERO_DIV = torch.tensor([1, 0, 2])


def _zero_division(**kwargs):
    return _err(_I64, _ZERO_DIV, match='ZeroDivisionError', **kwargs)


def _alpha(dt):
    return ({}, {'alpha': 0.5 if dt in FLOATS else 2})


binary('add', variants=_alpha, scalar_self=(2, 2.5), operator=operator.add,
       errors=_errors(_err(_t([1, 2], 'int64'), _t([1.5, 2.5]), form='inplace'),
                      _err(_t([1, 2], 'int64'), _t([1, 2], 'int64'), alpha=1.5)))
binary('sub', NO_BOOL, variants=_alpha, scalars=(3, 2.5), scalar_self=(2, 2.5), operator=operator.sub,
       errors=_errors(_err(_t([True], 'bool'), _t([False], 'bool')),
                      _err(_I64, True), _err(True, _I64)))
binary('mul', scalar_self=(2, 2.5), operator=operator.mul)
binary('multiply', scalar_self=(2, 2.5))  # alias of mul
binary('subtract', NO_BOOL, variants=_alpha, scalars=(3, 2.5), scalar_self=(2, 2.5),  # alias of sub
       errors=_errors(_err(_t([True], 'bool'), _t([False], 'bool')), _err(_I64, True)))
# alias of div. No 'trunc' for the half types: torch's own result differs by path there (its
# vectorised loop rounds a bfloat16 quotient such as 2 / -0.4004 = -4.995 to -5 before
# truncating, its broadcast loop gives -4, as ours does); div's samples cover 'trunc'
binary('divide', rhs=_NONZERO, scalar_self=(2, 2.5),
       variants=lambda dt: ({}, {'rounding_mode': 'floor'}) + (() if dt in ('bfloat16', 'float16') else
                                                              ({'rounding_mode': 'trunc'},))
       if dt not in ('bool',) + COMPLEX else ({},),
       errors=_errors(_zero_division(rounding_mode='trunc'), _err(_t([1.0]), _t([1.0]), rounding_mode='round')))
binary('div', rhs=_NONZERO, scalar_self=(2, 2.5), operator=operator.truediv,
       variants=lambda dt: ({}, {'rounding_mode': 'trunc'}, {'rounding_mode': 'floor'},
                            {'rounding_mode': None}) if dt not in ('bool',) + COMPLEX else ({},),
       errors=_errors(_zero_division(rounding_mode='trunc'), _zero_division(rounding_mode='floor'),
                      _err(_t([1.0]), _t([1.0]), rounding_mode='round'),
                      _err(_t([True], 'bool'), _t([True], 'bool'), rounding_mode='trunc',
                           exc=NotImplementedError)))
binary('true_divide', rhs=_NONZERO, scalar_self=(2, 2.5),
       errors=_err(_t([1.0]), _t([1.0]), rounding_mode='floor', exc=TypeError))
binary('floor_divide', NO_BOOL, rhs=_NONZERO, scalar_self=(7, 2.5), operator=operator.floordiv,
       errors=_zero_division())
binary('remainder', NO_BOOL, rhs=_NONZERO, scalar_self=(7, 2.5), operator=operator.mod,
       errors=_errors(_zero_division(), _err(_I64, 0, match='ZeroDivisionError')))
binary('fmod', NO_BOOL, rhs=_NONZERO, errors=_zero_division())
binary('pow', NO_BOOL, lhs=dict(int_domain=(-4, 4), domain=(-3, 3)),
       rhs=dict(int_domain=(0, 3), domain=(-3, 3)), scalars=(2, 0.5, -0.5, -1.5, True),
       scalar_self=(2, 2.5), operator=operator.pow,
       # Note [pow by a number]: these exponents are square/sqrt/rsqrt/reciprocal, special values included
       extra=lambda mk: [Sample((mk.values([-0.0, float('-inf'), float('inf'), float('nan'), 4.0, -2.0] * 3), e))
                         for e in (2, 2.0, 0.5, -0.5, -1, -1.0)] if mk.is_float else [],
       errors=_errors(_err(_I64, -1, match='negative'), _err(_I64, -1, form='operator')))
binary('atan2', scalars=())
binary('arctan2', scalars=())  # alias of atan2
# composites in Python (tensorplay/_elementwise.py): no in-place or out= forms yet
for _name in ('logaddexp', 'logaddexp2'):
    binary(_name, FLOATS, scalars=(), inplace=False, out=False,
           extra=lambda mk: [Sample((mk.values([1.0, -3.0, 0.5]), mk.values([1.0, 40.0, -40.0])))])


def _isin_samples(op, mk):
    values = mk.values([[1, 2, 3, 4], [5, 6, 7, 2]])
    yield Sample((values, mk.values([2, 5, 9])))
    yield Sample((values, mk.values([[7], [1]])), {'invert': True})
    yield Sample((values, mk.values([3, 3, 4])), {'assume_unique': False})
    yield Sample((values, mk.values([8, 4])), layout='transposed')
    yield Sample((mk.values(6), values))  # 0-dim elements
    yield Sample((values, 5))             # a number to look for
    yield Sample((4, mk.values([4, 1])))  # a number to look up
    yield Sample((mk.values([]), values))  # empty
    yield Sample((values, mk.values([])))
    if mk.is_float:
        yield Sample((mk.values([float('nan'), 1.5, -0.0]), mk.values([float('nan'), 0.0, 1.5])))


register(OpInfo('isin', _isin_samples, NO_BOOL, method=False, coverage=('0-dim', 'empty', 'noncontig', 'scalar'),
                errors=_errors(_err(_t([True, False], 'bool'), _t([True], 'bool')), _err(1, 2, exc=TypeError))))
binary('copysign', scalars=(3, -2.5, True))
binary('xlogy', scalar_self=(2, 0.5))
binary('hypot', FLOATS, scalars=(), partner=_same_kind_float_partner)
for _name in ('maximum', 'minimum', 'fmax', 'fmin'):
    binary(_name, scalars=(), inplace=False)
for _name, _op in [('eq', operator.eq), ('ne', operator.ne), ('lt', operator.lt),
                   ('le', operator.le), ('gt', operator.gt), ('ge', operator.ge)]:
    binary(_name, operator=_op)
for _name in ('not_equal', 'less', 'less_equal', 'greater', 'greater_equal'):  # aliases of ne, lt, le, gt, ge
    binary(_name)
for _name in ('logical_and', 'logical_or', 'logical_xor'):
    binary(_name, scalars=())
for _name, _op in [('bitwise_and', operator.and_), ('bitwise_or', operator.or_),
                   ('bitwise_xor', operator.xor)]:
    binary(_name, INTEGRAL, scalars=(3, True), scalar_self=(3,), partner=_int_partner, operator=_op)


def _big_shifts(mk):
    """Shift amounts up to past the bit width (torch defines the result)."""
    bits = BITS.get(mk.dtype, 32)
    amounts = mk.values([0, 1, bits - 1, bits, bits + 3] if bits < 64 else [0, 1, 62, 63])
    yield Sample((mk((5, 1), int_domain=(-120, 120)), amounts.reshape(1, -1)))


for _name, _op in [('bitwise_left_shift', operator.lshift), ('bitwise_right_shift', operator.rshift)]:
    binary(_name, INTS, rhs=dict(int_domain=(0, 3)), scalars=(2, True), scalar_self=(2,),
           partner=_int_partner, operator=_op, extra=_big_shifts,
           errors=_err(_t([1, 2], 'int32'), 1.5, exc=NotImplementedError))


# ---------------------------------------------------------- ternary and others
def _where_samples(op, mk):
    cond = dict(dtype='bool')
    yield from pointwise_samples(mk, 3, [cond, {}, {}])
    yield Sample((mk((3, 4), **cond), mk((3, 4)), 2.5))
    yield Sample((mk((3, 4), **cond), 3, mk((3, 4))))
    yield Sample((mk((3, 4), **cond), 1.5, 2))
    yield Sample((mk((3, 4), **cond), mk((3, 4)), mk((3, 4), dtype=_float_partner(mk.dtype))))


register(OpInfo('where', _where_samples, out=True, self_arg=1,
                coverage=POINTWISE_COVERAGE + ('broadcast', 'scalar'),
                errors=_errors(_err(_t([1, 0], 'int64'), _t([1.0, 2.0]), _t([3.0, 4.0])),
                               _err(_t([True, False, True], 'bool'), _t([1.0, 2.0]), _t([3.0])))))


def _clamp_samples(op, mk):
    lo, hi = dict(domain=(-5, 1), int_domain=(-9, 2)), dict(domain=(-1, 5), int_domain=(-2, 9))
    yield from pointwise_samples(mk, 3, [{}, lo, hi])
    for lo_s, hi_s in [(-2, 2), (-1.5, 2.5), (2, -2), (0, True)]:
        yield Sample((mk((3, 4)), lo_s, hi_s))
    yield Sample((mk((3, 4)),), {'min': 0})
    yield Sample((mk((3, 4)),), {'max': 0})
    yield Sample((mk((3, 4)),), {'min': mk((3, 4), **lo)})
    yield Sample((mk((3, 4)),), {'max': mk((4,), **hi)}, 'transposed')
    yield Sample((mk((3, 4)), None, 1))
    if mk.is_float:
        yield Sample((mk.values(SPECIAL + [3.0, -3.0]), -1, 1))


for _name in ('clamp', 'clip'):
    register(OpInfo(_name, _clamp_samples, NO_BOOL, inplace=True, out=True,
                    coverage=POINTWISE_COVERAGE + ('broadcast', 'scalar'),
                    errors=_errors(_err(_t([1.0, 2.0]), match='min|max'),
                                   _err(_t([1.0, 2.0]), None, None),
                                   _broadcast_error(3))))


def _lerp_samples(op, mk):
    w = dict(domain=(0, 1))
    yield from pointwise_samples(mk, 3, [{}, {}, w])
    for weight in (0.3, 0, 1, 2):
        yield Sample((mk((3, 4)), mk((3, 4)), weight))
    yield Sample((mk((3, 4)), mk((4,)), 0.5), layout='transposed')
    yield Sample((mk.values(SPECIAL), mk.values([1, 1, 1, 1, 1]), 0.5))


register(OpInfo('lerp', _lerp_samples, FLOATS, inplace=True, out=True, tol=FUSED_TOL,
                coverage=POINTWISE_COVERAGE + ('broadcast', 'scalar'),
                errors=_errors(_err(_t([1.0]), _t([1.0], 'float64'), 0.5), _broadcast_error(3))))


def _addc_samples(divide):
    def samples(op, mk):
        t2 = dict(min_abs=0.5, nonzero=True) if divide else {}
        value = 0.5 if mk.is_float else 2
        yield from pointwise_samples(mk, 3, [{}, {}, t2], ({}, {'value': value}))
        yield Sample((mk((3, 4)), mk((3, 4)), mk((3, 4), **t2)), {'value': -1})
    return samples


register(OpInfo('addcmul', _addc_samples(False), NO_BOOL, inplace=True, out=True, tol=FUSED_TOL,
                coverage=POINTWISE_COVERAGE + ('broadcast',), errors=_broadcast_error(3)))
register(OpInfo('addcdiv', _addc_samples(True), FLOATS, inplace=True, out=True, tol=FUSED_TOL,
                coverage=POINTWISE_COVERAGE + ('broadcast',),
                errors=_errors(_err(_I64, _I64, _I64), _broadcast_error(3))))


# ------------------------------------------------------- conversions / copies
def _cast_opts(src, dst):
    """Maker options whose values convert src -> dst without undefined behaviour
    (floats going to uint8 must not be negative)."""
    if src in FLOATS and dst == 'uint8':
        return dict(domain=(0, 9.9))
    return dict(domain=(-9.9, 9.9))


def _conversion(name, target):
    """``t.<name>()``, e.g. t.float(); ``target`` is the dtype it converts to."""
    def samples(op, mk):
        opts = _cast_opts(mk.dtype, target)
        yield from pointwise_samples(mk, 1, [opts])
        if mk.is_float and target in FLOATS + ('bool',):
            yield Sample((mk.values(SPECIAL),))
    register(OpInfo(name, samples, function=False, tol=EXACT_TOL, coverage=POINTWISE_COVERAGE))


for _name, _target in [('float', 'float32'), ('double', 'float64'), ('half', 'float16'),
                       ('bfloat16', 'bfloat16'), ('int', 'int32'), ('long', 'int64'),
                       ('bool', 'bool')]:
    _conversion(_name, _target)


def _to_samples(op, mk):
    for target in ALL_DTYPES:
        yield Sample((mk((3, 4), **_cast_opts(mk.dtype, target)), torch_dtype(target)))
    yield Sample((mk((3, 4), **_cast_opts(mk.dtype, 'int8')),), {'dtype': torch.int8})
    for layout, shape in [('contiguous', ()), ('contiguous', (2, 0)), ('transposed', (4, 3)),
                          ('strided', (3, 4))]:
        yield Sample((mk(shape, **_cast_opts(mk.dtype, 'uint8')), torch.float64), layout=layout)
        yield Sample((mk(shape, **_cast_opts(mk.dtype, 'uint8')), torch.uint8), layout=layout)
    if mk.is_float:
        for target in FLOATS + ('bool',):
            yield Sample((mk.values(SPECIAL), torch_dtype(target)))


register(OpInfo('to', _to_samples, function=False, tol=EXACT_TOL, coverage=POINTWISE_COVERAGE,
                errors=_err(_t([1.0]), 'not a dtype', form='method')))


def _copy_samples(op, mk):
    """self has the dtype under test; sources of every dtype."""
    for src in ALL_DTYPES:
        yield Sample((mk((3, 4)), mk((3, 4), dtype=src, **_cast_opts(src, mk.dtype))))
    src = dict(dtype='float64', **_cast_opts('float64', mk.dtype))
    yield Sample((mk((3, 4)), mk((4,), **src)))
    yield Sample((mk((3, 4)), mk((), **src)))
    yield Sample((mk(()), mk((), **src)))
    yield Sample((mk((0, 3)), mk((3,), **src)))
    yield Sample((mk((4, 3)), mk((4, 3), **src)), layout='transposed')
    yield Sample((mk((3, 4)), mk((3, 4), **src)), layout='strided')


register(OpInfo('copy_', _copy_samples, function=False, tol=EXACT_TOL,
                coverage=POINTWISE_COVERAGE + ('broadcast',),
                errors=_errors(_err(torch.zeros(2, 3), torch.ones(2), form='method'),
                               _err(torch.zeros(2), 'abc', form='method', exc=TypeError))))


def _fill_samples(op, mk):
    for value in (3, 2.5, True, -1.5 if not mk.dtype == 'uint8' else 0):
        yield Sample((mk((3, 4)), value))
    yield Sample((mk((3, 4)), mk(())))
    yield Sample((mk((3, 4)), mk((), dtype='float64', **_cast_opts('float64', mk.dtype))))
    for layout, shape in [('contiguous', ()), ('contiguous', (0,)), ('contiguous', (2, 0)),
                          ('transposed', (4, 3)), ('strided', (3, 4))]:
        yield Sample((mk(shape), 1), layout=layout)


register(OpInfo('fill_', _fill_samples, function=False, tol=EXACT_TOL, coverage=POINTWISE_COVERAGE,
                errors=_errors(_err(torch.zeros(2), torch.ones(2), form='method'),
                               _err(torch.zeros(2, dtype=torch.uint8), 300, form='method'),
                               _err(torch.zeros(2), 'abc', form='method', exc=TypeError))))


def _suite1(op, mk):
    yield from pointwise_samples(mk, 1)


register(OpInfo('zero_', _suite1, function=False, tol=EXACT_TOL, coverage=POINTWISE_COVERAGE))
register(OpInfo('clone', _suite1, tol=EXACT_TOL, coverage=POINTWISE_COVERAGE))


def _view_samples(op, mk):
    t = lambda *s: mk(s)
    for shape in [(12,), (-1,), (2, 6), ((6, 2),), ([4, 3],), (3, -1), (2, 3, 2), (1, 12, 1)]:
        yield Sample((t(3, 4),) + shape)
    yield Sample((t(), 1))
    yield Sample((t(), ()))
    yield Sample((t(1, 1), ()))
    yield Sample((t(0), 0, 3))
    yield Sample((t(2, 0), 0))
    yield Sample((t(3, 4), 3, 2, 2), layout='strided')     # splitting a strided dim is fine


register(OpInfo('view', _view_samples, function=False, tol=EXACT_TOL,
                coverage=('0-dim', 'empty', 'noncontig'),
                errors=_errors(_err(torch.ones(3, 4), 5, form='method'),
                               _err(torch.ones(3, 4), -1, -1, form='method'),
                               _err(torch.ones(3, 4), -1, form='method', layout='transposed'),
                               _err(torch.ones(3, 4), 'abc', form='method', exc=TypeError))))


# ------------------------------------------------------------------- creation
def _py_values(dtype, n):
    """n Python values (ints, floats or bools) natural for dtype."""
    if dtype == 'bool':
        return [bool(i % 3) for i in range(n)]
    if dtype in INTS:
        return [(i * 7) % 10 - (0 if dtype == 'uint8' else 4) for i in range(n)]
    return [(i * 7) % 10 / 4 - 1.25 for i in range(n)]


_NP = {d: d for d in ALL_DTYPES if d != 'bfloat16'}


def _data_samples(op, mk):
    """Nested lists, scalars and numpy arrays, with and without dtype=."""
    dt, tdt = mk.dtype, torch_dtype(mk.dtype)
    vals = _py_values(dt, 6)
    for data in (vals, [vals[:3], vals[3:]], vals[0], [], [[], []], [[[vals[0]]]]):
        yield Sample((Raw(data),), {'dtype': tdt})
    if dt in ('int64', 'float32', 'bool'):      # dtype inferred from Python values
        yield Sample((Raw([vals[:3], vals[3:]]),))
        yield Sample((Raw(vals[1]),))
    if dt == 'float32':
        yield Sample((Raw([1, 2.5, True]),))
        yield Sample((Raw([]),))
    if dt in _NP:
        arr = np.array(vals, dtype=_NP[dt]).reshape(2, 3)
        yield Sample((Raw(arr),))
        yield Sample((Raw(arr.T),))
        yield Sample((Raw(arr),), {'dtype': torch.float64})
    if op.name != 'tensor':
        yield Sample((mk((2, 3)),), {'dtype': torch.float64})
        yield Sample((mk((2, 3)),))


register(OpInfo('tensor', _data_samples, method=False, tol=EXACT_TOL,
                errors=_err(Raw([[1], [1, 2]]), exc=ValueError)))
register(OpInfo('as_tensor', _data_samples, method=False, tol=EXACT_TOL))
register(OpInfo('asarray', _data_samples, method=False, tol=EXACT_TOL))


def _from_numpy_samples(op, mk):
    if mk.dtype not in _NP:     # numpy has no bfloat16
        return
    arr = np.array(_py_values(mk.dtype, 12), dtype=_NP[mk.dtype]).reshape(3, 4)
    for a in (arr, arr.T, arr[:, ::2], arr[1], np.array(arr[0, 0]), arr[:0], arr[:, :0]):
        yield Sample((Raw(a),))


register(OpInfo('from_numpy', _from_numpy_samples, tuple(_NP), method=False, tol=EXACT_TOL,
                errors=_err(Raw(np.array(['a'], dtype=object)), exc=TypeError)))


_SIZES = [((2, 3),), (2, 3), ([2, 3],), ((),), (0,), (2, 0), (4,)]


def _size_samples(*extra):
    def samples(op, mk):
        for size in _SIZES:
            yield Sample(size + extra, {'dtype': torch_dtype(mk.dtype)})
        if mk.dtype == 'float32':
            yield Sample(((2, 3),) + extra)
    return samples


def _full_samples(op, mk):
    value = _py_values(mk.dtype, 3)[2]
    for size in [(2, 3), (), (0,), (2, 0), [4]]:
        yield Sample((size, value), {'dtype': torch_dtype(mk.dtype)})
    if mk.dtype in ('int64', 'float32', 'bool'):  # dtype inferred from fill_value
        yield Sample(((2, 3), value))


def _creation(name, samples, dtypes=ALL_DTYPES, **kw):
    kw.setdefault('tol', EXACT_TOL)
    return register(OpInfo(name, samples, dtypes, method=False, **kw))


_creation('zeros', _size_samples(), out=True, errors=_err(-1))
_creation('ones', _size_samples(), out=True)
_creation('empty', _size_samples(), out=True, compare_values=False)
_creation('full', _full_samples, out=True, errors=_err((2,), 300, dtype=torch.uint8))


def _like_samples(*extra):
    def samples(op, mk):
        for s in pointwise_samples(mk, 1):
            yield Sample(s.args + extra, layout=s.layout)
        yield Sample((mk((3, 4)),) + extra, {'dtype': torch.float64})
        yield Sample((mk((3, 4), dtype='float32'),) + extra, {'dtype': torch_dtype(mk.dtype)})
    return samples


_like = dict(coverage=POINTWISE_COVERAGE)
_creation('zeros_like', _like_samples(), **_like)
_creation('ones_like', _like_samples(), **_like)
_creation('full_like', _like_samples(1), **_like)
_creation('empty_like', _like_samples(), compare_values=False, **_like)


def _empty_strided_samples(op, mk):
    for size, stride in [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((), ()), ((0, 3), (3, 1)), ((4,), (2,))]:
        yield Sample((size, stride), {'dtype': torch_dtype(mk.dtype)})


_creation('empty_strided', _empty_strided_samples, compare_values=False)


def _range_args(dt):
    """(start, end, step) triples natural for dt; steps always nonzero."""
    if dt in FLOATS:
        return [(5,), (0, 1, 0.25), (-1, 1, 0.5), (2.5, -1, -0.5), (0, 1, 0.1), (0,)]
    down = (5, 0, -1)
    return [(5,), (1, 7, 2), down, (0,), (2, 3)] + ([(-3, 3)] if dt != 'uint8' else [])


def _arange_samples(op, mk):
    for args in _range_args(mk.dtype):
        yield Sample(args, {'dtype': torch_dtype(mk.dtype)})
    if mk.dtype == 'int64':
        yield Sample((1, 7, 2))
    if mk.dtype == 'float32':
        yield Sample((0.5, 3))


_creation('arange', _arange_samples, NO_BOOL, out=True, tol={},
          errors=_errors(_err(0, 5, 0), _err(0, 5, -1)))


def _linspace_samples(op, mk):
    if mk.dtype in FLOATS:
        triples = [(0, 1, 5), (-2, 3, 7), (1, 1, 1), (0, 1, 0), (3, -3, 4), (0, 10, 6)]
    else:   # integer results truncate; keep values away from rounding edges
        triples = [(0, 10, 6), (0, 5, 4), (0, 0, 1), (0, 1, 0)] + (
            [(-5, 5, 7)] if mk.dtype != 'uint8' else [])
    for t in triples:
        yield Sample(t, {'dtype': torch_dtype(mk.dtype)})
    if mk.dtype == 'float32':
        yield Sample((0, 1, 5))
    if mk.is_complex:  # complex ends (without a dtype: the default's complex counterpart)
        yield Sample((0, 1 + 1j, 5), {'dtype': torch_dtype(mk.dtype)})
        yield Sample((-2j, 3 - 1.5j, 7), {'dtype': torch_dtype(mk.dtype)})
        yield Sample((1j, 2, 4))


def _logspace_samples(op, mk):
    dt = {'dtype': torch_dtype(mk.dtype)}
    yield Sample((0, 2, 3), dt)
    yield Sample((0, 6, 7), {'base': 2, **dt})
    yield Sample((0, 1, 0), dt)
    if mk.dtype in FLOATS_AND_COMPLEX:
        yield Sample((-1, 1, 5), dt)
        yield Sample((-2, 2, 9), {'base': 3.0, **dt})
    if mk.is_complex:
        yield Sample((0, 1 + 1j, 4), dt)
        yield Sample((-1j, 2 + 0.5j, 5), {'base': 2, **dt})


_creation('linspace', _linspace_samples, NO_BOOL, out=True, tol={}, errors=_err(0, 1, -1))
_creation('logspace', _logspace_samples, NO_BOOL, out=True, tol={})


def _eye_samples(op, mk):
    for args in [(3,), (2, 4), (4, 2), (0,), (3, 0), (1,)]:
        yield Sample(args, {'dtype': torch_dtype(mk.dtype)})
    if mk.dtype == 'float32':
        yield Sample((3,))


_creation('eye', _eye_samples, out=True, errors=_err(-1))


# -------------------------------------------------------------------- harness
def to_lib(value, lib, layout='contiguous'):
    """Converts a sample value for ``lib`` (torch or tensorplay): tensors via
    ``lib.tensor(t.tolist(), dtype=...)`` (half types through float32), torch
    dtypes to ``lib.<name>``; ``layout`` makes tensors non-contiguous."""
    if isinstance(value, Raw):
        return value.value.copy() if isinstance(value.value, np.ndarray) else copy.deepcopy(value.value)
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value.copy())
    if isinstance(value, torch.Tensor):
        return _tensor_to_lib(value, lib, layout)
    if isinstance(value, torch.dtype):
        return getattr(lib, dtype_name(value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_lib(v, lib, layout) for v in value)
    if isinstance(value, dict):
        return {k: to_lib(v, lib, layout) for k, v in value.items()}
    return value


def materialize(sample, lib):
    """(args, kwargs) of a Sample or ErrorInput, converted for lib."""
    return to_lib(tuple(sample.args), lib, sample.layout), to_lib(dict(sample.kwargs), lib, sample.layout)


def _dense_to_lib(t: torch.Tensor, lib):
    name = dtype_name(t.dtype)
    ldt = getattr(lib, name)
    if t.numel() == 0:
        return lib.zeros(tuple(t.shape), dtype=ldt)
    if name in HALF_DTYPES:
        return lib.tensor(t.float().tolist(), dtype=lib.float32).to(ldt)
    return lib.tensor(t.tolist(), dtype=ldt)


def _tensor_to_lib(t: torch.Tensor, lib, layout):
    if layout == 'conj' and t.is_complex():
        return _dense_to_lib(t.conj_physical(), lib).conj()
    if layout == 'transposed' and t.dim() >= 2:
        return _dense_to_lib(t.transpose(0, 1).contiguous(), lib).transpose(0, 1)
    if layout == 'strided' and t.dim() >= 1:
        wide = torch.full((*t.shape[:-1], 2 * t.shape[-1]), 7, dtype=t.dtype)
        wide[..., ::2] = t
        index = (slice(None),) * (t.dim() - 1) + (slice(None, None, 2),)
        return _dense_to_lib(wide, lib)[index]
    return _dense_to_lib(t, lib)


def is_tensor(x) -> bool:
    return hasattr(x, 'tolist') and hasattr(x, 'dtype') and hasattr(x, 'shape') \
        and not isinstance(x, np.ndarray)


def to_torch(x):
    """A result of either library back as a torch tensor (via tolist)."""
    if isinstance(x, (tuple, list)):
        return type(x)(to_torch(v) for v in x)
    if not is_tensor(x):
        return x
    name, shape = dtype_name(x.dtype), tuple(x.shape)
    tdt = torch_dtype(name)
    if math.prod(shape) == 0:
        return torch.zeros(shape, dtype=tdt)
    if name in HALF_DTYPES:
        return torch.tensor(x.float().tolist(), dtype=torch.float32).to(tdt)
    return torch.tensor(x.tolist(), dtype=tdt)


def unsafe_inplace_samples(op: OpInfo, dtype: str) -> list:
    """Samples whose function result dtype cannot be cast back into self's dtype
    (with an unchanged shape): the in-place form must raise RuntimeError."""
    found = []
    for s in op.sample_inputs(dtype):
        if not op.applies('inplace', s):
            continue
        args, kwargs = materialize(s, torch)
        self_t = args[op.self_arg]
        try:
            res = op.call('function', torch, args, kwargs)
        except Exception:
            continue
        if tuple(res.shape) == tuple(self_t.shape) and not torch.can_cast(res.dtype, self_t.dtype):
            found.append(s)
    return found
