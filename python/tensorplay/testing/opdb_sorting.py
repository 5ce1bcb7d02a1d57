"""Op-database entries: scans and sorting (issue 3). Loaded after opdb.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

COVERAGE = ('0-dim', 'empty', 'noncontig')
LAYOUTS = ('contiguous', 'transposed', 'strided')
DIM_ERRORS = [db._err(torch.ones(2, 3), 2, exc=IndexError)]


def _distinct(mk, shape):
    """Values without ties (a shuffled range), so every sort order is unambiguous."""
    n = 1
    for s in shape:
        n *= s
    lo = 0 if mk.dtype in ('uint8', 'bool') else -(n // 2)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(n))
    return (perm + lo).reshape(shape).to(db.torch_dtype(mk.dtype))


def _samples(calls, tied_kwargs=None, distinct=True, extra_args=()):
    def samples(op, mk):
        for args, kwargs in calls:
            for layout in LAYOUTS:
                x = _distinct(mk, (3, 4, 5)) if distinct and mk.dtype != 'bool' else mk((3, 4, 5))
                yield db.Sample((x,) + args, kwargs, layout=layout)
        if tied_kwargs is not None:  # ties: only an order PyTorch defines (stable sort)
            yield db.Sample((mk((4, 6), int_domain=(-2, 2), domain=(-1, 1)),), tied_kwargs)
        yield db.Sample((mk(()),) + extra_args)
        yield db.Sample((mk((0, 3)),) + (extra_args and (0,)))
        if mk.is_float:
            yield db.Sample((mk.values([2.0, float('nan'), -1.0, float('inf'), -float('inf')]),)
                            + extra_args)
    return samples


SORT_CALLS = [((), {}), ((0,), {}), ((1, True), {}), ((-1,), {'descending': True})]
db.register(db.OpInfo('sort', _samples(SORT_CALLS, {'stable': True}),
                      tol=db.EXACT_TOL, coverage=COVERAGE, errors=db._errors(*DIM_ERRORS)))
db.register(db.OpInfo('argsort', _samples(SORT_CALLS, {'stable': True, 'dim': 0}),
                      coverage=COVERAGE, errors=db._errors(*DIM_ERRORS)))
db.register(db.OpInfo('msort', _samples([((), {})]), tol=db.EXACT_TOL,
                      coverage=COVERAGE))
db.register(db.OpInfo('topk', _samples([((2,), {}), ((3, 0), {}), ((1, 1, False), {}), ((0,), {})],
                                       extra_args=(1,)),
                      db.NO_BOOL, tol=db.EXACT_TOL, coverage=('0-dim', 'noncontig'),
                      errors=db._errors(db._err(torch.ones(2, 3), 4, exc=RuntimeError),
                                        db._err(torch.ones(2, 3), 1, 2, exc=IndexError))))
SCAN_CALLS = [((0,), {}), ((1,), {}), ((-1,), {'dtype': torch.float64})]
SCAN_TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2), 'float32': (1e-5, 1e-5)}
for _name in ('cumsum', 'cumprod'):
    def _scan_samples(op, mk, _calls=SCAN_CALLS):
        for args, kwargs in _calls:
            if mk.is_complex and 'dtype' in kwargs:  # a complex input keeps a complex dtype=
                kwargs = {'dtype': torch.complex128}
            for layout in LAYOUTS:
                yield db.Sample((mk((3, 4, 5), domain=(0.5, 1.5), int_domain=(-2, 2)),) + args,
                                kwargs, layout=layout)
        yield db.Sample((mk(()), 0))
        yield db.Sample((mk((0, 3)), 1))
    db.register(db.OpInfo(_name, _scan_samples, tol=SCAN_TOL, coverage=COVERAGE,
                          errors=db._errors(*DIM_ERRORS)))
