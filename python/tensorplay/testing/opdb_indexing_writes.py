"""Op-database entries: writes through tensor indices (index_put, scatter family, index_add/
copy/fill/reduce, put, masked_scatter) and take_along_dim, searchsorted, bucketize.
Assignments get distinct indices (duplicates leave the result to the implementation);
reductions get duplicates. Loaded after opdb.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

LAYOUTS = ('contiguous', 'transposed', 'strided')
COV = ('0-dim', 'empty', 'noncontig')
G = torch.Generator().manual_seed(1)
L = torch.int64


def _idx(high, shape):
    """Random indices in [0, high), duplicates likely."""
    return torch.randint(0, high, shape, generator=G)


def _distinct(high, k):
    """k distinct indices in [0, high)."""
    return torch.randperm(high, generator=G)[:k]


def _distinct_cols(high, rows, cols):
    """A (rows, cols) index whose columns hold distinct values in [0, high)."""
    return torch.stack([_distinct(high, rows) for _ in range(cols)], 1)


def _num(mk):
    """A Python number natural for the dtype under test."""
    return True if mk.is_bool else 2 if mk.is_int else 2.5


# ------------------------------------------------------------------ scatter family
def _scatter(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _distinct_cols(4, 3, 6), mk((3, 6))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _distinct_cols(6, 5, 4).T, mk((4, 5))), layout=layout)
    yield db.Sample((mk((4, 6)), -1, _distinct_cols(6, 2, 3).T, mk((3, 5))))   # index < src, self
    yield db.Sample((mk((4, 6)), 0, _distinct_cols(4, 2, 6).int(), mk((2, 6))))
    yield db.Sample((mk((4, 6)), 0, _distinct_cols(4, 3, 6), _num(mk)))        # scalar value
    yield db.Sample((mk((4, 6)), 0, _idx(4, (5, 6)), mk((5, 6))), {'reduce': 'add'})
    yield db.Sample((mk((4, 6)), 1, _idx(6, (4, 8)), mk((4, 8))), {'reduce': 'multiply'})
    yield db.Sample((mk((4, 6)), 0, _idx(4, (5, 6)), _num(mk)), {'reduce': 'add'})
    yield db.Sample((mk(()), 0, torch.tensor(0), mk(())))
    yield db.Sample((mk((0, 3)), 0, torch.zeros(0, 3, dtype=L), mk((0, 3))))
    yield db.Sample((mk((3, 4)), 0, torch.zeros(0, 4, dtype=L), mk((2, 4))))


def _scatter_add(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _idx(4, (7, 6)), mk((7, 6))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _idx(6, (3, 9)), mk((4, 9))), layout=layout)
    yield db.Sample((mk((2, 3, 4)), 1, _idx(3, (2, 5, 4)).int(), mk((2, 5, 4))))
    yield db.Sample((mk(()), 0, torch.tensor(0), mk(())))
    yield db.Sample((mk((0, 3)), 1, torch.zeros(0, 3, dtype=L), mk((0, 3))))
    yield db.Sample((mk((40, 3)), 0, _idx(40, (3000, 3)), mk((3000, 3))))   # long lines


def _scatter_reduce(op, mk):
    # complex numbers have no order: no amax / amin (torch raises NotImplementedError too)
    order = 'sum' if mk.is_complex else 'amax'
    reduces = ('sum', 'prod') + (() if mk.is_complex else ('amax', 'amin')) + (() if mk.is_bool else ('mean',))
    for reduce in reduces:
        for include_self in (True, False):
            kw = {'include_self': include_self}
            yield db.Sample((mk((4, 6)), 0, _idx(4, (5, 6)), mk((5, 6)), reduce), kw)
            yield db.Sample((mk((4, 6)), 1, _idx(6, (4, 3)), mk((4, 5)), reduce), kw, layout='transposed')
    yield db.Sample((mk((4, 6)), 0, _idx(4, (5, 6)), mk((5, 6)), 'sum'), layout='strided')
    if mk.is_float:   # NaN propagates through amax/amin
        nan = float('nan')
        for reduce in ('amax', 'amin'):
            yield db.Sample((mk.values([1, nan, 3]), 0, torch.tensor([0, 0, 1, 2]),
                             mk.values([nan, 2, 5, -1]), reduce))
    yield db.Sample((mk(()), 0, torch.tensor(0), mk(()), 'sum'))
    yield db.Sample((mk((0, 3)), 1, torch.zeros(0, 3, dtype=L), mk((0, 3)), order))


# ------------------------------------------------------------------ index_* along a dim
def _index_add(op, mk):
    alpha = True if mk.is_bool else 2 if mk.is_int else 0.5
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _idx(4, (7,)), mk((7, 6))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _idx(6, (3,)).int(), mk((4, 3))), layout=layout)
    yield db.Sample((mk((4, 6)), -1, _idx(6, (5,)), mk((4, 5))), {'alpha': alpha})
    yield db.Sample((mk((2, 3, 4)), 1, torch.tensor(2), mk((2, 1, 4))))
    yield db.Sample((mk(()), 0, torch.tensor([0]), mk(())))
    yield db.Sample((mk((0, 3)), 1, _idx(3, (2,)), mk((0, 2))))
    yield db.Sample((mk((300, 40)), 0, _idx(300, (900,)), mk((900, 40))))   # threaded rows


def _index_copy(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _distinct(4, 3), mk((3, 6))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _distinct(6, 4), mk((4, 4))), layout=layout)
    yield db.Sample((mk((2, 3, 4)), 2, _distinct(4, 2), mk((2, 3, 2))))
    yield db.Sample((mk(()), 0, torch.tensor(0), mk(())))
    yield db.Sample((mk((0, 3)), 1, _distinct(3, 2), mk((0, 2))))


def _index_fill(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _idx(4, (3,)), _num(mk)), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _idx(6, (5,)) - 6, mk(())), layout=layout)   # negative
    yield db.Sample((mk((2, 3, 4)), -1, torch.tensor(1), 0))
    yield db.Sample((mk((3, 4)), 0, torch.tensor([0, 2]), torch.tensor(3.5 if mk.is_float else 3)))
    yield db.Sample((mk(()), 0, torch.tensor([0]), _num(mk)))
    yield db.Sample((mk((0, 3)), 1, _idx(3, (2,)), _num(mk)))


def _index_reduce(op, mk):
    # complex: prod and mean over self only (torch has neither amax / amin nor
    # include_self=False for complex; both raise NotImplementedError, as ours)
    hi, lo = ('prod', 'mean') if mk.is_complex else ('amax', 'amin')
    reduces = ('prod',) + (() if mk.is_complex else ('amax', 'amin')) + (() if mk.is_bool else ('mean',))
    for reduce in reduces:
        for include_self in (True,) if mk.is_bool or mk.is_complex else (True, False):
            kw = {'include_self': include_self}
            yield db.Sample((mk((4, 6)), 0, _idx(4, (7,)), mk((7, 6)), reduce), kw)
            yield db.Sample((mk((4, 6)), 1, _idx(6, (3,)), mk((4, 3)), reduce), kw, layout='transposed')
    yield db.Sample((mk((4, 6)), 0, _idx(4, (5,)).int(), mk((5, 6)), hi), layout='strided')
    yield db.Sample((mk((3, 4)), 0, torch.tensor(1), mk((1, 4)), lo))
    if not (mk.is_bool or mk.is_complex):  # PyTorch's bool and complex kernels need self.dim() > 1
        yield db.Sample((mk(()), 0, torch.tensor(0), mk(()), 'prod'))
        yield db.Sample((mk((5,)), 0, _idx(5, (4,)), mk((4,)), hi))
    yield db.Sample((mk((0, 3)), 1, _idx(3, (2,)), mk((0, 2)), lo))


# ------------------------------------------------------------------ index_put, put
def _index_put(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), (_idx(4, (9,)),), mk((9, 6)), True), layout=layout)
        yield db.Sample((mk((4, 6)), (_distinct(4, 3),), mk((3, 6))), layout=layout)
    yield db.Sample((mk((4, 6)), (_idx(4, (2, 5)), _idx(6, (5,)) - 6), mk((5,)), True))  # broadcast
    yield db.Sample((mk((4, 6)), (_distinct(4, 2).int(), _distinct(6, 2)), mk(())))
    yield db.Sample((mk((4, 6)), (mk((4, 6), dtype='bool'),), mk(())))
    yield db.Sample((mk((4, 6)), (mk((4,), dtype='bool'),), mk((6,)), True))
    yield db.Sample((mk((4, 6)), (torch.tensor(True), _idx(4, (3,))), mk(()), True))
    yield db.Sample((mk((2, 3, 4)), (_idx(2, (5,)), _idx(3, (5,))), mk((1, 4)), True))
    yield db.Sample((mk((3, 4)), (torch.zeros(0, dtype=L),), mk((4,))))
    yield db.Sample((mk((0, 3)), (torch.zeros(0, dtype=L),), mk(())))
    yield db.Sample((mk((2000,)), (_idx(2000, (40000,)) - 1000,), mk((40000,)), True))  # threaded


def _put(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), _distinct(24, 7) - 12, mk((7,))), layout=layout)
        yield db.Sample((mk((4, 6)), _idx(24, (2, 5)), mk((10,)), True), layout=layout)
    yield db.Sample((mk((4, 6)), _distinct(24, 6).view(2, 3), mk((3, 2))))
    yield db.Sample((mk(()), torch.tensor([0, -1]), mk((2,)), True))
    yield db.Sample((mk((0, 3)), torch.zeros(0, dtype=L), mk((0,))))


# ------------------------------------------------------------------ masked_scatter
def _masked_scatter(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), mk((4, 6), dtype='bool'), mk((4, 6))), layout=layout)
    yield db.Sample((mk((4, 6)), mk((6,), dtype='bool'), mk((30,))))     # broadcast mask
    yield db.Sample((mk((6,)), mk((4, 6), dtype='bool'), mk((24,))))     # broadcast self
    yield db.Sample((mk(()), torch.tensor(True), mk((2,))))
    yield db.Sample((mk((0, 3)), torch.zeros(0, 3, dtype=torch.bool), mk((0,))))


# ------------------------------------------------------------------ lookups
def _take_along_dim(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), _idx(4, (3, 6)), 0), layout=layout)
        yield db.Sample((mk((4, 6)), _idx(6, (4, 2)) - 6, 1), layout=layout)
    yield db.Sample((mk((4, 6)), _idx(24, (2, 5))))                       # flattened
    yield db.Sample((mk((4, 1)), _idx(1, (1, 5)), 0))                     # broadcast
    yield db.Sample((mk((2, 3, 4)), _idx(4, (2, 1, 6)), -1))
    yield db.Sample((mk(()), torch.tensor(0)))
    yield db.Sample((mk((3, 4)), torch.zeros(3, 0, dtype=L), 1))


def _sorted(mk, shape):
    return mk(shape).sort(dim=-1).values


def _searchsorted(op, mk):
    num = 3 if not mk.is_float else 0.5
    for layout in LAYOUTS:
        yield db.Sample((_sorted(mk, (7,)), mk((3, 4))), layout=layout)
        yield db.Sample((_sorted(mk, (3, 6)), mk((3, 4))), {'right': True}, layout=layout)
    yield db.Sample((_sorted(mk, (7,)), mk((5,))), {'side': 'right', 'out_int32': True})
    unsorted = mk((6,))
    yield db.Sample((unsorted, mk((5,))), {'sorter': unsorted.argsort(stable=True)})
    yield db.Sample((_sorted(mk, (7,)), num))
    yield db.Sample((_sorted(mk, (7,)), mk(())))
    yield db.Sample((_sorted(mk, (0,)), mk((3,))))
    yield db.Sample((_sorted(mk, (2, 5)), mk((2, 0))))
    if mk.is_float:
        nan = float('nan')
        yield db.Sample((mk.values([-1, 0, 2, nan]), mk.values([nan, 1, -2, 5])))


def _bucketize(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((3, 4)), _sorted(mk, (6,))), layout=layout)
    yield db.Sample((mk((5,)), _sorted(mk, (6,))), {'right': True, 'out_int32': True})
    yield db.Sample((3 if not mk.is_float else 0.5, _sorted(mk, (6,))))
    yield db.Sample((mk(()), _sorted(mk, (6,))))
    yield db.Sample((mk((0, 2)), _sorted(mk, (6,))))


# ------------------------------------------------------------------ errors
_x = torch.ones(3, 4)
_i = torch.tensor([[0, 1, 2, 0]])
_e = db._err


def _scatter_errors(op_name):
    src = torch.ones(1, 4)
    extra = ('sum',) if op_name == 'scatter_reduce' else ()
    return db._errors(
        _e(_x, 2, _i, src, *extra, exc=IndexError),                    # bad dim
        _e(_x, 0, _i + 3, src, *extra),                                # index out of range
        _e(_x, 0, _i - 1, src, *extra),                                # negative index
        _e(_x, 0, _i.float(), src, *extra),                            # index dtype
        _e(_x, 0, _i, src.double(), *extra),                           # self/src dtype
        _e(_x, 0, torch.zeros(1, 5, dtype=L), src, *extra),            # index larger than src
        _e(_x, 0, torch.zeros(4, dtype=L), torch.ones(4), *extra),     # ndim mismatch
    )


_vec = torch.tensor([0, 1])
_src = torch.ones(2, 4)
_ERRORS = {
    'scatter': db._errors(_scatter_errors('scatter'),
                          _e(_x, 0, _i, torch.ones(1, 4), reduce='mean'),
                          _e(_x, 0, _i, 2.0, reduce='mean')),
    'scatter_add': _scatter_errors('scatter_add'),
    'scatter_reduce': db._errors(_scatter_errors('scatter_reduce'),
                                 _e(_x, 0, _i, torch.ones(1, 4), 'foo'),
                                 _e(_x.bool(), 0, _i, torch.ones(1, 4).bool(), 'mean',
                                    exc=NotImplementedError)),
    'index_add': db._errors(_e(_x, 2, _vec, _src, exc=IndexError),
                            _e(_x, 0, torch.tensor([0, 3]), _src),
                            _e(_x, 0, torch.tensor([0, -1]), _src),
                            _e(_x, 0, _vec.float(), _src),
                            _e(_x, 0, _vec.view(1, 2), _src, exc=IndexError),
                            _e(_x, 0, _vec, _src.double()),
                            _e(_x, 0, _vec, torch.ones(2, 3)),
                            _e(_x, 0, _vec, torch.ones(3, 4))),
    'index_copy': db._errors(_e(_x, 2, _vec, _src, exc=IndexError),
                             _e(_x, 0, torch.tensor([0, 3]), _src, exc=IndexError),
                             _e(_x, 0, _vec.int(), _src),
                             _e(_x, 0, _vec, _src.double()),
                             _e(_x, 0, _vec, torch.ones(2, 3)),
                             _e(_x, 0, _vec, torch.ones(3, 4), exc=IndexError)),
    'index_fill': db._errors(_e(_x, 2, _vec, 1.0, exc=IndexError),
                             _e(_x, 0, torch.tensor([0, 3]), 1.0, exc=IndexError),
                             _e(_x, 0, _vec.int(), 1.0, exc=IndexError),
                             _e(_x, 0, _vec.view(1, 2), 1.0),
                             _e(_x, 0, _vec, torch.ones(1))),
    'index_reduce': db._errors(_e(_x, 2, _vec, _src, 'prod', exc=IndexError),
                               _e(_x, 0, torch.tensor([0, 3]), _src, 'prod', exc=IndexError),
                               _e(_x, 0, _vec.float(), _src, 'prod'),
                               _e(_x, 0, _vec, _src.double(), 'prod'),
                               _e(_x, 0, _vec, torch.ones(2, 3), 'amax'),
                               _e(_x, 0, _vec, _src, 'sum'),
                               _e(_x.bool(), 0, _vec, _src.bool(), 'amax', include_self=False,
                                  exc=NotImplementedError),
                               _e(torch.ones(3, dtype=torch.bool), 0, _vec, torch.ones(2, dtype=torch.bool),
                                  'prod', exc=NotImplementedError)),
    'index_put': db._errors(_e(_x, (torch.tensor([0, 3]),), torch.tensor(1.), exc=IndexError),
                            _e(_x, (torch.tensor([0, -4]),), torch.tensor(1.), True, exc=IndexError),
                            _e(_x, (_vec.float(),), torch.tensor(1.), exc=IndexError),
                            _e(_x, (_vec.short(),), torch.tensor(1.), exc=IndexError),
                            _e(_x, (_vec,), torch.tensor(1.).double()),
                            _e(_x, (_vec,), torch.ones(3)),
                            _e(_x, (_vec, _vec, _vec), torch.tensor(1.), exc=IndexError),
                            _e(_x, (torch.tensor([True, False]),), torch.tensor(1.), exc=IndexError),
                            _e(_x, (_vec, torch.tensor([0, 1, 2])), torch.tensor(1.), exc=IndexError)),
    'put': db._errors(_e(_x, torch.tensor([0, 12]), torch.ones(2), exc=IndexError),
                      _e(_x, torch.tensor([0, -13]), torch.ones(2), exc=IndexError),
                      _e(_x, _vec.int(), torch.ones(2)),
                      _e(_x, _vec, torch.ones(2).double()),
                      _e(_x, _vec, torch.ones(3), exc=IndexError)),
    'masked_scatter': db._errors(_e(_x, torch.ones(4), torch.ones(12)),
                                 _e(_x, torch.ones(4, dtype=torch.bool), torch.ones(5)),
                                 _e(_x, torch.ones(4, dtype=torch.bool), torch.ones(12).double()),
                                 _e(_x, torch.ones(5, dtype=torch.bool), torch.ones(15))),
    'take_along_dim': db._errors(_e(_x, torch.tensor([[0, 1]]), 2, exc=IndexError),
                                 _e(_x, torch.tensor([0, 12])),
                                 _e(_x, torch.tensor([[0, 1]]).int(), 1),
                                 _e(_x, torch.tensor([0, 1]), 0),
                                 _e(_x, torch.tensor([[0, 1], [1, 2]]), 0),
                                 _e(torch.tensor(1.), torch.tensor(0), 0, exc=IndexError)),
    'searchsorted': db._errors(_e(torch.tensor(1.), torch.ones(3)),
                               _e(torch.ones(2, 2), torch.ones(3)),
                               _e(torch.ones(4), torch.ones(3), side='foo'),
                               _e(torch.ones(4), torch.ones(3), side='left', right=True),
                               _e(torch.ones(4), torch.ones(3), sorter=torch.arange(4).int()),
                               _e(torch.ones(4), torch.ones(3), sorter=torch.arange(3)),
                               _e(torch.ones(4), torch.ones(3), sorter=torch.arange(4) + 1),
                               _e(torch.ones(4, dtype=torch.bool), torch.ones(3, dtype=torch.bool),
                                  exc=NotImplementedError)),
    'bucketize': db._errors(_e(torch.ones(3), torch.ones(2, 2)),
                            _e(torch.ones(3, dtype=torch.bool), torch.ones(2, dtype=torch.bool),
                               exc=NotImplementedError)),
}

_ENTRIES = [
    # complex products (reduce='multiply') round unlike torch's by an ulp
    ('scatter', _scatter, dict(inplace=True, out=True, tol={**db.EXACT_TOL, 'complex64': db.DEFAULT_TOL['complex64'],
                                                            'complex128': db.DEFAULT_TOL['complex128']})),
    ('scatter_add', _scatter_add, dict(inplace=True, out=True)),
    ('scatter_reduce', _scatter_reduce, dict(inplace=True, out=True)),
    ('index_add', _index_add, dict(inplace=True, out=True, tol=db.FUSED_TOL)),
    ('index_copy', _index_copy, dict(inplace=True, out=True, tol=db.EXACT_TOL)),
    ('index_fill', _index_fill, dict(inplace=True, tol=db.EXACT_TOL)),
    ('index_reduce', _index_reduce, dict(inplace=True, out=True)),
    ('index_put', _index_put, dict(inplace=True)),
    ('put', _put, dict(inplace=True)),
    ('masked_scatter', _masked_scatter, dict(inplace=True, tol=db.EXACT_TOL)),
    ('take_along_dim', _take_along_dim, dict(out=True, tol=db.EXACT_TOL)),
    ('searchsorted', _searchsorted, dict(method=False, out=True, dtypes=db.NO_BOOL)),
    ('bucketize', _bucketize, dict(method=False, out=True, dtypes=db.NO_BOOL)),
]
for _name, _samples, _kw in _ENTRIES:
    db.register(db.OpInfo(_name, _samples, coverage=COV, errors=_ERRORS[_name], **_kw))
