"""Op-database entries: indexing by tensors (issue 3). Loaded after opdb.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

LAYOUTS = ('contiguous', 'transposed', 'strided')
G = torch.Generator().manual_seed(0)


def _idx(high, shape):
    return torch.randint(0, high, shape, generator=G)


def _index_select(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _idx(4, (5,))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _idx(6, (3,)).int()), layout=layout)   # int32 indices
    yield db.Sample((mk((4, 6)), -1, torch.tensor(2)))
    yield db.Sample((mk((0, 3)), 1, _idx(3, (2,))))
    yield db.Sample((mk(()), 0, torch.tensor([0])))


def _gather(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), 0, _idx(4, (3, 6))), layout=layout)
        yield db.Sample((mk((4, 6)), 1, _idx(6, (4, 2))), layout=layout)
    yield db.Sample((mk((2, 3, 4)), -1, _idx(4, (2, 3, 5))))
    yield db.Sample((mk((3, 4)), 0, torch.zeros(0, 4, dtype=torch.int64)))
    yield db.Sample((mk(()), 0, torch.tensor(0)))


def _take(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6)), _idx(24, (2, 5)) - 12), layout=layout)
    yield db.Sample((mk(()), torch.tensor([0, -1])))
    yield db.Sample((mk((3, 4)), torch.zeros(0, dtype=torch.int64)))


def _masked(with_value):
    def samples(op, mk):
        value = (torch.tensor(1, dtype=db.torch_dtype(mk.dtype)),) if with_value else ()
        for layout in LAYOUTS:
            yield db.Sample((mk((4, 6)), mk((4, 6), dtype='bool')) + value, layout=layout)
        yield db.Sample((mk((4, 6)), mk((6,), dtype='bool')) + value)     # broadcast mask
        yield db.Sample((mk(()), mk((), dtype='bool')) + value)
        yield db.Sample((mk((0, 3)), mk((0, 3), dtype='bool')) + value)
        if with_value:
            yield db.Sample((mk((4, 6)), mk((4, 6), dtype='bool'), 0))   # Python number
    return samples


COV = ('0-dim', 'empty', 'noncontig')
db.register(db.OpInfo('index_select', _index_select, tol=db.EXACT_TOL, coverage=COV,
                      errors=db._errors(db._err(torch.ones(2, 3), 0, torch.tensor([5]), exc=IndexError),
                                        db._err(torch.ones(2, 3), 0, torch.tensor([-1]), exc=IndexError),
                                        db._err(torch.ones(2, 3), 0, torch.tensor([[0]]), exc=IndexError),
                                        db._err(torch.tensor(1.), 0, torch.tensor([0, 0])))))
db.register(db.OpInfo('gather', _gather, tol=db.EXACT_TOL, coverage=COV,
                      errors=db._errors(db._err(torch.ones(2, 3), 0, torch.tensor([[5]])),
                                        db._err(torch.ones(2, 3), 0, torch.tensor([0])),
                                        db._err(torch.ones(2, 3), 0, torch.tensor([[0.5]])))))
db.register(db.OpInfo('take', _take, tol=db.EXACT_TOL, coverage=COV,
                      errors=db._errors(db._err(torch.ones(2, 3), torch.tensor([6]), exc=IndexError))))
db.register(db.OpInfo('masked_fill', _masked(True), inplace=True, tol=db.EXACT_TOL, coverage=COV,
                      errors=db._errors(db._err(torch.ones(2), torch.tensor([1, 0]), 1.0))))
db.register(db.OpInfo('masked_select', _masked(False), tol=db.EXACT_TOL, coverage=COV,
                      errors=db._errors(db._err(torch.ones(2), torch.tensor([1, 0])))))


def _nonzero(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((4, 6), int_domain=(-1, 1), domain=(-1, 1)),), layout=layout)
    yield db.Sample((mk((2, 3, 4), int_domain=(0, 1)),), {'as_tuple': True} if op.name == 'nonzero' else {})
    yield db.Sample((mk(()),))
    yield db.Sample((mk((0, 3)),))


db.register(db.OpInfo('nonzero', _nonzero, coverage=COV))
db.register(db.OpInfo('argwhere', _nonzero, coverage=COV))
