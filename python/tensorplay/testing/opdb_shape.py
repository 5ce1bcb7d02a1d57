"""Op database entries for the shape ops that copy (cat, stack, flip, roll, repeat,
tril, diag, ...).  Loaded after opdb.py by tests/python/conftest.py."""
import dataclasses
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')
OpInfo, Sample, ErrorInput, register = db.OpInfo, db.Sample, db.ErrorInput, db.register
COV = ('0-dim', 'empty', 'noncontig')
LIST_COV = ('empty', 'noncontig')


@dataclasses.dataclass
class ListSample(Sample):
    """A Sample whose tensors may sit inside a list argument (cat([a, b]))."""

    def tensors(self):
        found = []
        for v in (*self.args, *self.kwargs.values()):
            found += [t for t in v if db._is_input_tensor(t)] if isinstance(v, (list, tuple)) \
                else ([v] if db._is_input_tensor(v) else [])
        return found


def _t(shape=(2, 3), dtype='float32'):
    return torch.ones(shape, dtype=db.torch_dtype(dtype))


# ------------------------------------------------------------------ cat, stack
def _cat_samples(op, mk):
    yield ListSample(([mk((2, 3)), mk((4, 3))],))
    yield ListSample(([mk((2, 3)), mk((2, 1)), mk((2, 2))], 1))
    yield ListSample(([mk((2, 3)), mk((2, 5))], -1))
    yield ListSample(((mk((2, 3, 4)), mk((2, 1, 4))), 1))
    yield ListSample(([mk((3,))],))
    yield ListSample(([mk((0,)), mk((2, 3)), mk((0,))],))            # legacy skip of (0,)
    yield ListSample(([mk((0, 3)), mk((2, 3))],))
    yield ListSample(([mk((2, 3)), mk((2, 3), dtype='float64')],))    # promotion
    yield ListSample(([mk((2, 3)), mk((2, 3), dtype='int32')], 1))
    yield ListSample(([mk((4, 3)), mk((4, 3))], 1), layout='transposed')
    yield ListSample(([mk((2, 3)), mk((2, 3))], 0), layout='strided')


def _cat_errors(op):
    yield ErrorInput(([],), {}, ValueError)
    yield ErrorInput(([_t((2, 3)), _t((3, 3))], 1), {}, RuntimeError)
    yield ErrorInput(([_t((2, 3)), _t((3,))],), {}, RuntimeError)
    yield ErrorInput(([_t((2, 3))], 2), {}, IndexError)
    yield ErrorInput(([torch.tensor(1.0)],), {}, RuntimeError)


for _name in ('cat', 'concat', 'concatenate'):
    register(OpInfo(_name, _cat_samples, method=False, out=True, tol=db.EXACT_TOL,
                    errors=_cat_errors, coverage=LIST_COV, message_names=(_name, 'cat')))


def _stack_samples(op, mk):
    yield ListSample(([mk((2, 3)), mk((2, 3))],))
    yield ListSample(([mk((2, 3)), mk((2, 3)), mk((2, 3))], 2))
    yield ListSample(([mk((2, 3)), mk((2, 3))], -1))
    yield ListSample(([mk(()), mk(())],))
    yield ListSample(([mk((0, 3)), mk((0, 3))], 1))
    yield ListSample(([mk((2, 3)), mk((2, 3), dtype='float64')], 1))
    yield ListSample(([mk((4, 3)), mk((4, 3))], 1), layout='transposed')


register(OpInfo('stack', _stack_samples, method=False, out=True, tol=db.EXACT_TOL,
                coverage=('0-dim',) + LIST_COV,
                errors=db._errors(db._err([]), db._err([_t((2,)), _t((3,))]),
                                  db._err([_t((2,))], 3, exc=IndexError))))


def _hstack_like(name):
    def samples(op, mk):
        yield ListSample(([mk((2, 3)), mk((2, 3))],))
        yield ListSample(([mk((3,)), mk((3,))],))
        yield ListSample(((mk(()), mk(())),))
        yield ListSample(([mk((2, 0)), mk((2, 0))],))
        yield ListSample(([mk((4, 3)), mk((4, 3))],), layout='transposed')
        yield ListSample(([mk((2, 3)), mk((2, 3), dtype='int64')],))
    errs = db._err([], exc=RuntimeError)
    register(OpInfo(name, samples, method=False, out=True, tol=db.EXACT_TOL,
                    coverage=('0-dim',) + LIST_COV, errors=errs))


for _name in ('hstack', 'vstack', 'dstack', 'column_stack'):
    _hstack_like(_name)


