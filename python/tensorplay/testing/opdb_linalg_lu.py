"""Op-database entries: the LU and LDL families (linalg.lu_factor(_ex), linalg.lu, lu_unpack,
linalg.lu_solve, linalg.solve_ex, linalg.ldl_factor(_ex), linalg.ldl_solve) and the legacy
top-level names built on them or on geqrf's reflectors (lu, lu_solve, triangular_solve,
orgqr, ormqr, nuclear_norm, frobenius_norm). Loaded after opdb.py.

Factor-consuming ops (lu_unpack, lu_solve, ldl_solve, orgqr, ormqr) get their factors from
torch's own factorizations, computed in float64 and cast to the dtype under test."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

F32_64 = ('float32', 'float64')
LAPACK_TOL = {'float32': (1e-4, 1e-4), 'float64': (1e-9, 1e-9)}
COVERAGE = ('empty', 'noncontig')
LAYOUTS = ('contiguous', 'transposed', 'strided')


def _matrix(mk, shape, kind='general'):
    """A (batch of) matrix built in float64 and cast to the dtype under test: 'general' adds
    n on the diagonal of square matrices (well conditioned, distinct pivots), 'sym' makes
    symmetric indefinite ones, 'raw' leaves the uniform draws in [-1, 1]."""
    x = mk(shape, dtype='float64', domain=(-1.0, 1.0))
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        n = shape[-1]
        if kind == 'general':
            x = x + n * torch.eye(n, dtype=torch.float64)
        elif kind == 'sym':
            x = x + x.mT + torch.diag(torch.linspace(-n, n, n, dtype=torch.float64))
    return x.to(db.torch_dtype(mk.dtype))


def _lu_factors(mk, shape):
    """(LU, pivots) of a well-conditioned matrix of `shape`, LU in the dtype under test."""
    A = _matrix(mk, shape, 'general' if shape[-1] == shape[-2] else 'raw').double()
    LU, piv, _ = torch.linalg.lu_factor_ex(A)
    return LU.to(db.torch_dtype(mk.dtype)), piv


def _names(*names):
    out = []
    for n in names:
        out += [n, n.replace('.', '_')]
    return tuple(out)


def _linalg(name, samples, dtypes=F32_64, tol=LAPACK_TOL, **kw):
    kw.setdefault('method', False)
    kw.setdefault('message_names', _names(name))
    return db.register(db.OpInfo(name, samples, dtypes, tol=tol, coverage=COVERAGE, **kw))


# ---- LU factorization
def _lu_samples(kwargs_list=({},)):
    def samples(op, mk):
        for kw in kwargs_list:
            for layout in LAYOUTS:
                yield db.Sample((_matrix(mk, (4, 4)),), dict(kw), layout=layout)
                yield db.Sample((_matrix(mk, (2, 3, 3)),), dict(kw), layout=layout)
                yield db.Sample((_matrix(mk, (3, 5), 'raw'),), dict(kw), layout=layout)
                yield db.Sample((_matrix(mk, (5, 3), 'raw'),), dict(kw), layout=layout)
        yield db.Sample((_matrix(mk, (2, 1, 4, 2), 'raw'),))
        yield db.Sample((_matrix(mk, (1, 1)),))
        yield db.Sample((_matrix(mk, (0, 3, 3)),))
        yield db.Sample((_matrix(mk, (0, 0)),))
        yield db.Sample((_matrix(mk, (2, 0, 3), 'raw'),))
        yield db.Sample((_matrix(mk, (3, 0), 'raw'),))
    return samples


_ZERO_PIVOT = db._errors(db._err(torch.zeros(3, 3)),
                         db._err(torch.stack([torch.eye(3), torch.zeros(3, 3)])))
_RANK_ERRORS = db._errors(db._err(torch.ones(3)))
_linalg('linalg.lu_factor', _lu_samples(), out=True, errors=db._errors(_RANK_ERRORS, _ZERO_PIVOT))
_linalg('linalg.lu_factor_ex', _lu_samples(({}, {'check_errors': True})), out=True,
        errors=db._errors(_RANK_ERRORS, db._err(torch.zeros(3, 3), check_errors=True)),
        message_names=_names('linalg.lu_factor_ex', 'linalg.lu_factor'))
_linalg('linalg.lu', _lu_samples(), out=True, errors=_RANK_ERRORS)
# the legacy tp.lu: (LU, pivots), or with infos; never raises for singular matrices
_linalg('lu', _lu_samples(({}, {'get_infos': True})), method=True, errors=_RANK_ERRORS,
        message_names=_names('lu', 'linalg.lu_factor_ex'))


def _unpack_samples(op, mk):
    for layout in LAYOUTS:
        for shape in ((4, 4), (2, 3, 3), (3, 5), (5, 3)):
            yield db.Sample(_lu_factors(mk, shape), layout=layout)
    LU, piv = _lu_factors(mk, (3, 3))
    yield db.Sample((LU, piv, False))
    yield db.Sample((LU, piv), {'unpack_pivots': False})
    yield db.Sample((LU, piv, False, False))
    yield db.Sample((LU.expand(2, 3, 3).clone(), piv))      # one set of pivots for a batch
    yield db.Sample(_lu_factors(mk, (0, 3, 3)))
    yield db.Sample(_lu_factors(mk, (3, 0)))


_linalg('lu_unpack', _unpack_samples, db.ALL_DTYPES, dict(LAPACK_TOL, float16=db.EXACT,
                                                          bfloat16=db.EXACT), out=True,
        errors=db._errors(
            db._err(torch.ones(3), torch.ones(3, dtype=torch.int32)),
            db._err(torch.eye(3), torch.ones(3, dtype=torch.int64)),
            db._err(torch.eye(3), torch.tensor([0, 2, 3], dtype=torch.int32)),
            db._err(torch.eye(3), torch.tensor([4, 2, 3], dtype=torch.int32))))


# ---- solves from the factors
def _lu_solve_samples(op, mk):
    LU, piv = _lu_factors(mk, (3, 3))
    LUb, pivb = _lu_factors(mk, (2, 3, 3))
    B = lambda *s: _matrix(mk, s, 'raw')  # noqa: E731
    for layout in LAYOUTS:
        yield db.Sample((LU, piv, B(3, 2)), layout=layout)
        yield db.Sample((LUb, pivb, B(2, 3, 4)), layout=layout)
        yield db.Sample((LU, piv, B(2, 3)), {'left': False}, layout=layout)
    for left in (True, False):
        for adjoint in (True, False):
            yield db.Sample((LUb, pivb, B(2, 3, 3)), {'left': left, 'adjoint': adjoint})
    yield db.Sample((LU, piv, B(4, 3, 2)))                 # LU broadcast over B's batch
    yield db.Sample((LUb, pivb, B(3, 1)))                  # B broadcast over LU's batch
    yield db.Sample((LUb.unsqueeze(1), pivb.unsqueeze(1), B(2, 4, 3, 2)), {'adjoint': True})
    yield db.Sample((LU, piv, B(3, 0)))
    yield db.Sample(_lu_factors(mk, (0, 3, 3)) + (B(0, 3, 2),))
    yield db.Sample(_lu_factors(mk, (0, 0)) + (B(0, 2),))


_LU, _PIV = torch.linalg.lu_factor(torch.eye(3) * 2)
_linalg('linalg.lu_solve', _lu_solve_samples, out=True, errors=db._errors(
    db._err(_LU, _PIV, torch.ones(3)),
    db._err(_LU, _PIV, torch.ones(4, 2)),
    db._err(_LU, _PIV, torch.ones(2, 4), left=False),
    db._err(_LU, _PIV.long(), torch.ones(3, 2)),
    db._err(_LU, _PIV, torch.ones(3, 2, dtype=torch.float64)),
    db._err(_LU[:2], _PIV, torch.ones(2, 2)),
    db._err(_LU, _PIV[:2], torch.ones(3, 2)),
    db._err(_LU.expand(2, 3, 3), _PIV, torch.ones(2, 3, 2)),
    db._err(_LU.expand(2, 3, 3), _PIV.expand(2, 3), torch.ones(3, 3, 2)),
    db._err(_LU, torch.tensor([0, 1, 2], dtype=torch.int32), torch.ones(3, 2)),
    db._err(_LU, torch.tensor([1, 4, 3], dtype=torch.int32), torch.ones(3, 2))))


def _legacy_lu_solve_samples(op, mk):
    for s in _lu_solve_samples(op, mk):
        if not s.kwargs:
            yield db.Sample((s.args[2], s.args[0], s.args[1]), layout=s.layout)


_linalg('lu_solve', _legacy_lu_solve_samples, method=True, out=True,
        message_names=_names('lu_solve', 'linalg.lu_solve'),
        errors=db._errors(db._err(torch.ones(3), _LU, _PIV), db._err(torch.ones(4, 2), _LU, _PIV)))


def _solve_ex_samples(op, mk):
    A = lambda *s: _matrix(mk, s, 'general')  # noqa: E731
    B = lambda *s: _matrix(mk, s, 'raw')  # noqa: E731
    for layout in LAYOUTS:
        yield db.Sample((A(3, 3), B(3, 2)), layout=layout)
        yield db.Sample((A(2, 3, 3), B(2, 3, 4)), layout=layout)
        yield db.Sample((A(3, 3), B(2, 3)), {'left': False}, layout=layout)
    yield db.Sample((A(3, 3), B(3)))                   # vector right-hand side
    yield db.Sample((A(2, 3, 3), B(2, 3)), {'check_errors': True})
    yield db.Sample((A(3, 3), B(2, 3, 1)))             # A broadcast over B's batch
    yield db.Sample((A(2, 1, 3, 3), B(4, 3, 2)))       # both broadcast
    yield db.Sample((A(2, 3, 3), B(2, 4, 3)), {'left': False})
    yield db.Sample((A(0, 3, 3), B(0, 3, 2)))
    yield db.Sample((A(0, 0), B(0, 2)))
    yield db.Sample((A(3, 3), B(3, 0)))


_linalg('linalg.solve_ex', _solve_ex_samples, out=True,
        message_names=_names('linalg.solve_ex', 'linalg.solve'), errors=db._errors(
            db._err(torch.ones(3, 4), torch.ones(3)),
            db._err(torch.eye(3), torch.ones(4)),
            db._err(torch.eye(3), torch.ones(3), left=False),
            db._err(torch.eye(3), torch.ones(3, dtype=torch.float64)),
            db._err(torch.ones(2, 3, 3), torch.ones(5, 3, 1)),
            db._err(torch.zeros(3, 3), torch.ones(3), check_errors=True,
                    exc=torch.linalg.LinAlgError),
            db._err(torch.zeros(2, 3, 3), torch.ones(2, 3, 1), check_errors=True,
                    exc=torch.linalg.LinAlgError)))


def _triangular_samples(op, mk):
    A = lambda *s: _matrix(mk, s, 'general')  # noqa: E731
    B = lambda *s: _matrix(mk, s, 'raw')  # noqa: E731
    for layout in LAYOUTS:
        yield db.Sample((B(3, 2), A(3, 3)), layout=layout)
        yield db.Sample((B(2, 3, 4), A(2, 3, 3)), {'upper': False}, layout=layout)
    for upper in (True, False):
        for transpose in (True, False):
            for unit in (True, False):
                yield db.Sample((B(2, 3, 2), A(2, 3, 3), upper, transpose, unit))
    yield db.Sample((B(2, 1, 3, 2), A(4, 3, 3)), {'transpose': True})   # batches broadcast
    yield db.Sample((B(3, 0), A(3, 3)))
    yield db.Sample((B(0, 2), A(0, 0)))
    yield db.Sample((B(0, 3, 2), A(3, 3)))


_linalg('triangular_solve', _triangular_samples, method=True, out=True, errors=db._errors(
    db._err(torch.ones(3), torch.eye(3)),
    db._err(torch.ones(3, 2), torch.ones(3)),
    db._err(torch.ones(3, 2), torch.ones(3, 4)),
    db._err(torch.ones(4, 2), torch.eye(3)),
    db._err(torch.ones(3, 2, dtype=torch.float64), torch.eye(3)),
    db._err(torch.ones(2, 3, 2), torch.ones(3, 3, 3))))


# ---- LDL (Bunch-Kaufman: 1x1 and 2x2 pivots)
def _ldl_samples(kwargs_list=({},)):
    def samples(op, mk):
        for kw in kwargs_list:
            for layout in LAYOUTS:
                yield db.Sample((_matrix(mk, (4, 4), 'sym'),), dict(kw), layout=layout)
                yield db.Sample((_matrix(mk, (2, 3, 3), 'sym'),), dict(kw), layout=layout)
        # zero diagonal: 2x2 pivots throughout
        yield db.Sample((torch.tensor([[0., 1, 2], [1, 0, 3], [2, 3, 0]], dtype=db.torch_dtype(mk.dtype)),))
        yield db.Sample((_matrix(mk, (3, 3), 'sym'),), {'hermitian': True})
        yield db.Sample((_matrix(mk, (1, 1), 'sym'),))
        yield db.Sample((_matrix(mk, (0, 3, 3), 'sym'),))
        yield db.Sample((_matrix(mk, (0, 0), 'sym'),))
    return samples


_SQUARE_ERRORS = db._errors(db._err(torch.ones(3)), db._err(torch.ones(3, 4)))
_linalg('linalg.ldl_factor', _ldl_samples(), out=True,
        errors=db._errors(_SQUARE_ERRORS, db._err(torch.zeros(3, 3))))
_linalg('linalg.ldl_factor_ex', _ldl_samples(({}, {'check_errors': True})), out=True,
        errors=db._errors(_SQUARE_ERRORS, db._err(torch.zeros(3, 3), check_errors=True)),
        message_names=_names('linalg.ldl_factor_ex', 'linalg.ldl_factor'))


def _ldl_factors(mk, shape):
    LD, piv, _ = torch.linalg.ldl_factor_ex(_matrix(mk, shape, 'sym').double())
    return LD.to(db.torch_dtype(mk.dtype)), piv


def _ldl_solve_samples(op, mk):
    B = lambda *s: _matrix(mk, s, 'raw')  # noqa: E731
    for layout in LAYOUTS:
        yield db.Sample(_ldl_factors(mk, (3, 3)) + (B(3, 2),), layout=layout)
        yield db.Sample(_ldl_factors(mk, (2, 4, 4)) + (B(2, 4, 3),), layout=layout)
    M = torch.tensor([[0., 1, 2], [1, 0, 3], [2, 3, 0]], dtype=torch.float64)
    LD, piv, _ = torch.linalg.ldl_factor_ex(M)
    yield db.Sample((LD.to(db.torch_dtype(mk.dtype)), piv, B(3, 2)))      # 2x2 pivots
    yield db.Sample(_ldl_factors(mk, (3, 3)) + (B(2, 3, 2),))            # broadcast
    LD, piv = _ldl_factors(mk, (2, 3, 3))
    yield db.Sample((LD, piv.long(), B(3, 1)), {'hermitian': True})
    yield db.Sample(_ldl_factors(mk, (0, 3, 3)) + (B(0, 3, 2),))
    yield db.Sample(_ldl_factors(mk, (3, 3)) + (B(3, 0),))


_linalg('linalg.ldl_solve', _ldl_solve_samples, out=True, errors=db._errors(
    db._err(torch.eye(3), torch.ones(3, dtype=torch.int32), torch.ones(3), exc=IndexError),
    db._err(torch.eye(3), torch.ones(3, dtype=torch.int32), torch.ones(4, 2)),
    db._err(torch.eye(3), torch.ones(2, dtype=torch.int32), torch.ones(3, 2)),
    db._err(torch.eye(3), torch.ones(3), torch.ones(3, 2)),
    db._err(torch.eye(3), torch.ones(3, dtype=torch.int32), torch.ones(3, 2, dtype=torch.float64)),
    db._err(torch.eye(3), torch.zeros(3, dtype=torch.int32), torch.ones(3, 2)),
    db._err(torch.eye(3), torch.tensor([1, 5, 3], dtype=torch.int32), torch.ones(3, 2))))


# ---- Householder products: orgqr (linalg.householder_product) and ormqr
def _geqrf(mk, shape):
    a, tau = torch.geqrf(_matrix(mk, shape, 'raw').double())
    dt = db.torch_dtype(mk.dtype)
    return a.to(dt), tau.to(dt)


def _orgqr_samples(op, mk):
    for layout in LAYOUTS:
        yield db.Sample(_geqrf(mk, (5, 3)), layout=layout)
        yield db.Sample(_geqrf(mk, (2, 4, 4)), layout=layout)
    a, tau = _geqrf(mk, (4, 3))
    yield db.Sample((a, tau[:2]))                            # fewer reflectors than columns
    yield db.Sample(_geqrf(mk, (0, 3, 2)))
    yield db.Sample(_geqrf(mk, (3, 0)))


_linalg('orgqr', _orgqr_samples, method=True, out=True,
        message_names=_names('orgqr', 'linalg.householder_product'), errors=db._errors(
            db._err(torch.ones(3, 5), torch.ones(3)),
            db._err(torch.ones(5, 3), torch.ones(4)),
            db._err(torch.ones(5, 3), torch.ones(2, 3)),
            db._err(torch.ones(5, 3, dtype=torch.float64), torch.ones(3))))


def _ormqr_samples(op, mk):
    C = lambda *s: _matrix(mk, s, 'raw')  # noqa: E731
    for layout in LAYOUTS:
        yield db.Sample(_geqrf(mk, (5, 3)) + (C(5, 2),), layout=layout)
        yield db.Sample(_geqrf(mk, (2, 4, 4)) + (C(2, 4, 3),), layout=layout)
    for left in (True, False):
        for transpose in (True, False):
            c = C(2, 4, 3) if left else C(2, 3, 4)
            yield db.Sample(_geqrf(mk, (2, 4, 2)) + (c,), {'left': left, 'transpose': transpose})
    yield db.Sample(_geqrf(mk, (3, 5)) + (C(3, 2),))         # wide: min(m, n) reflectors
    yield db.Sample(_geqrf(mk, (5, 3)) + (C(2, 5), False, True))
    yield db.Sample(_geqrf(mk, (0, 4, 3)) + (C(0, 4, 2),))
    yield db.Sample(_geqrf(mk, (5, 3)) + (C(5, 0),))


_linalg('ormqr', _ormqr_samples, method=True, out=True, errors=db._errors(
    db._err(torch.ones(3), torch.ones(3), torch.ones(5, 2)),
    db._err(torch.ones(5, 3), torch.ones(3), torch.ones(5)),
    db._err(torch.ones(5, 3), torch.ones(3), torch.ones(4, 2)),
    db._err(torch.ones(5, 3), torch.ones(3), torch.ones(2, 4), left=False),
    db._err(torch.ones(5, 3), torch.ones(2), torch.ones(5, 2)),
    db._err(torch.ones(5, 3), torch.ones(2, 3), torch.ones(5, 2)),
    db._err(torch.ones(2, 5, 3), torch.ones(2, 3), torch.ones(5, 2)),
    db._err(torch.ones(2, 5, 3), torch.ones(3, 3), torch.ones(2, 5, 2)),
    db._err(torch.ones(2, 5, 3), torch.ones(2, 3), torch.ones(3, 5, 2)),
    db._err(torch.ones(5, 3), torch.ones(3, dtype=torch.float64), torch.ones(5, 2)),
    db._err(torch.ones(5, 3), torch.ones(3), torch.ones(5, 2, dtype=torch.float64))))


# ---- norms
def _nuclear_samples(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((_matrix(mk, (3, 4), 'raw'),), layout=layout)
        yield db.Sample((_matrix(mk, (2, 3, 3), 'raw'),), layout=layout)
    yield db.Sample((_matrix(mk, (2, 3, 4), 'raw'), True))
    yield db.Sample((_matrix(mk, (2, 3, 4), 'raw'), (0, 2)))
    yield db.Sample((_matrix(mk, (2, 3, 4), 'raw'),), {'dim': (2, 1), 'keepdim': True})
    yield db.Sample((_matrix(mk, (0, 3, 3), 'raw'),))


_linalg('nuclear_norm', _nuclear_samples, out=True,
        message_names=_names('nuclear_norm', 'linalg.matrix_norm'),
        errors=db._errors(db._err(torch.ones(3)), db._err(torch.ones(3, 3), [0])))


def _frobenius_samples(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((3, 4)), (0, 1)), layout=layout)
        yield db.Sample((mk((2, 3, 4)), (1, 2)), layout=layout)
    yield db.Sample((mk((2, 3, 4)), 1))
    yield db.Sample((mk((2, 3, 4)), [-1]))
    yield db.Sample((mk((2, 3, 4)), (0, 2), True))
    yield db.Sample((mk((2, 3)), []))
    yield db.Sample((mk(()), []))
    yield db.Sample((mk((0, 3)), (0, 1)))


_linalg('frobenius_norm', _frobenius_samples, db.FLOATS,
        dict(db.DEFAULT_TOL, float32=(1e-5, 1e-5)), out=True,
        message_names=_names('frobenius_norm', 'linalg.vector_norm'),
        errors=db._errors(db._err(torch.ones(2, 3, 4), [0, 1, 2]),
                          db._err(torch.ones(2, 3), (1, 1))))
