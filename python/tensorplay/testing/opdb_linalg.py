"""Op-database entries: matrix products (mm, bmm, matmul, mv, dot, vdot, inner, outer, ger,
addmm, addmv, addbmm, baddbmm, einsum, tensordot, kron, cross, trace, linalg.vecdot).
Loaded after
opdb.py."""
import importlib
import operator
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

COVERAGE = ('empty', 'noncontig')
# Products accumulate in another order (and float16/bfloat16 through float32).
TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2), 'float32': (1e-4, 1e-4),
       'float64': (1e-10, 1e-10), 'complex64': (1e-4, 1e-4), 'complex128': (1e-10, 1e-10)}
_SMALL = dict(int_domain=(-3, 3), domain=(-2, 2))


def _f(*shape, dtype='float32'):
    return torch.ones(shape, dtype=db.torch_dtype(dtype))


def _shape_samples(shape_lists, kwargs_list=({},)):
    """Each tuple of shapes in every layout (the harness transposes / strides the inputs
    the same way in both libraries), then each kwargs variant on the first shapes."""
    def samples(op, mk):
        for i, shapes in enumerate(shape_lists):
            layouts = db.LAYOUTS if i < 3 else ('contiguous',)
            for layout in layouts:
                yield db.Sample(tuple(mk(s, **_SMALL) for s in shapes), {}, layout)
        for kw in kwargs_list:
            if kw:
                yield db.Sample(tuple(mk(s, **_SMALL) for s in shape_lists[0]), dict(kw))
    return samples


def _dtype_mismatch(*shapes):
    return db._err(*[_f(*s, dtype='float64' if i == len(shapes) - 1 else 'float32')
                     for i, s in enumerate(shapes)])


def _bool_error(*shapes, exc=NotImplementedError):
    return db._err(*[_f(*s, dtype='bool') for s in shapes], exc=exc)


def product(name, shapes, errors=(), dtypes=db.NO_BOOL, kwargs_list=({},), **kw):
    return db.register(db.OpInfo(name, _shape_samples(shapes, kwargs_list), dtypes, tol=TOL,
                                 coverage=COVERAGE, errors=db._errors(*errors), **kw))


# ------------------------------------------------------------------ GEMM-shaped products
product('mm', [((3, 4), (4, 5)), ((4, 4), (4, 2)), ((0, 3), (3, 4)), ((3, 0), (0, 4)),
               ((2, 3), (3, 0))],
        [db._err(_f(2, 3), _f(4, 3)), db._err(_f(3), _f(3, 3)), _dtype_mismatch((2, 3), (3, 3)),
         _bool_error((2, 3), (3, 3))], out=True)
product('bmm', [((2, 3, 4), (2, 4, 5)), ((3, 4, 4), (3, 4, 2)), ((0, 3, 4), (0, 4, 5)),
                ((2, 3, 0), (2, 0, 4)), ((2, 0, 3), (2, 3, 4))],
        [db._err(_f(2, 3, 4), _f(3, 4, 5)), db._err(_f(2, 3, 4), _f(2, 5, 6)),
         db._err(_f(3, 4), _f(4, 5)), _dtype_mismatch((2, 3, 4), (2, 4, 5)),
         _bool_error((2, 3, 4), (2, 4, 5))], out=True)
MATMUL_SHAPES = [((4, 3), (3, 5)), ((2, 4, 3), (2, 3, 5)), ((4, 3), (3,)),
                 ((3,), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (3,)),
                 ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
                 ((2, 5, 2, 3), (5, 3, 4)), ((0, 3), (3, 4)), ((2, 0), (0, 4)),
                 ((2, 0, 3), (3, 4)), ((3, 0), (0,)), ((0,), (0,))]
MATMUL_ERRORS = [db._err(_f(3), _f(4)), db._err(_f(), _f(3)), db._err(_f(2, 3), _f(4)),
                 db._err(_f(3), _f(4, 2)), db._err(_f(2, 3, 4), _f(5, 6)),
                 db._err(_f(2, 3, 4), _f(3, 4, 5)), db._err(_f(3, 4), _f(2, 5, 4)),
                 _dtype_mismatch((2, 3, 4), (4,)), _dtype_mismatch((3, 4), (4, 2)),
                 _bool_error((3,), (3,)), _bool_error((2, 3), (3,)), _bool_error((2, 2, 3), (3, 2)),
                 db._err(_f(3), 2, exc=TypeError, form='operator')]