# ------------------------------------------------------------------ single-tensor reorders
def _unary_shape(name, kwargs_list, *, shapes=((3, 4), (2, 3, 4)), zero_dim=True, empty=(2, 0),
                 errors=None, **kw):
    def samples(op, mk):
        for kwa in kwargs_list:
            for s in shapes:
                yield Sample((mk(s),), dict(kwa))
        if zero_dim:
            yield Sample((mk(()),), dict(kwargs_list[-1] if name != 'rot90' else {}))
        yield Sample((mk(empty),), dict(kwargs_list[0]))
        yield Sample((mk((4, 3)),), dict(kwargs_list[0]), layout='transposed')
        yield Sample((mk((3, 4)),), dict(kwargs_list[0]), layout='strided')
    cov = COV if zero_dim else ('empty', 'noncontig')
    register(OpInfo(name, samples, tol=db.EXACT_TOL, coverage=cov, errors=errors, **kw))


_unary_shape('flip', [{'dims': (0,)}, {'dims': (0, 1)}, {'dims': [-1]}, {'dims': ()}],
             errors=db._errors(db._err(_t(), dims=(0, 0)), db._err(_t(), dims=(5,), exc=IndexError)))
_unary_shape('fliplr', [{}], zero_dim=False, errors=db._err(_t((3,))))
_unary_shape('flipud', [{}], zero_dim=False, errors=db._err(torch.tensor(1.0)))
_unary_shape('roll', [{'shifts': 1}, {'shifts': (1, -2), 'dims': (0, 1)}, {'shifts': 7, 'dims': -1},
                      {'shifts': -3}],
             errors=db._errors(db._err(_t(), shifts=(1, 2), dims=(0,)),
                               db._err(_t(), shifts=1, dims=4, exc=IndexError)))
_unary_shape('rot90', [{}, {'k': 2}, {'k': 3, 'dims': (1, 0)}, {'k': -1, 'dims': [-1, -2]}, {'k': 4}],
             zero_dim=False,
             errors=db._errors(db._err(_t(), 1, (0, 0)), db._err(_t((3,))), db._err(_t(), 1, (0,))))
_unary_shape('tile', [{'dims': (2,)}, {'dims': (2, 1, 3)}, {'dims': (1, 0)}])


def _repeat_samples(op, mk):
    yield Sample((mk((2, 3)), 2, 2))
    yield Sample((mk((2, 3)), (1, 2, 3)))
    yield Sample((mk(()), 3))
    yield Sample((mk((3,)), 0, 2))
    yield Sample((mk((2, 0)), 2, 2))
    yield Sample((mk((4, 3)), 2, 1), layout='transposed')
    yield Sample((mk((3, 4)), 1, 2), layout='strided')


register(OpInfo('repeat', _repeat_samples, function=False, tol=db.EXACT_TOL, coverage=COV,
                errors=db._err(_t(), 2, form='method')))


def _ri_samples(op, mk):
    yield Sample((mk((2, 3)), 2))
    yield Sample((mk((2, 3)), 2), {'dim': 1})
    yield Sample((mk((2, 3)), torch.tensor([1, 0])), {'dim': 0})
    yield Sample((mk((2, 3)), torch.tensor([3])), {'dim': -1})
    yield Sample((mk(()), 3))
    yield Sample((mk((0, 3)), 2), {'dim': 0})
    yield Sample((mk((4, 3)), torch.tensor([1, 2, 0])), {'dim': 1}, 'transposed')
    yield Sample((mk((3, 4)), 2), {'dim': 1}, 'strided')


register(OpInfo('repeat_interleave', _ri_samples, tol=db.EXACT_TOL, coverage=COV,
                errors=db._errors(db._err(_t((3,)), torch.tensor([1, 2])), db._err(_t((3,)), -1))))


# ------------------------------------------------------------------ triangles and diagonals
def _tri_samples(op, mk):
    for k in ({}, {'diagonal': 1}, {'diagonal': -1}, {'diagonal': 5}, {'diagonal': -5}):
        yield Sample((mk((3, 4)),), k)
    yield Sample((mk((2, 3, 3)),), {'diagonal': 1})
    yield Sample((mk((0, 3)),))
    yield Sample((mk((2, 0, 3)),))
    yield Sample((mk((4, 3)),), {}, 'transposed')
    yield Sample((mk((3, 4)),), {'diagonal': -1}, 'strided')


for _name in ('tril', 'triu'):
    register(OpInfo(_name, _tri_samples, inplace=True, out=True, tol=db.EXACT_TOL,
                    coverage=('empty', 'noncontig'), errors=db._err(_t((3,)))))


def _tri_indices_samples(op, mk):
    dt = db.torch_dtype(mk.dtype)
    for args in ((3, 3), (3, 4, 1), (4, 3, -1), (0, 3), (3, 3, 10), (3, 3, -10)):
        yield Sample(args, {'dtype': dt})


