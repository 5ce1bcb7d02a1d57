"""Op-database entries: order statistics, scans with indices, counting and norms
(csrc/ops/reductions2.yaml). Loaded after opdb.py, whose registry it extends."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

COVERAGE = ('0-dim', 'empty', 'noncontig')
LAYOUTS = ('contiguous', 'transposed', 'strided')
NAN, INF = float('nan'), float('inf')
FLOAT32_64 = ('float32', 'float64')
E23 = torch.ones(2, 3)
BAD_DIM = db._err(E23, 2, exc=IndexError)


def _tied(mk, shape, lo=-2, hi=2):
    """Values from a small integer range in the dtype under test: many ties."""
    if mk.is_bool:
        return mk(shape)
    return mk(shape, dtype='int64', int_domain=(max(lo, 0) if mk.dtype == 'uint8' else lo, hi)).to(
        db.torch_dtype(mk.dtype))


def _nan_rows(mk):
    """Rows with NaNs (some all-NaN, some tied) for float dtypes."""
    return mk.values([[1.0, NAN, 2.0, NAN, 1.0], [NAN, NAN, NAN, NAN, NAN], [3.0, 1.0, 3.0, 1.0, 2.0],
                      [INF, -INF, 0.0, -0.0, NAN]])


def _dim_samples(calls, extra=lambda mk: (), nonempty_only=False):
    """`calls` (args after the input, kwargs) on a tied 3x4x5 input in every layout,
    then 0-dim, empty and NaN inputs."""
    def samples(op, mk):
        for args, kwargs in calls:
            for layout in LAYOUTS:
                yield db.Sample((_tied(mk, (3, 4, 5)),) + args, kwargs, layout=layout)
        yield db.Sample((mk(()),) + calls[0][0], calls[0][1])
        yield from extra(mk)
    return samples


# ---------------------------------------------------------------- aminmax
def _aminmax_extra(mk):
    yield db.Sample((mk(()),), {'dim': 0})
    yield db.Sample((mk((0, 3)),), {'dim': 1})
    yield db.Sample((mk((4, 7)),), layout='strided')
    if mk.is_float:
        yield db.Sample((_nan_rows(mk),), {'dim': 1})
        yield db.Sample((_nan_rows(mk),))


db.register(db.OpInfo('aminmax', _dim_samples([((), {}), ((), {'dim': 0}), ((), {'dim': -1, 'keepdim': True}),
                                                ((), {'keepdim': True})], _aminmax_extra),
                      tol=db.EXACT_TOL, coverage=COVERAGE, out=True,
                      errors=db._errors(db._err(torch.ones(0, 3)), db._err(torch.ones(0, 3), dim=0, exc=IndexError),
                                        db._err(E23, dim=2, exc=IndexError),
                                        db._err(E23, dim=(0, 1), exc=TypeError))))


# ---------------------------------------------------------------- scans
def _scan_extra(mk):
    yield db.Sample((mk(()), -1))
    yield db.Sample((mk((0, 3)), 0))
    yield db.Sample((mk((2, 0)), 1))
    if mk.is_float:
        yield db.Sample((_nan_rows(mk), 1))


SCAN_DIMS = [((0,), {}), ((1,), {}), ((-1,), {})]
for _name in ('cummax', 'cummin'):
    db.register(db.OpInfo(_name, _dim_samples(SCAN_DIMS, _scan_extra), tol=db.EXACT_TOL, coverage=COVERAGE, out=True,
                          errors=db._errors(BAD_DIM)))


def _lcse_samples(op, mk):
    for args, _ in SCAN_DIMS:
        for layout in LAYOUTS:
            yield db.Sample((mk((3, 4, 5)),) + args, layout=layout)
    yield from _scan_extra(mk)
    if mk.is_float:
        yield db.Sample((mk.values([INF, INF, -INF, 1.0, NAN, 2.0]), 0))
        yield db.Sample((mk.values([-INF, -INF, 3.0, -INF]), 0))
    if mk.is_complex:  # ties of real parts, -inf ones, imaginary parts past pi
        yield db.Sample((mk.values([complex(-INF, 1), complex(-INF, 2), 1 + 1j, 1 - 3j, 2 + 3j, 2 + 3j]), 0))


db.register(db.OpInfo('logcumsumexp', _lcse_samples, db.FLOATS, out=True, coverage=COVERAGE,
                      tol={'float16': (2e-3, 2e-3), 'bfloat16': (1.6e-2, 1.6e-2), 'float32': (1e-5, 1e-5),
                           'complex64': (1e-5, 1e-5)},
                      errors=db._errors(BAD_DIM)))


# ---------------------------------------------------------------- order statistics
def _order_extra(*dim_args):
    def extra(mk):
        yield db.Sample((mk(()),) + dim_args + (0,))
        yield db.Sample((mk((0, 3)),) + dim_args + (1,))
        yield db.Sample((_tied(mk, (6, 301)),) + dim_args + (1,))  # long rows: the selection's loop
        if mk.is_float:
            yield db.Sample((_nan_rows(mk),) + dim_args + (1,))
            yield db.Sample((_nan_rows(mk).t(),) + dim_args + (0, True))
    return extra


EMPTY_DIM = db._err(torch.ones(2, 0), 1, exc=IndexError)
db.register(db.OpInfo('kthvalue', _dim_samples([((1, 0), {}), ((2,), {}), ((4, 1, True), {}), ((5, -1), {}),
                                                 ((3,), {'dim': 2, 'keepdim': True})], _order_extra(1)),
                      db.NO_BOOL, tol=db.EXACT_TOL, coverage=COVERAGE, out=True,
                      errors=db._errors(db._err(E23, 4), db._err(E23, 0), db._err(torch.ones(3), 4),
                                        db._err(torch.ones(2, 0), 1, 1, exc=IndexError),
                                        db._err(E23, 1, 2, exc=IndexError))))


def _median_extra(mk):
    yield from _order_extra()(mk)
    yield db.Sample((_tied(mk, (5, 6)),))  # over all elements
    yield db.Sample((_tied(mk, (6, 301)),))
    yield db.Sample((mk(()),))
    if mk.is_float:
        yield db.Sample((mk((0,)),))
        yield db.Sample((_nan_rows(mk),))
        yield db.Sample((_nan_rows(mk)[2:3],))


MEDIAN_CALLS = [((), {}), ((0,), {}), ((1, True), {}), ((-1,), {}), ((), {'dim': 2, 'keepdim': True})]
for _name in ('median', 'nanmedian'):
    db.register(db.OpInfo(_name, _dim_samples(MEDIAN_CALLS, _median_extra), db.NO_BOOL, tol=db.EXACT_TOL,
                          coverage=COVERAGE, out=True, errors=db._errors(BAD_DIM, EMPTY_DIM)))
db.register(db.OpInfo('mode', _dim_samples([((), {}), ((0,), {}), ((1, True), {}), ((), {'dim': 2})],
                                           _order_extra()),
                      tol=db.EXACT_TOL, coverage=COVERAGE, out=True, errors=db._errors(BAD_DIM, EMPTY_DIM)))


# ---------------------------------------------------------------- quantiles
INTERPOLATIONS = ('linear', 'lower', 'higher', 'midpoint', 'nearest')


def _quantile_samples(op, mk):
    q = mk.values([0.0, 0.25, 0.5, 0.9, 1.0])
    for layout in LAYOUTS:
        x = mk((3, 4, 5))
        yield db.Sample((x, 0.3), layout=layout)
        yield db.Sample((x, q), {'dim': 1}, layout=layout)
        yield db.Sample((x, 0.75), {'dim': -1, 'keepdim': True}, layout=layout)
    x = _tied(mk, (4, 7))
    for how in INTERPOLATIONS:
        yield db.Sample((x, q), {'dim': 1, 'interpolation': how})
        yield db.Sample((x, 0.5), {'interpolation': how})
        yield db.Sample((mk((6, 5)), mk.values([0.1, 0.3, 0.5, 0.7])), {'dim': 0, 'interpolation': how})
    yield db.Sample((x, mk.values(0.4)), {'dim': 0})  # 0-dim q: no q dim in the result
    yield db.Sample((x, q), {'keepdim': True})
    yield db.Sample((mk(()), 0.5))
    yield db.Sample((mk(()), q), {'dim': 0})
    yield db.Sample((mk((5,)), 1))
    yield db.Sample((_nan_rows(mk), q), {'dim': 1})
    yield db.Sample((_nan_rows(mk), 0.5))
    yield db.Sample((_nan_rows(mk).t(), 0.2), {'dim': 0, 'interpolation': 'nearest'})


_QERR = torch.ones(2, 3)
QUANTILE_ERRORS = db._errors(
    db._err(_QERR, 1.5), db._err(_QERR, -0.1), db._err(_QERR, torch.tensor([0.5, 1.2])),
    db._err(_QERR, 0.5, interpolation='cubic'), db._err(torch.ones(0), 0.5), db._err(torch.ones(0, 3), 0.5, dim=1),
    db._err(_QERR, torch.ones(2, 2) * 0.5), db._err(_QERR, torch.tensor([0.5], dtype=torch.float64)),
    db._err(_QERR, 0.5, dim=2, exc=IndexError), db._err(torch.arange(3), 0.5))
for _name in ('quantile', 'nanquantile'):
    db.register(db.OpInfo(_name, _quantile_samples, FLOAT32_64, out=True, coverage=('0-dim', 'noncontig'),
                          tol={'float32': (1e-6, 1e-6)}, errors=QUANTILE_ERRORS))


# ---------------------------------------------------------------- unique
def _unique_samples(flags):
    def samples(op, mk):
        for layout in LAYOUTS:
            x = _tied(mk, (3, 4, 5))
            for kw in flags:
                yield db.Sample((x,), kw, layout=layout)
            yield db.Sample((_tied(mk, (6, 4), 0, 1),), {'dim': 0, 'return_inverse': True,
                                                          'return_counts': True}, layout=layout)
            yield db.Sample((_tied(mk, (4, 6), 0, 1),), {'dim': 1, 'return_inverse': True}, layout=layout)
        yield db.Sample((_tied(mk, (9, 2, 2), 0, 1),), {'dim': -3, 'return_counts': True})
        yield db.Sample((mk(()),), {'return_inverse': True, 'return_counts': True})
        yield db.Sample((mk((0,)),), {'return_inverse': True, 'return_counts': True})
        yield db.Sample((mk((0, 2)),), {'dim': 0, 'return_inverse': True, 'return_counts': True})
        yield db.Sample((mk((2, 0)),), {'dim': 1})
        yield db.Sample((_tied(mk, (3000,)),), {'return_inverse': True, 'return_counts': True})
        if mk.is_float:
            yield db.Sample((mk.values([2.0, NAN, 1.0, NAN, -0.0, 0.0, INF, 2.0]),),
                            {'return_inverse': True, 'return_counts': True})
    return samples


UNIQUE_ERRORS = db._errors(db._err(E23, dim=2, exc=IndexError), db._err(torch.tensor(3.0), dim=0, exc=IndexError),
                           db._err(torch.ones(2, 0), dim=0))
db.register(db.OpInfo('unique', _unique_samples([{}, {'return_inverse': True}, {'return_counts': True},
                                                 {'sorted': False, 'return_inverse': True,
                                                  'return_counts': True}]),
                      tol=db.EXACT_TOL, coverage=COVERAGE, errors=UNIQUE_ERRORS))
db.register(db.OpInfo('unique_consecutive', _unique_samples([{}, {'return_inverse': True},
                                                             {'return_counts': True, 'return_inverse': True}]),
                      tol=db.EXACT_TOL, coverage=COVERAGE, errors=UNIQUE_ERRORS))


# ---------------------------------------------------------------- bincount, histc
def _bincount_samples(op, mk):
    for layout in ('contiguous', 'strided'):
        x = mk((20,), int_domain=(0, 9))
        yield db.Sample((x,), layout=layout)
        yield db.Sample((x,), {'minlength': 15}, layout=layout)
        yield db.Sample((x, torch.linspace(-1, 2, 20)), layout=layout)
        yield db.Sample((x,), {'weights': torch.linspace(0, 3, 20, dtype=torch.float64), 'minlength': 3},
                        layout=layout)
        yield db.Sample((x, torch.arange(20, dtype=torch.int32)), layout=layout)
    yield db.Sample((mk((0,)),))
    yield db.Sample((mk((0,)),), {'minlength': 4})
    yield db.Sample((mk((0,)), torch.ones(0)), {'minlength': 2})
    yield db.Sample((mk.values([5, 0, 0]),))


db.register(db.OpInfo('bincount', _bincount_samples, db.INTS, coverage=('empty', 'noncontig'),
                      errors=db._errors(db._err(torch.tensor([1, -1])), db._err(torch.ones(2, 2, dtype=torch.long)),
                                        db._err(torch.tensor([1, 2]), minlength=-1),
                                        db._err(torch.tensor([1, 2]), torch.ones(3)),
                                        db._err(torch.tensor([1.0, 2.0]), exc=NotImplementedError))))


def _histc_samples(op, mk):
    for layout in LAYOUTS:
        x = mk((3, 40))
        yield db.Sample((x,), layout=layout)
        yield db.Sample((x, 7), layout=layout)
        yield db.Sample((x, 5, -2, 3), layout=layout)
        yield db.Sample((x,), {'bins': 4, 'min': 0, 'max': 0}, layout=layout)
    yield db.Sample((mk.values([1.0, 2.0, 2.0, 4.0]), 3))  # values on bin edges and the right edge
    yield db.Sample((mk.values([2.0, 2.0]), 3))
    yield db.Sample((mk.values([1.0, NAN, 3.0, INF, -INF]), 4, 0, 4))
    yield db.Sample((mk(()), 3))
    yield db.Sample((mk((0,)), 3))


db.register(db.OpInfo('histc', _histc_samples, db.FLOATS, out=True, coverage=COVERAGE,
                      errors=db._errors(db._err(torch.ones(3), -1), db._err(torch.ones(3), 3, 5, 1),
                                        db._err(torch.tensor([1.0, NAN]), 3),
                                        db._err(torch.tensor([1.0, INF]), 3),
                                        db._err(torch.arange(3), 3, exc=NotImplementedError))))


# ---------------------------------------------------------------- norms
NORM_TOL = {'float16': (2e-3, 2e-3), 'bfloat16': (1.6e-2, 1.6e-2), 'float32': (1e-5, 1e-5)}


def _wide(mk):
    """The dtype= a norm's sample widens to: float64, or complex128 for a complex input (whose
    norms take complex dtypes only)."""
    return torch.complex128 if mk.is_complex else torch.float64


def _vector_norm_samples(op, mk):
    for layout in LAYOUTS:
        x = mk((3, 4, 5))
        yield db.Sample((x,), layout=layout)
        yield db.Sample((x, 1, 1), layout=layout)
        yield db.Sample((x, INF, (0, 2)), layout=layout)
        yield db.Sample((x,), {'ord': 0.5, 'dim': -1, 'keepdim': True}, layout=layout)
    x = mk((4, 5))
    for o in (0, 1, 2, 3, 0.5, -1, -2.5, INF, -INF):
        yield db.Sample((x, o))
        yield db.Sample((x, o, 1))
    yield db.Sample((mk.values([[0.0, 1.0, -3.0], [0.0, 0.0, 0.0]]), -1, 1))
    yield db.Sample((x,), {'dtype': _wide(mk)})
    yield db.Sample((mk(()), 3))
    yield db.Sample((mk((0, 3)),))
    yield db.Sample((mk((0, 3)), INF, 1))
    yield db.Sample((mk.values([1.0, NAN, 2.0]), INF))


db.register(db.OpInfo('linalg.vector_norm', _vector_norm_samples, db.FLOATS, method=False, out=True,
                      coverage=COVERAGE, tol=NORM_TOL, message_names=('vector_norm',),
                      errors=db._errors(db._err(torch.arange(3), 2), db._err(E23.double(), 2, dtype=torch.float32),
                                        db._err(E23, 2, dtype=torch.int64), db._err(torch.ones(0, 3), INF),
                                        db._err(torch.ones(0, 3), -1), db._err(torch.ones(0, 3), INF, 0),
                                        db._err(E23, 2, 2, exc=IndexError))))


def _matrix_norm_samples(op, mk):
    for layout in LAYOUTS:
        x = mk((3, 4, 5))
        yield db.Sample((x,), layout=layout)
        for o in (1, -1, INF, -INF, 'fro'):
            yield db.Sample((x, o), layout=layout)
            yield db.Sample((x, o, (0, 2), True), layout=layout)
            yield db.Sample((x,), {'ord': o, 'dim': (-1, -3)}, layout=layout)
    yield db.Sample((mk((4, 4)), 1), {'dtype': _wide(mk)})
    for o in (1, -1, INF):
        yield db.Sample((mk((0, 3)), o))
    yield db.Sample((mk((3, 0)), 1))
    yield db.Sample((mk((2, 3, 0)), -INF))
    yield from _svd_norm_samples(mk)


SVD_FLOATS = ('float32', 'float64')  # torch has no half-precision SVD on the CPU


def _svd_norm_samples(mk):
    """matrix_norm's singular-value orders (2, -2, 'nuc') over dims, with keepdim/dtype."""
    if mk.dtype not in SVD_FLOATS:
        return
    x = mk((3, 4, 5))
    for o in (2, -2, 'nuc'):
        yield db.Sample((x, o))
        yield db.Sample((x, o, (0, 2), True))
        yield db.Sample((mk((4, 3)),), {'ord': o, 'dim': (-1, -2)}, layout='transposed')
    yield db.Sample((mk((4, 4)), 2), {'dtype': torch.float64})
    yield db.Sample((mk((0, 3)), 'nuc'))
    yield db.Sample((mk((2, 3, 0)), 2))