product('matmul', MATMUL_SHAPES, MATMUL_ERRORS, out=True, operator=operator.matmul,
        message_names=('matmul', '@'))
product('mv', [((4, 3), (3,)), ((3, 3), (3,)), ((0, 3), (3,)), ((3, 0), (0,))],
        [db._err(_f(2, 3), _f(4)), db._err(_f(2, 3), _f(3, 1)), db._err(_f(3), _f(3)),
         _dtype_mismatch((2, 3), (3,)), _bool_error((2, 3), (3,))], out=True)
DOT_ERRORS = [db._err(_f(3), _f(4)), db._err(_f(3, 1), _f(3)), _dtype_mismatch((3,), (3,)),
              _bool_error((3,), (3,))]
product('dot', [((5,), (5,)), ((1,), (1,)), ((0,), (0,))], DOT_ERRORS, out=True)
product('vdot', [((5,), (5,)), ((1,), (1,)), ((0,), (0,))], DOT_ERRORS, out=True)
# (PyTorch's inner of strided 1-D bool vectors returns a bool instead of raising: the 1-D
# pair runs contiguous only.)
product('inner', [((2, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 4), (2, 2, 4)), ((4,), (4,)), ((), (3, 4)),
                  ((0, 3), (2, 3)), ((2, 0), (0,))],
        [db._err(_f(2, 3), _f(4, 4)), _dtype_mismatch((3,), (3,)), _dtype_mismatch((2, 3), (3,)),
         _bool_error((3,), (3,))], out=True)
OUTER_ERRORS = [db._err(_f(3, 2), _f(4)), db._err(_f(), _f(4)), db._err(_f(3), _f(4, 1))]
for _name in ('outer', 'ger'):
    def _outer_samples(op, mk):
        yield from _shape_samples([((3,), (4,)), ((1,), (5,)), ((0,), (3,))])(op, mk)
        yield db.Sample((mk((3,), **_SMALL), mk((2,), dtype='float64', **_SMALL)))
    db.register(db.OpInfo(_name, _outer_samples, db.ALL_DTYPES, tol=TOL, out=True,
                          coverage=COVERAGE, errors=db._errors(*OUTER_ERRORS)))


def _beta_alpha(dt):
    if dt in db.FLOATS:
        return ({'beta': 0.5, 'alpha': 2.0}, {'beta': 0}, {'alpha': -1.5})
    return ({'beta': 2, 'alpha': 3}, {'beta': 0}, {'beta': 0.5, 'alpha': 1.7})


def add_product(name, shapes, errors, nan_input):
    """addmm & co: beta * input + alpha * product; beta=0 ignores NaNs in input."""
    def samples(op, mk):
        yield from _shape_samples(shapes)(op, mk)
        for kw in _beta_alpha(mk.dtype):
            yield db.Sample(tuple(mk(s, **_SMALL) for s in shapes[0]), kw)
        if mk.is_float:
            nan = torch.full(nan_input[0], float('nan'), dtype=db.torch_dtype(mk.dtype))
            yield db.Sample((nan,) + tuple(mk(s, **_SMALL) for s in nan_input[1:]), {'beta': 0})
    return db.register(db.OpInfo(name, samples, db.NO_BOOL, tol=TOL, inplace=True, out=True,
                                 coverage=COVERAGE, errors=db._errors(*errors)))


add_product('addmm', [((3, 5), (3, 4), (4, 5)), ((5,), (3, 4), (4, 5)), ((5, 5), (5, 4), (4, 5)),
                      ((1, 5), (3, 4), (4, 5)), ((), (3, 4), (4, 5)), ((0, 5), (0, 4), (4, 5)),
                      ((3, 5), (3, 0), (0, 5))],
            [db._err(_f(4), _f(2, 3), _f(3, 3)), _dtype_mismatch((2, 3), (2, 3), (3, 3)),
             db._err(_f(2, 3, dtype='float64'), _f(2, 3), _f(3, 3)),
             db._err(_f(3), _f(2, 3), _f(3, 3), form='inplace'),
             _bool_error((2, 3), (2, 3), (3, 3)), db._err(_f(2, 3), _f(2, 3), _f(4, 3))],
            ((3, 5), (3, 4), (4, 5)))
