"""Op-database entries: reductions (issue 3). Loaded after opdb.py, whose registry it extends."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

COVERAGE = ('0-dim', 'empty', 'noncontig')
# (args, kwargs) applied to a 3x4x5 input in every layout
DIM_CALLS = [((), {}), ((0,), {}), ((1,), {}), ((-1,), {}), (((0, 2),), {}), (((1, 2),), {}),
             ((1, True), {}), ((), {'dim': (0, 1), 'keepdim': True}), (((),), {})]
LAYOUTS = ('contiguous', 'transposed', 'strided')


def _samples(calls, domain=None, extra_shapes=((), (0,), (2, 0, 3), (1, 6, 1)), extra_calls=()):
    def samples(op, mk):
        for shape, args in extra_calls:
            yield db.Sample((mk(shape),) + args)
        kw = {'domain': domain} if domain else {}
        for args, kwargs in calls:
            for layout in LAYOUTS:
                yield db.Sample((mk((3, 4, 5), **kw),) + args, kwargs, layout=layout)
        for shape in extra_shapes:
            yield db.Sample((mk(shape, **kw),))
            if shape:
                yield db.Sample((mk(shape, **kw), len(shape) - 1))
    return samples


def reduction(name, dtypes=db.ALL_DTYPES, calls=DIM_CALLS, extra_shapes=((), (0,), (2, 0, 3), (1, 6, 1)),
              extra_calls=(), errors=(), tol=None, repeated_dim_exc=RuntimeError, **kw):
    E = torch.ones(2, 3)
    errs = [db._err(E, 2, exc=IndexError), db._err(E, (0, 0), exc=repeated_dim_exc)] + list(errors)
    samples = _samples(calls, kw.pop('domain', None), extra_shapes, extra_calls)
    return db.register(db.OpInfo(name, samples, dtypes,
                                 out=True, coverage=COVERAGE, errors=db._errors(*errs),
                                 tol=tol or {}, **kw))


SUM_TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2), 'float32': (1e-5, 1e-5)}
reduction('sum', tol=SUM_TOL)
reduction('mean', db.FLOATS, tol=SUM_TOL, errors=[db._err(torch.ones(2, dtype=torch.int64))])
reduction('prod', calls=[((), {}), ((0,), {}), ((-1, True), {})], domain=(0.5, 1.5), tol=SUM_TOL,
          repeated_dim_exc=TypeError)
for _name in ('amax', 'amin'):
    reduction(_name, errors=[db._err(torch.ones(0, 3), 0, exc=IndexError)],
              extra_shapes=((), (1, 6, 1), (2, 3)), extra_calls=[((2, 0, 3), (0,)), ((0, 3), (1,))])
reduction('all')
reduction('any')


def _arg_samples(with_other):
    """Inputs with ties (small integer domain) and, for floats, NaN; dims and keepdim."""
    def samples(op, mk):
        for layout in LAYOUTS:
            x = mk((3, 4, 5), int_domain=(-2, 2), domain=(-2, 2))
            yield db.Sample((x,), layout=layout)
            for args in ((0,), (1,), (-1, True), (2, False)):
                yield db.Sample((x,) + args, layout=layout)
        yield db.Sample((mk(()),))
        yield db.Sample((mk(()), 0))
        yield db.Sample((mk((2, 0, 3)), 2))
        if mk.is_float:
            v = mk.values([1.0, float('nan'), 3.0, float('nan')])
            yield db.Sample((v,))
            yield db.Sample((v, 0))
        if with_other:
            yield db.Sample((mk((3, 4)), mk((4,))))
    return samples


_ARG_ERRORS = [db._err(torch.ones(2, 3), 2, exc=IndexError),
               db._err(torch.ones(0, 3), 0, exc=IndexError)]
for _name in ('max', 'min'):
    db.register(db.OpInfo(_name, _arg_samples(True), tol=db.EXACT_TOL, coverage=COVERAGE,
                          errors=db._errors(*_ARG_ERRORS, db._err(torch.ones(0)))))
for _name in ('argmax', 'argmin'):
    db.register(db.OpInfo(_name, _arg_samples(False), db.NO_BOOL, coverage=COVERAGE,
                          errors=db._errors(*_ARG_ERRORS, db._err(torch.ones(0), exc=IndexError),
                                            db._err(torch.ones(2, dtype=torch.bool)))))

# ---------------------------------------------------------------- composed reductions
STAT_CALLS = [((), {}), ((0,), {}), ((-1,), {'keepdim': True}), (((0, 2),), {}),
              ((1,), {'correction': 0}), ((), {'correction': 2}),
              # the legacy `unbiased` flag, positional and keyword
              ((True,), {}), ((False,), {}), ((0, True), {}), ((1, False, True), {}),
              (((0, 2), False), {}), ((), {'unbiased': False}), ((None, True), {}),
              ((), {'dim': 1, 'unbiased': False, 'keepdim': True})]
for _name in ('var', 'std', 'var_mean', 'std_mean'):
    db.register(db.OpInfo(_name, _samples(STAT_CALLS), db.FLOATS, method=_name in ('var', 'std'),
                          coverage=COVERAGE, tol=SUM_TOL,
                          errors=db._errors(db._err(torch.ones(2, 3), 2, exc=IndexError),
                                            db._err(torch.ones(2, dtype=torch.int64)))))
db.register(db.OpInfo('logsumexp', _samples([((0,), {}), ((-1, True), {}), (((0, 1),), {})],
                                             extra_shapes=()),
                      coverage=('noncontig',), tol=SUM_TOL,
                      errors=db._errors(db._err(torch.ones(2, 3), 2, exc=IndexError))))
db.register(db.OpInfo('count_nonzero', _samples([((), {}), ((0,), {}), (((1, 2),), {})],
                                                 extra_shapes=((), (0,))),
                      coverage=('0-dim', 'empty', 'noncontig'),
                      errors=db._errors(db._err(torch.ones(2, 3), 2, exc=IndexError))))
for _name in ('nansum', 'nanmean'):
    db.register(db.OpInfo(_name, _samples(DIM_CALLS[:-1], extra_shapes=((), (0,), (2, 0, 3))),
                          db.ALL_DTYPES if _name == 'nansum' else db.FLOATS, coverage=COVERAGE,
                          tol=SUM_TOL,
                          errors=db._errors(db._err(torch.ones(2, 3), 2, exc=IndexError))))

# ---------------------------------------------------------------- closeness and differences


def _close_samples(op, mk):
    for layout in LAYOUTS:
        a = mk((3, 4))
        noise = mk((3, 4), domain=(-1e-6, 1e-6), int_domain=(0, 1)) if mk.dtype != 'bool' else mk((3, 4))
        yield db.Sample((a, (a.double() + noise.double()).to(a.dtype)), layout=layout)
    yield db.Sample((mk(()), mk(())))
    yield db.Sample((mk((0, 2)), mk((0, 2))))
    yield db.Sample((mk((2, 3)), mk((3,))), {'rtol': 0.5, 'atol': 1.0})
    if mk.is_float:
        v = mk.values([1.0, float('nan'), float('inf'), -float('inf')])
        yield db.Sample((v, v.clone()), {'equal_nan': True})
        yield db.Sample((v, v.clone()))


for _name in ('isclose', 'allclose'):
    db.register(db.OpInfo(_name, _close_samples, coverage=COVERAGE, method=True,
                          errors=db._errors(db._err(torch.ones(2), torch.ones(2, dtype=torch.int64)))))
db.register(db.OpInfo('equal', lambda op, mk: (s for s in _close_samples(op, mk) if not s.kwargs),
                      coverage=('0-dim', 'empty', 'noncontig')))


def _diff_samples(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((3, 5)),), layout=layout)
        yield db.Sample((mk((3, 5)),), {'n': 2, 'dim': 0}, layout=layout)
    yield db.Sample((mk((4,)),), {'prepend': mk((2,)), 'append': mk((1,))})
    yield db.Sample((mk((2, 3)),), {'dim': 0, 'prepend': mk((1, 3))})
    yield db.Sample((mk((3,)),), {'n': 5})
    yield db.Sample((mk((0, 3)),))
    yield db.Sample((mk((3,)),), {'n': 0})


db.register(db.OpInfo('diff', _diff_samples, coverage=('empty', 'noncontig'),
                      errors=db._errors(db._err(torch.tensor(1.)), db._err(torch.ones(3), -1))))