MATRIX_ERRORS = [db._err(E23, 3), db._err(E23, 'foo'), db._err(torch.ones(3), 1),
                 db._err(E23, 1, (0, 0)), db._err(E23, 1, (0, 1, 1)),
                 db._err(torch.arange(4).reshape(2, 2), 1), db._err(torch.ones(3, 0), -1, exc=IndexError),
                 db._err(torch.ones(3, 0), -2, exc=IndexError)]
db.register(db.OpInfo('linalg.matrix_norm', _matrix_norm_samples, db.FLOATS, method=False, out=True,
                      coverage=('empty', 'noncontig'), tol=NORM_TOL, message_names=('matrix_norm', 'amin'),
                      errors=db._errors(*MATRIX_ERRORS)))


def _linalg_norm_samples(op, mk):
    for layout in LAYOUTS:
        x = mk((3, 4, 5))
        yield db.Sample((x,), layout=layout)
        yield db.Sample((x, 3, 1), layout=layout)
        yield db.Sample((x, INF, (0, 1)), layout=layout)
        yield db.Sample((x, 'fro', (2, 0), True), layout=layout)
        yield db.Sample((x,), {'dim': (0, 2)}, layout=layout)
    m = mk((4, 5))
    for o in (1, -1, INF, -INF, 'fro'):
        yield db.Sample((m, o))
    for o in (0, 1, 2, 0.5, INF):
        yield db.Sample((mk((6,)), o))
    yield db.Sample((m,), {'ord': -1, 'dim': 0, 'dtype': _wide(mk)})
    if mk.dtype in SVD_FLOATS:
        for o in (2, -2, 'nuc'):
            yield db.Sample((m, o))
            yield db.Sample((mk((3, 4, 5)), o, (2, 0), True))
    yield db.Sample((mk(()),))
    yield db.Sample((mk((0, 3)),))