add_product('addmv', [((3,), (3, 4), (4,)), ((1,), (3, 4), (4,)), ((), (3, 4), (4,)),
                      ((4,), (4, 4), (4,)), ((0,), (0, 4), (4,)), ((3,), (3, 0), (0,))],
            [db._err(_f(4), _f(2, 3), _f(3)), db._err(_f(1), _f(2, 3), _f(3), form='inplace'),
             _dtype_mismatch((2,), (2, 3), (3,)), _bool_error((2,), (2, 3), (3,)),
             db._err(_f(2), _f(2, 3), _f(3, 1))],
            ((3,), (3, 4), (4,)))
add_product('baddbmm', [((2, 3, 5), (2, 3, 4), (2, 4, 5)), ((3, 1), (2, 3, 4), (2, 4, 5)),
                        ((3, 3, 3), (3, 3, 4), (3, 4, 3)), ((5,), (2, 3, 4), (2, 4, 5)),
                        ((0, 3, 5), (0, 3, 4), (0, 4, 5)), ((2, 3, 5), (2, 3, 0), (2, 0, 5))],
            [db._err(_f(3, 3, 5), _f(2, 3, 4), _f(2, 4, 5)),
             db._err(_f(3, 5), _f(2, 3, 4), _f(2, 4, 5), form='inplace'),
             _dtype_mismatch((2, 3, 5), (2, 3, 4), (2, 4, 5)),
             _bool_error((2, 3, 5), (2, 3, 4), (2, 4, 5)),
             db._err(_f(2, 3, 5), _f(3, 4), _f(4, 5), exc=IndexError),
             db._err(_f(2, 3, 5), _f(1, 2, 3, 4), _f(2, 4, 5))],
            ((2, 3, 5), (2, 3, 4), (2, 4, 5)))
# (A broadcast self in addbmm_ is resized in place, like PyTorch's; those samples run
# contiguous only: PyTorch reinterprets the old storage of a strided self.)
add_product('addbmm', [((3, 5), (2, 3, 4), (2, 4, 5)), ((4, 4), (3, 4, 2), (3, 2, 4)),
                       ((3, 5), (2, 3, 0), (2, 0, 5)), ((5,), (2, 3, 4), (2, 4, 5)),
                       ((1, 5), (2, 3, 4), (2, 4, 5)), ((3, 5), (0, 3, 4), (0, 4, 5))],
            [db._err(_f(3, 5), _f(2, 3, 4), _f(3, 4, 5)), db._err(_f(3, 6), _f(2, 3, 4), _f(2, 4, 5)),
             db._err(_f(3, 6), _f(2, 3, 4), _f(2, 4, 5), form='inplace'),
             _dtype_mismatch((3, 5), (2, 3, 4), (2, 4, 5)),
             _bool_error((3, 5), (2, 3, 4), (2, 4, 5))],
            ((3, 5), (2, 3, 4), (2, 4, 5)))

# ------------------------------------------------------------------ einsum, tensordot
# (equation, shapes) that every non-bool dtype supports in torch (integer sums widen to
# int64, which some mixed equations then reject: those run for float dtypes only).
EINSUM_ALL = [('ij,jk', [(3, 4), (4, 5)]), ('bij,bjk->bik', [(2, 3, 4), (2, 4, 5)]),
              ('ii->i', [(3, 3)]), ('ii', [(3, 3)]), ('i,j', [(3,), (2,)]), ('ij->ji', [(2, 3)]),
              ('...ij,...jk', [(5, 2, 3), (3, 4)]), ('bij,bjk->bik', [(2, 3, 4), (1, 4, 5)]),
              ('ij,ij->', [(2, 3), (2, 3)]), ('i,i->i', [(3,), (1,)]), ('iJ', [(2, 3)]),
              ('ij,jk', [(0, 4), (4, 5)]), ('ij,jk', [(3, 0), (0, 5)]),
              ('b i j , b j k -> b k i', [(2, 3, 4), (2, 4, 5)])]
