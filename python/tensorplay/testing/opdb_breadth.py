"""Op-database entries for functions composed in Python (tensorplay/_statistics.py,
_composite_ops.py): trapezoid, cumulative_trapezoid, rsub, the *_scatter ops, addr, dist,
renorm, cdist, cov, corrcoef, combinations. Loaded after opdb.py by tests/python/conftest.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')
OpInfo, Sample, register = db.OpInfo, db.Sample, db.register
COV = ('0-dim', 'empty', 'noncontig')
NUMERIC = db.NO_BOOL
E23 = torch.ones(2, 3)


def _trapezoid_samples(op, mk):
    yield Sample((mk((3, 5)),))
    yield Sample((mk((4, 3)),), {'dim': 0}, layout='transposed')
    yield Sample((mk((3, 5)),), {'dx': 0.5})
    yield Sample((mk((2, 3, 4)), mk((4,), dtype='float64')), {'dim': -1})
    yield Sample((mk((3, 5)), mk((3, 5))), {'dim': 1}, layout='strided')
    yield Sample((mk((0,)),))
    yield Sample((mk((2, 0, 3)),), {'dim': 1})
    yield Sample((mk((1, 3)),), {'dim': 0})


def _trapezoid_errors(op):
    yield db.ErrorInput((torch.ones(3), torch.ones(4)), {}, RuntimeError)
    yield db.ErrorInput((torch.ones(3),), {'dim': 2}, IndexError)
    yield db.ErrorInput((torch.ones(3, dtype=torch.bool),), {}, RuntimeError)


for _name in ('trapezoid', 'cumulative_trapezoid'):
    register(OpInfo(_name, _trapezoid_samples, NUMERIC, method=False, coverage=('empty', 'noncontig'),
                    errors=_trapezoid_errors, message_names=(_name, 'trapezoid', 'dimension')))


def _rsub_samples(op, mk):
    yield from db.pointwise_samples(mk, 2)
    yield Sample((mk((3, 4)), 3))
    yield Sample((mk((3, 4)), mk((3, 4))), {'alpha': 2})
    if mk.is_float:
        yield Sample((mk((3, 4)), 2.5), {'alpha': 0.5})


register(OpInfo('rsub', _rsub_samples, NUMERIC, method=False, coverage=COV,
                errors=db._err(torch.ones(2, dtype=torch.long), 3, alpha=2.5),
                message_names=('rsub', 'alpha', 'sub', 'subtraction')))


def _scatter_samples(name):
    def samples(op, mk):
        if name == 'diagonal_scatter':
            yield Sample((mk((3, 4)), mk((3,))))
            yield Sample((mk((3, 4)), mk((3,))), {'offset': 1}, layout='transposed')
            yield Sample((mk((2, 3, 4)), mk((2, 3))), {'dim1': 1, 'dim2': 2})
            yield Sample((mk((3, 4)), mk((0,))), {'offset': 5})
        elif name == 'select_scatter':
            yield Sample((mk((3, 4)), mk((4,)), 0, 1))
            yield Sample((mk((3, 4)), mk((3,)), 1, -1), layout='strided')
            yield Sample((mk((2, 3, 4)), mk((2, 4)), 1, 2))
            yield Sample((mk((3,)), mk(()), 0, 2))
            yield Sample((mk((0, 4)), mk((0,)), 1, 0))
        else:
            yield Sample((mk((3, 4)), mk((3, 2)), 1, 0, 4, 2))
            yield Sample((mk((4, 3)), mk((2, 3))), {'start': 1, 'end': 3}, layout='transposed')
            yield Sample((mk((3, 4)), mk((3, 4))))
            yield Sample((mk((5,)), mk((0,)), 0, 2, 2))
    return samples


def _scatter_errors(name):
    def errors(op):
        src = {'diagonal_scatter': torch.ones(3), 'select_scatter': torch.ones(2),
               'slice_scatter': torch.ones(2, 2)}[name]
        args = {'diagonal_scatter': (), 'select_scatter': (0, 1), 'slice_scatter': ()}[name]
        yield db.ErrorInput((E23, src) + args, {}, RuntimeError)
    return errors


for _name in ('diagonal_scatter', 'select_scatter', 'slice_scatter'):
    register(OpInfo(_name, _scatter_samples(_name), db.ALL_DTYPES,
                    coverage=COV if _name == 'select_scatter' else ('empty', 'noncontig'),
                    errors=_scatter_errors(_name), tol=db.EXACT_TOL,
                    message_names=(_name, 'size', 'src', 'slice')))


def _addr_samples(op, mk):
    yield Sample((mk((3, 4)), mk((3,)), mk((4,))))
    yield Sample((mk((4, 3)), mk((4,)), mk((3,))), layout='transposed')
    yield Sample((mk((4,)), mk((3,)), mk((4,))))
    yield Sample((mk(()), mk((3,)), mk((4,))))
    yield Sample((mk((0, 4)), mk((0,)), mk((4,))))
    if not mk.is_bool:
        yield Sample((mk((3, 4)), mk((3,)), mk((4,))), {'beta': 2, 'alpha': 3})
        yield Sample((mk((3, 4)), mk((3,)), mk((4,))), {'beta': 0})
    if mk.is_float:
        yield Sample((mk((3, 4)), mk((3,)), mk((4,))), {'beta': 0.5, 'alpha': -1.5})


def _addr_errors(op):
    yield db.ErrorInput((E23, torch.ones(2, 2), torch.ones(3)), {}, RuntimeError)
    yield db.ErrorInput((torch.ones(4, 3), torch.ones(2), torch.ones(3)), {}, RuntimeError)


register(OpInfo('addr', _addr_samples, db.ALL_DTYPES, coverage=COV, errors=_addr_errors,
                message_names=('addr', 'size', 'vec1', 'vec2')))


def _dist_samples(op, mk):
    yield Sample((mk((3, 4)), mk((3, 4))))
    yield Sample((mk((3, 4)), mk((4,)), 3))
    yield Sample((mk((4, 3)), mk((4, 3)), 1), layout='transposed')
    yield Sample((mk(()), mk(()), 4))
    yield Sample((mk((0, 3)), mk((0, 3))))
    yield Sample((mk((2, 3)), mk((2, 3)), float('inf')))


register(OpInfo('dist', _dist_samples, db.FLOATS, coverage=COV, tol={'float16': (2e-3, 1e-3),
                'bfloat16': (2e-2, 1e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
                errors=db._err(E23, torch.ones(3, 2)),
                message_names=('dist', 'size', 'norm')))


def _renorm_samples(op, mk):
    yield Sample((mk((3, 4)), 2, 0, 1.0))
    yield Sample((mk((4, 3)), 1, 1, 2.0), layout='transposed')
    yield Sample((mk((2, 3, 4)), 3, -1, 0.5))
    yield Sample((mk((3, 4)), 2, 0, 100.0), layout='strided')
    yield Sample((mk((0, 3)), 2, 1, 1.0))


register(OpInfo('renorm', _renorm_samples, db.FLOATS, coverage=('empty', 'noncontig'),
                tol={'float16': (2e-3, 1e-3), 'bfloat16': (2e-2, 1e-2), 'float32': (1e-5, 1e-6),
                     'float64': (1e-7, 1e-7)},
                errors=db._err(torch.ones(3), 2, 0, 1.0), message_names=('renorm',)))


def _cdist_samples(op, mk):
    yield Sample((mk((3, 4)), mk((5, 4))))
    yield Sample((mk((3, 4)), mk((5, 4))), {'p': 1.0})
    yield Sample((mk((2, 3, 4)), mk((1, 2, 4))), {'p': 3.0})
    yield Sample((mk((4, 3)), mk((4, 3))), {'p': float('inf')}, layout='transposed')
    yield Sample((mk((0, 4)), mk((2, 4))))


register(OpInfo('cdist', _cdist_samples, ('float32', 'float64'), method=False, coverage=('empty', 'noncontig'),
                tol={'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
                errors=db._err(E23, torch.ones(2, 4)), message_names=('cdist', 'X1', 'columns')))


def _cov_samples(op, mk):
    yield Sample((mk((3, 5)),))
    yield Sample((mk((5,)),))
    yield Sample((mk((5, 3)),), layout='transposed')
    if op.name == 'cov':
        yield Sample((mk((3, 5)),), {'correction': 0})
        yield Sample((mk((2, 4)),), {'fweights': torch.tensor([1, 2, 1, 3])})
        if mk.is_float:
            yield Sample((mk((2, 4)),), {'aweights': torch.tensor([0.5, 1.0, 2.0, 1.0], dtype=torch.float64)})


for _name in ('cov', 'corrcoef'):
    register(OpInfo(_name, _cov_samples, NUMERIC, coverage=('noncontig',),
                    tol={'float16': (5e-3, 2e-3), 'bfloat16': (5e-2, 2e-2), 'float32': (1e-5, 1e-5),
                         'float64': (1e-7, 1e-7)},
                    errors=db._err(torch.ones(2, 2, 2)), message_names=('cov', _name)))


def _combinations_samples(op, mk):
    yield Sample((mk((4,)),))
    yield Sample((mk((4,)), 3))
    yield Sample((mk((3,)), 2, True))
    yield Sample((mk((3,)),), {'r': 0})
    yield Sample((mk((0,)),))
    yield Sample((mk((2,)), 3))


register(OpInfo('combinations', _combinations_samples, db.ALL_DTYPES, method=False, coverage=('empty',),
                tol=db.EXACT_TOL, errors=db._err(E23), message_names=('combinations', '1D')))