for _name in ('tril_indices', 'triu_indices'):
    register(OpInfo(_name, _tri_indices_samples, ('int32', 'int64'), method=False, tol=db.EXACT_TOL,
                    errors=db._err(-1, 3)))


def _diag_samples(op, mk):
    for k in ({}, {'diagonal': 1}, {'diagonal': -2}):
        yield Sample((mk((3,)),), k)
        yield Sample((mk((3, 4)),), k)
    yield Sample((mk((0,)),))
    yield Sample((mk((3, 4)),), {'diagonal': 9})
    yield Sample((mk((4, 3)),), {'diagonal': 1}, 'transposed')
    yield Sample((mk((3, 4)),), {}, 'strided')


register(OpInfo('diag', _diag_samples, out=True, tol=db.EXACT_TOL, coverage=('empty', 'noncontig'),
                errors=db._errors(db._err(_t((2, 2, 2))), db._err(torch.tensor(1.0)))))


def _diag_embed_samples(op, mk):
    yield Sample((mk((3,)),))
    yield Sample((mk((2, 3)),), {'offset': 1})
    yield Sample((mk((2, 3)),), {'offset': -1, 'dim1': 0, 'dim2': 2})
    yield Sample((mk((2, 3)),), {'dim1': -1, 'dim2': 0})
    yield Sample((mk((2, 0)),))
    yield Sample((mk((4, 3)),), {}, 'transposed')
    yield Sample((mk((3, 4)),), {'offset': 2}, 'strided')


register(OpInfo('diag_embed', _diag_embed_samples, tol=db.EXACT_TOL, coverage=('empty', 'noncontig'),
                errors=db._errors(db._err(_t((3,)), 0, 0, 0), db._err(_t((3,)), 0, 0, 5, exc=IndexError))))


def _diagflat_samples(op, mk):
    yield Sample((mk((3,)),))
    yield Sample((mk((2, 2)),), {'offset': -1})
    yield Sample((mk(()),), {'offset': 2})
    yield Sample((mk((0,)),))
    yield Sample((mk((4, 3)),), {}, 'transposed')
    yield Sample((mk((3, 4)),), {}, 'strided')


register(OpInfo('diagflat', _diagflat_samples, tol=db.EXACT_TOL, coverage=COV))


# ------------------------------------------------------------------ Python sugar
def _varargs_samples(one_d_only=False):
    def samples(op, mk):
        yield ListSample((mk((3,)), mk((2,))))
        if not one_d_only:
            yield ListSample(([mk((3,)), mk((2,)), mk((4,))],))
        yield ListSample((mk((3,)),))
        yield ListSample((mk((0,)), mk((2,))))
        yield ListSample((mk((3,)), mk((4,))), layout='strided')
        if not one_d_only:
            yield ListSample((mk(()), mk((2,))))
    return samples


register(OpInfo('meshgrid', lambda op, mk: (s for ind in ('ij', 'xy') for s in (
    dataclasses.replace(x, kwargs={'indexing': ind}) for x in _varargs_samples()(op, mk))),
    method=False, tol=db.EXACT_TOL, coverage=('0-dim',) + LIST_COV,
    errors=db._errors(db._err(indexing='ij'), db._err(_t(), indexing='ij'),
                      db._err(_t((2,)), indexing='foo'))))
register(OpInfo('cartesian_prod', _varargs_samples(True), method=False, tol=db.EXACT_TOL,
                coverage=LIST_COV, errors=db._err(_t()), message_names=('cartesian_prod', 'meshgrid')))


def _block_diag_samples(op, mk):
    yield ListSample((mk((2, 3)), mk((1, 1)), mk((3,)), mk(())))
    yield ListSample((mk((2, 3)), mk((2, 2), dtype='float64')))
    yield ListSample((mk((0, 2)), mk((2, 0))))
    yield ListSample((mk((4, 3)), mk((4, 3))), layout='transposed')


register(OpInfo('block_diag', _block_diag_samples, method=False, tol=db.EXACT_TOL,
                coverage=('0-dim',) + LIST_COV, errors=db._err(_t((2, 2, 2)))))


def _atleast_samples(op, mk):
    for s in ((), (3,), (2, 3), (2, 3, 4), (0,)):
        yield Sample((mk(s),))
    yield ListSample(([mk(()), mk((3,))],))
    yield Sample((mk((4, 3)),), layout='transposed')


for _name in ('atleast_1d', 'atleast_2d', 'atleast_3d'):
    register(OpInfo(_name, _atleast_samples, method=False, tol=db.EXACT_TOL, coverage=COV))