EINSUM_FLOAT = [('ij,jk->', [(3, 4), (4, 5)]), ('i...->...', [(2, 3)]),
                ('...ij,...jk->...ik', [(3, 1, 2, 3), (5, 3, 4)]),
                ('ijk,ikl,lm->jm', [(2, 3, 4), (2, 4, 5), (5, 6)]), ('iij->j', [(3, 3, 4)]),
                ('ij,kl->ijkl', [(2, 3), (4, 5)]), ('b...i,b...i->b...', [(2, 3, 4), (2, 1, 4)]),
                ('ij,jk->i', [(2, 3), (3, 4)]), ('i->', [(4,)])]


def _einsum_samples(op, mk):
    for k, (eq, shapes) in enumerate(EINSUM_ALL + (EINSUM_FLOAT if mk.is_float else [])):
        for layout in (db.LAYOUTS if k < 2 else ('contiguous',)):
            yield db.Sample((eq,) + tuple(mk(s, **_SMALL) for s in shapes), {}, layout)
    yield db.Sample(('ij,jk', [mk((2, 3), **_SMALL), mk((3, 4), **_SMALL)]))


def _einsum_errors(op):
    bad = [('ij,jk', [(2, 3), (4, 4)]), ('ij', [(2, 3), (3, 4)]), ('ij->k', [(2, 3)]),
           ('i1', [(2, 3)]), ('ij->ii', [(2, 3)]), ('ii', [(3, 4)]), ('..ij', [(2, 3)]),
           ('ij->j.', [(2, 3)]), ('i->i->i', [(3,)]), ('ij,jk->ik', [(2, 3)]), ('ij', [(2, 3, 4)]),
           ('...ij', [(3,)])]
    for eq, shapes in bad:
        yield db.ErrorInput((eq,) + tuple(_f(*s) for s in shapes), {}, RuntimeError)
    yield db.ErrorInput(('ij,jk', _f(2, 3), _f(3, 4, dtype='float64')), {}, RuntimeError)
    yield db.ErrorInput(('ij,jk', _f(2, 3, dtype='bool'), _f(3, 4, dtype='bool')), {},
                        NotImplementedError)
    yield db.ErrorInput(('ij',), {}, ValueError)


db.register(db.OpInfo('einsum', _einsum_samples, db.NO_BOOL, method=False, tol=TOL,
                      coverage=COVERAGE, errors=_einsum_errors))


TENSORDOT_CASES = [(1, (3, 4, 2), (2, 5)), (2, (3, 4, 2), (4, 2, 5)), (0, (3, 2), (4,)),
                   (([1], [0]), (3, 4, 2), (4, 5)), ([[0, 1], [1, 0]], (3, 4, 2), (4, 3, 5)),
                   (([2, 0], [0, 1]), (3, 4, 2), (2, 3, 5))]


def _tensordot_samples(op, mk):
    for dims, sa, sb in TENSORDOT_CASES:
        for layout in db.LAYOUTS:
            yield db.Sample((mk(sa, **_SMALL), mk(sb, **_SMALL)), {'dims': dims}, layout)
    yield db.Sample((mk((0, 4), **_SMALL), mk((4, 3), **_SMALL)), {'dims': 1})
    yield db.Sample((mk((3, 0), **_SMALL), mk((0, 3), **_SMALL)), {'dims': 1})


class _OwnTypeErrors(db.OpInfo):
    """An entry whose wrong-type errors are listed by hand: PyTorch's tensordot raises
    AttributeError (from ``a.dim()``) for a non-tensor, not TypeError."""

    def error_inputs(self):
        yield from self.errors(self)