db.register(db.OpInfo('linalg.norm', _linalg_norm_samples, db.FLOATS, method=False, out=True,
                      coverage=COVERAGE, tol=NORM_TOL, message_names=('norm',),
                      errors=db._errors(db._err(torch.ones(2, 2, 2), 3), db._err(torch.ones(2, 2, 2), 'fro'),
                                        db._err(E23, None, (0, 1, 1)), db._err(torch.ones(3), 'fro'),
                                        db._err(torch.arange(3.0).long()), db._err(E23, 3))))


def _norm_samples(op, mk):
    for layout in LAYOUTS:
        x = mk((3, 4, 5))
        yield db.Sample((x,), layout=layout)
        yield db.Sample((x, 1), layout=layout)
        yield db.Sample((x, 'fro', (0, 1)), layout=layout)
        yield db.Sample((x,), {'p': 3, 'dim': 2, 'keepdim': True}, layout=layout)
        yield db.Sample((x, INF, 1), layout=layout)
    yield db.Sample((mk((4, 5)), 'fro', 1))
    yield db.Sample((mk((4, 5)),), {'p': 0.5, 'dtype': _wide(mk)})
    yield db.Sample((mk((4, 5)), -INF))
    if mk.dtype in SVD_FLOATS:
        yield db.Sample((mk((4, 5)), 'nuc'))
        yield db.Sample((mk((3, 4, 5)), 'nuc', (0, 2)))
        yield db.Sample((mk((3, 4, 5)),), {'p': 'nuc', 'dim': (2, 1), 'keepdim': True})
    yield db.Sample((mk(()),))
    yield db.Sample((mk((0, 3)),))


class _PythonOpInfo(db.OpInfo):
    """An op PyTorch writes in Python (torch.norm): a non-tensor input fails there with
    AttributeError, not the TypeError the generic wrong-type check expects."""

    def error_inputs(self):
        if self.errors:
            yield from self.errors(self)


db.register(_PythonOpInfo('norm', _norm_samples, db.FLOATS, out=True, coverage=COVERAGE, tol=NORM_TOL,
                      errors=db._errors(db._err(torch.arange(3)), db._err(E23, 'foo'),
                                        db._err(torch.ones(2, 2, 2), 'fro', (0, 1, 2)))))
