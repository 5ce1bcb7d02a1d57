"""Op-database entries: tp.linalg decompositions, solvers and the functions built on them
(ops with unique results; qr/svd/eigh are checked by invariants in tests/python/test_linalg.py).
Loaded after opdb.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

F32_64 = ('float32', 'float64')
LAPACK_TOL = {'float32': (1e-4, 1e-4), 'float64': (1e-9, 1e-9), 'complex64': (1e-4, 1e-4),
              'complex128': (1e-9, 1e-9)}
HALF_TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2)}
COVERAGE = ('empty', 'noncontig')
LAYOUTS = ('contiguous', 'transposed', 'strided')
LinAlgError = torch.linalg.LinAlgError


def _matrix(mk, shape, kind='general', domain=(-1.0, 1.0)):
    """A matrix (batch) built in float64, then cast to the dtype under test.
    kind: 'general' (random, diagonally dominated: well conditioned), 'raw' (random),
    'spd' (symmetric positive-definite), 'sym' (symmetric, well separated)."""
    x = mk(shape, dtype='complex128' if mk.is_complex else 'float64', domain=domain)
    n = shape[-1] if shape else 0
    eye = torch.eye(n, dtype=torch.float64) if len(shape) >= 2 and shape[-1] == shape[-2] else None
    if kind == 'general' and eye is not None:
        x = x + n * eye
    elif kind == 'spd':  # Hermitian for complex dtypes (mH is mT for real ones)
        x = x @ x.mH + n * eye
    elif kind == 'sym':
        x = x + x.mH + 2 * torch.diag(torch.arange(n, dtype=torch.float64))
    return x.to(db.torch_dtype(mk.dtype))


def _square_samples(kind='general', kwargs_list=({},)):
    """Square matrices: single, batched, non-contiguous, 0-size batch, 0x0 and 1x1."""
    def samples(op, mk):
        for kw in kwargs_list:
            for layout in LAYOUTS:
                yield db.Sample((_matrix(mk, (4, 4), kind),), dict(kw), layout=layout)
                yield db.Sample((_matrix(mk, (2, 3, 3), kind),), dict(kw), layout=layout)
        yield db.Sample((_matrix(mk, (2, 1, 5, 5), kind),))
        yield db.Sample((_matrix(mk, (1, 1), kind),))
        yield db.Sample((_matrix(mk, (0, 3, 3), kind),))
        yield db.Sample((_matrix(mk, (0, 0), kind),))
        yield db.Sample((_matrix(mk, (2, 0, 0), kind),))
    return samples


def _shape_errors(*extra):
    """Non-square and 1-D inputs raise RuntimeError, as in torch."""
    return db._errors(db._err(torch.ones(3, 4)), db._err(torch.ones(3)), *extra)


def _singular(exc=LinAlgError, **kwargs):
    batch = torch.stack([torch.eye(3), torch.zeros(3, 3)])
    return db._errors(db._err(torch.zeros(3, 3), exc=exc, **kwargs),
                      db._err(batch, exc=exc, **kwargs))


def _names(name):
    # nanobind's TypeError names the op as bound (linalg_det)
    return (name, name.replace('.', '_'))


def _linalg(name, samples, dtypes=F32_64, tol=LAPACK_TOL, **kw):
    kw.setdefault('method', False)
    kw.setdefault('message_names', _names(name))
    return db.register(db.OpInfo(name, samples, dtypes, tol=tol, coverage=COVERAGE, **kw))


# ---- determinants
def _det_samples(op, mk):
    yield from _square_samples('raw')(op, mk)
    yield db.Sample((_matrix(mk, (3, 3), 'general') * 0,))  # singular: 0, (0, -inf)
    yield db.Sample((torch.diag(mk.values([2.0, -1.0, 3.0])),))  # negative determinant


_linalg('linalg.det', _det_samples, out=True, errors=_shape_errors())
_linalg('det', _det_samples, method=True, errors=_shape_errors())
_linalg('linalg.slogdet', _det_samples, errors=_shape_errors())
_linalg('slogdet', _det_samples, method=True, errors=_shape_errors())
_linalg('logdet', _det_samples, method=True, errors=_shape_errors())

# ---- inverse and solve
_linalg('linalg.inv', _square_samples(), out=True, errors=_shape_errors(_singular()))
_linalg('linalg.inv_ex', _square_samples(kwargs_list=({}, {'check_errors': True})),
        errors=_shape_errors(_singular(check_errors=True)), message_names=_names('linalg.inv') + _names('linalg.inv_ex'))
_linalg('inverse', _square_samples(), method=True, out=True, errors=_shape_errors(_singular()))


def _solve_samples(op, mk):
    A = lambda *s: _matrix(mk, s, 'general')
    B = lambda *s: _matrix(mk, s, 'raw')
    for layout in LAYOUTS:
        yield db.Sample((A(3, 3), B(3, 2)), layout=layout)
        yield db.Sample((A(2, 3, 3), B(2, 3, 4)), layout=layout)
        yield db.Sample((A(3, 3), B(2, 3)), {'left': False}, layout=layout)
    yield db.Sample((A(3, 3), B(3)))                   # vector right-hand side
    yield db.Sample((A(2, 3, 3), B(2, 3)))             # batch of vectors
    yield db.Sample((A(3, 3), B(2, 3, 1)))             # A broadcast over B's batch
    yield db.Sample((A(2, 1, 3, 3), B(4, 3, 2)))       # both broadcast
    yield db.Sample((A(2, 3, 3), B(2, 4, 3)), {'left': False})
    yield db.Sample((A(0, 3, 3), B(0, 3, 2)))
    yield db.Sample((A(0, 0), B(0, 2)))
    yield db.Sample((A(3, 3), B(3, 0)))


_linalg('linalg.solve', _solve_samples, out=True, errors=db._errors(
    db._err(torch.ones(3, 4), torch.ones(3)),
    db._err(torch.eye(3), torch.ones(4)),
    db._err(torch.eye(3), torch.ones(3, 2), left=False),
    db._err(torch.eye(3), torch.ones(3, dtype=torch.float64)),
    db._err(torch.ones(2, 3, 3), torch.ones(5, 3, 1)),
    db._err(torch.zeros(3, 3), torch.ones(3), exc=LinAlgError),
    db._err(torch.zeros(2, 3, 3), torch.ones(2, 3, 1), exc=LinAlgError)))

# ---- Cholesky (non-symmetric inputs too: only the triangle named by `upper` is read)
def _cholesky_samples(legacy):
    def samples(op, mk):
        kws = ({}, {'upper': True}) if not legacy else ((), (True,))
        for kw in kws:
            args, kwargs = (kw, {}) if legacy else ((), kw)
            for layout in LAYOUTS:
                yield db.Sample((_matrix(mk, (4, 4), 'spd'),) + args, kwargs, layout=layout)
                yield db.Sample((_matrix(mk, (2, 3, 3), 'spd'),) + args, kwargs, layout=layout)
            yield db.Sample((_matrix(mk, (3, 3), 'general', domain=(0, 0.5)),) + args, kwargs)
        yield db.Sample((_matrix(mk, (0, 3, 3), 'spd'),))
        yield db.Sample((_matrix(mk, (0, 0), 'spd'),))
    return samples


_NOT_PD = db._errors(db._err(-torch.eye(3), exc=LinAlgError),
                     db._err(torch.stack([torch.eye(3), -torch.eye(3)]), exc=LinAlgError))
_linalg('linalg.cholesky', _cholesky_samples(False), out=True, errors=_shape_errors(_NOT_PD))
_linalg('linalg.cholesky_ex', _cholesky_samples(False),
        errors=_shape_errors(db._err(-torch.eye(3), exc=LinAlgError, check_errors=True)),
        message_names=_names('linalg.cholesky') + _names('linalg.cholesky_ex'))
_linalg('cholesky', _cholesky_samples(True), method=True, out=True, errors=_shape_errors(_NOT_PD))


# ---- singular values, symmetric eigenvalues
def _rect_samples(op, mk):
    for layout in LAYOUTS:
        for shape in ((3, 5), (5, 3), (2, 4, 4)):
            yield db.Sample((_matrix(mk, shape, 'raw'),), layout=layout)
    for shape in ((1, 1), (0, 3), (3, 0), (0, 2, 2), (2, 1, 4, 3)):
        yield db.Sample((_matrix(mk, shape, 'raw'),))


_linalg('linalg.svdvals', _rect_samples, out=True, errors=db._errors(
    db._err(torch.ones(3)), db._err(torch.ones(3, 3), driver='gesvd')))
def _eigvalsh_samples(op, mk):
    yield from _square_samples('sym', ({}, {'UPLO': 'U'}))(op, mk)
    # UPLO picks the triangle read, so non-symmetric input has a unique answer too
    for uplo in ('L', 'U'):
        yield db.Sample((_matrix(mk, (4, 4), 'raw'), uplo))
        yield db.Sample((_matrix(mk, (2, 3, 3), 'raw'),), {'UPLO': uplo}, layout='transposed')


_linalg('linalg.eigvalsh', _eigvalsh_samples, out=True,
        errors=_shape_errors(db._err(torch.eye(3), UPLO='X')))


# ---- general eigenproblem (geev): complex results for real input too. Eigenvalues come
# in LAPACK's order, which torch's LAPACK shares on these samples; eigenvectors are unique
# only up to a phase each, so eig's values are checked by invariants (test_linalg.py) and
# its gradients through |V| (test_autograd_ops.py).

def _eig_samples(op, mk):
    yield from _square_samples('raw')(op, mk)
    yield db.Sample((torch.diag(mk.values([3.0, -1.0, 2.0])),))       # real, distinct
    yield db.Sample((mk.values([[0.0, -2.0], [2.0, 0.0]]),))          # a conjugate pair +-2i


def _eig_errors(name):
    errs = [db._err(torch.ones(3, 4)), db._err(torch.ones(3)),
            db._err(torch.ones(3, 3, dtype=torch.int64))]
    if name == 'linalg.eig':  # torch 2.13's eigvals crashes on non-finite input (MKL geev)
        errs.append(db._err(torch.tensor([[1.0, float('nan')], [0.0, 1.0]])))
    return db._errors(*errs)


_linalg('linalg.eigvals', _eig_samples, out=True, errors=_eig_errors('linalg.eigvals'))
_linalg('linalg.eig', _eig_samples, out=True, compare_values=False,
        errors=_eig_errors('linalg.eig'))


# ---- least squares: full-rank systems (gelsy's solution is then unique)
def _lstsq_samples(op, mk):
    A = lambda *s: _matrix(mk, s, 'raw')
    for layout in LAYOUTS:
        yield db.Sample((A(5, 3), A(5, 2)), layout=layout)
        yield db.Sample((A(2, 4, 3), A(2, 4, 2)), layout=layout)
    yield db.Sample((_matrix(mk, (3, 3), 'general'), A(3, 2)))
    yield db.Sample((A(5, 3), A(5)))                      # vector right-hand side
    yield db.Sample((A(1, 4, 3), A(2, 4, 1)))             # broadcast batch
    yield db.Sample((A(3, 5), A(3, 2)))                   # underdetermined: minimum norm
    for driver in ('gels', 'gelsy', 'gelsd', 'gelss'):
        yield db.Sample((A(6, 3), A(6, 2)), {'driver': driver})
    yield db.Sample((A(5, 3), A(5, 2), 1e-3))
    yield db.Sample((A(0, 5, 3), A(0, 5, 2)))
    yield db.Sample((A(2, 0, 3), A(2, 0, 2)))


_linalg('linalg.lstsq', _lstsq_samples, errors=db._errors(
    db._err(torch.ones(3, 3), torch.ones(4, 3)),
    db._err(torch.ones(4, 3), torch.ones(2, 4, 1)),
    db._err(torch.ones(3), torch.ones(3)),
    db._err(torch.ones(3, 3), torch.ones(3, 3, dtype=torch.float64)),
    db._err(torch.ones(3, 3), torch.ones(3, 3), driver='foo')))


# ---- pseudo-inverse and rank
def _pinv_samples(legacy):
    def samples(op, mk):
        for layout in LAYOUTS:
            for shape in ((3, 5), (5, 3), (2, 4, 4)):
                yield db.Sample((_matrix(mk, shape, 'raw'),), layout=layout)
        yield db.Sample((_matrix(mk, (0, 3), 'raw'),))
        yield db.Sample((_matrix(mk, (2, 0, 0), 'raw'),))
        yield db.Sample((_matrix(mk, (4, 4), 'raw') * 0,))
        if legacy:
            yield db.Sample((_matrix(mk, (4, 3), 'raw'), 0.9))
            return
        # tolerances that keep/cut singular values 1, 2, 3 (ranks away from the cut)
        d = torch.diag(mk.values([3.0, 2.0, 1.0, 1e-3]))
        yield db.Sample((d,), {'atol': 1.5})
        yield db.Sample((d,), {'rtol': 0.5})
        yield db.Sample((d,), {'atol': 0.1, 'rtol': 0.5})
        yield db.Sample((d, 0.1))
        # tensor tolerances broadcast with the batch (and may widen it); real for complex A
        tols = lambda v: torch.tensor(v, dtype=db.torch_dtype(mk.dtype).to_real())
        yield db.Sample((d,), {'atol': tols([0.5, 1.5, 2.5]), 'rtol': tols(0.0)})
        yield db.Sample((torch.stack([d, 2 * d]),), {'rtol': tols([[0.4], [0.2]])})
        yield db.Sample((_matrix(mk, (4, 4), 'sym'),), {'hermitian': True})
        yield db.Sample((_matrix(mk, (2, 3, 3), 'sym'),), {'hermitian': True}, layout='transposed')
        yield db.Sample((torch.diag(mk.values([-3.0, 2.0, -1.0, 1e-3])),),
                        {'hermitian': True, 'atol': 1.5})
    return samples


_COMPLEX_TOL = db._errors(db._err(torch.eye(3), atol=torch.tensor(1.0, dtype=torch.complex64)),
                         db._err(torch.eye(3, dtype=torch.complex64), rtol=torch.tensor(1j)))
_linalg('linalg.pinv', _pinv_samples(False), out=True,
        errors=db._errors(db._err(torch.ones(3)), db._err(torch.ones(3, 4), hermitian=True), _COMPLEX_TOL))
_linalg('pinverse', _pinv_samples(True), method=True, errors=db._errors(db._err(torch.ones(3))))


def _rank_samples(op, mk):
    yield from _pinv_samples(False)(op, mk)
    low = _matrix(mk, (5, 2), 'raw', domain=(1, 2))  # rank 2 by construction
    deficient = (low.double() @ low.double().mT).to(low.dtype) if mk.dtype == 'float64' \
        else torch.diag(mk.values([1.0, 0.0, 2.0]))
    yield db.Sample((deficient,))


_linalg('linalg.matrix_rank', _rank_samples, out=True, errors=db._errors(db._err(torch.ones(3)), _COMPLEX_TOL))


# ---- matrix_power: any dtype but bool for n >= 2; negative n inverts (float32/64)
def _power_samples(op, mk):
    ints = not mk.is_float
    mat = lambda *s: (mk(s, int_domain=(-2, 2)) if ints else _matrix(mk, s, 'raw'))
    powers = (0, 1, 2, 3, 6) + (() if ints or mk.dtype in db.HALF_DTYPES else (-1, -3))
    for n in powers:
        yield db.Sample((mat(3, 3), n))
        yield db.Sample((mat(2, 4, 4), n), layout='transposed')
    yield db.Sample((mat(3, 3), 2), layout='strided')
    yield db.Sample((mat(0, 3, 3), 2))
    yield db.Sample((mat(0, 0), 3))
    yield db.Sample((mat(2, 0, 0), 0))


_POWER_TOL = dict(LAPACK_TOL, **HALF_TOL)
_POWER_ERRORS = db._errors(db._err(torch.ones(3, 4), 2), db._err(torch.ones(3), 2),
                           db._err(torch.zeros(3, 3), -1, exc=LinAlgError))
_linalg('linalg.matrix_power', _power_samples, db.NO_BOOL, _POWER_TOL, out=True,
        errors=_POWER_ERRORS)
_linalg('matrix_power', _power_samples, db.NO_BOOL, _POWER_TOL, method=True, out=True,
        errors=_POWER_ERRORS)


# ---- matrix_exp: small norms (low Padé degrees) and large ones (scaling and squaring)
def _exp_samples(op, mk):
    if mk.dtype in db.HALF_DTYPES:
        # torch evaluates the polynomial in float16/bfloat16 and overflows to inf/nan for
        # n > 1; ours computes in float64 (test_linalg.py checks it against float32).
        yield db.Sample((_matrix(mk, (1, 1), 'raw'),))
        yield db.Sample((_matrix(mk, (2, 1, 1), 'raw'),), layout='transposed')
        yield db.Sample((_matrix(mk, (0, 3, 3), 'raw'),))
        return
    for layout in LAYOUTS:
        yield db.Sample((_matrix(mk, (3, 3), 'raw', domain=(-0.01, 0.01)),), layout=layout)
        yield db.Sample((_matrix(mk, (2, 4, 4), 'raw', domain=(-0.3, 0.3)),), layout=layout)
    yield db.Sample((_matrix(mk, (4, 4), 'raw', domain=(-1, 1)),))
    yield db.Sample((_matrix(mk, (5, 5), 'raw', domain=(-2, 2)),))
    yield db.Sample((_matrix(mk, (3, 3), 'raw', domain=(-4, 4)),))
    yield db.Sample((_matrix(mk, (0, 3, 3), 'raw'),))
    yield db.Sample((_matrix(mk, (0, 0), 'raw'),))
    yield db.Sample((_matrix(mk, (1, 1), 'raw'),))


_EXP_TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2), 'float32': (1e-4, 1e-4),
            'float64': (1e-9, 1e-9)}
_EXP_ERRORS = db._errors(db._err(torch.ones(3, 4)), db._err(torch.ones(3)))
_linalg('linalg.matrix_exp', _exp_samples, db.FLOATS, _EXP_TOL, errors=_EXP_ERRORS)
_linalg('matrix_exp', _exp_samples, db.FLOATS, _EXP_TOL, method=True, errors=_EXP_ERRORS)