db.register(_OwnTypeErrors('tensordot', _tensordot_samples, db.NO_BOOL, method=False, out=True, tol=TOL,
                      coverage=COVERAGE,
                      errors=db._errors(db._err(_f(2, 3), _f(4, 4), dims=1),
                                        db._err(_f(2, 3), _f(3, 4), dims=-1),
                                        db._err(_f(2, 3), _f(3, 4), dims=3),
                                        db._err(_f(2, 3), _f(3, 4), dims=([1, 0], [0])),
                                        db._err(_f(2, 3), _f(3, 4), dims=1.5),
                                        db._err(_f(2, 3), _f(3, 4, dtype='float64'), dims=1),
                                        db._err('not a tensor', _f(3, 4), dims=1,
                                                exc=AttributeError),
                                        db._err(_f(3, 4), 'not a tensor', dims=1,
                                                exc=AttributeError))))

# ------------------------------------------------------------------ kron, cross, trace


def _kron_samples(op, mk):
    # (PyTorch's kron fails on a transposed operand of higher rank than the other)
    yield from _shape_samples([((2, 3), (4, 2)), ((2, 1, 3), (3, 1, 2)), ((3, 3), (2, 2)),
                               ((2, 3), (4,)), ((2, 1, 3), (3, 2)), ((), (3,)),
                               ((0, 2), (3, 2))])(op, mk)
    yield db.Sample((mk((2, 2), **_SMALL), mk((2,), dtype='float16', **_SMALL)))


db.register(db.OpInfo('kron', _kron_samples, db.ALL_DTYPES, tol=TOL, out=True,
                      coverage=COVERAGE + ('0-dim', 'broadcast')))


def _cross_samples(op, mk):
    for layout in db.LAYOUTS:
        yield db.Sample((mk((4, 3), **_SMALL), mk((4, 3), **_SMALL)), {'dim': 1}, layout)
        yield db.Sample((mk((3, 4), **_SMALL), mk((3, 4), **_SMALL)), {'dim': 0}, layout)
    yield db.Sample((mk((4, 3), **_SMALL), mk((1, 3), **_SMALL)), {'dim': -1})
    yield db.Sample((mk((2, 3, 3), **_SMALL), mk((2, 3, 3), **_SMALL)), {'dim': 1})
    yield db.Sample((mk((0, 3), **_SMALL), mk((0, 3), **_SMALL)), {'dim': 1})


db.register(db.OpInfo('cross', _cross_samples, db.NO_BOOL, tol=TOL, out=True,
                      coverage=COVERAGE + ('broadcast',),
                      errors=db._errors(db._err(_f(4, 5), _f(4, 5), dim=1),
                                        db._err(_f(3, 1), _f(1, 3), dim=0),
                                        db._err(_f(2, 3), _f(3), dim=1),
                                        db._err(_f(4, 3), _f(4, 3), dim=0),
                                        db._err(_f(4, 3), _f(4, 3), dim=5, exc=IndexError),
                                        _dtype_mismatch((4, 3), (4, 3)),
                                        db._err(_f(4, 3, dtype='bool'), _f(4, 3, dtype='bool'),
                                                dim=1, exc=NotImplementedError))))


def _trace_samples(op, mk):
    yield from _shape_samples([((3, 4),), ((4, 3),), ((3, 3),), ((0, 3),)])(op, mk)


db.register(db.OpInfo('trace', _trace_samples, db.NO_BOOL, tol=TOL, coverage=COVERAGE,
                      errors=db._errors(db._err(_f(3)), db._err(_f(2, 2, 2)),
                                        _bool_error((3, 3)))))


def _vecdot_samples(op, mk):
    yield from _shape_samples([((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((0, 4), (4,))])(op, mk)
    yield db.Sample((mk((4, 3)), mk((4, 3))), {'dim': 0})
    yield db.Sample((mk((3, 4)), mk((4,))), {'dim': 1})


db.register(db.OpInfo('linalg.vecdot', _vecdot_samples, db.FLOATS, method=False, tol=TOL,
                      coverage=COVERAGE, message_names=('linalg.vecdot', 'linalg_vecdot'),
                      errors=db._errors(_dtype_mismatch((3,), (3,)), db._err(_f(2, 4), _f(3, 4)),
                                        db._err(_f(3, dtype='int64'), _f(3, dtype='int64')))))
