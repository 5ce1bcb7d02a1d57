"""Op-database entries: special functions and their companions (csrc/ops/special.yaml):
the gamma family, Bessel functions, the normal distribution's functions, Hurwitz zeta, the
incomplete gamma ratios, gcd/lcm, frexp/ldexp, nextafter, float_power, heaviside, signbit.
Loaded after opdb.py, whose registry it extends."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

NAN, INF = float('nan'), float('inf')
NO_HALF = tuple(d for d in db.ALL_DTYPES if d not in db.HALF_DTYPES)  # PyTorch has no half kernel
FLOAT32_64 = ('float32', 'float64')
# float32: PyTorch evaluates these in float arithmetic, ours in double rounded to float
SPECIAL_TOL = {'float16': (2e-3, 1e-3), 'bfloat16': (1.6e-2, 1e-2), 'float32': (2e-5, 1e-5),
               'float64': (1e-7, 1e-7)}

# ------------------------------------------------------------------ gamma family
db.unary('lgamma', domain=(-5, 10), extras=(-1, -2, -2.5, 1, 2, 1e-5, 100, 1e300), tol=SPECIAL_TOL)
# away from the poles (float32 near a negative integer is ill-conditioned in both libraries)
db.unary('digamma', domain=(0.05, 10), extras=(-1, -2.5, -0.5, 1, 1e-5, 100, 1e10), tol=SPECIAL_TOL)


def _polygamma_samples(op, mk):
    for n in (0, 1, 2, 3):
        for s in db.pointwise_samples(mk, 1, [dict(domain=(0.2, 6), int_domain=(1, 9))]):
            if n == 0 or s.layout == 'contiguous':
                yield db.Sample((n,) + s.args, layout=s.layout)
        if mk.is_float:
            yield db.Sample((n, mk.values(db.SPECIAL + [1.0, -1.5, -2.0, 0.5, 30.0])))
    yield db.Sample((5, mk((3, 4), domain=(0.5, 4), int_domain=(1, 5))))


def _polygamma_errors(op):
    yield db.ErrorInput((-1, torch.ones(3)), {}, RuntimeError, 'negative n')


db.register(db.OpInfo('polygamma', _polygamma_samples, self_arg=1, inplace=True, out=True, tol=SPECIAL_TOL,
                      errors=_polygamma_errors, coverage=db.POINTWISE_COVERAGE))


def _mvlgamma_samples(op, mk):
    for p in (1, 2, 3, 5):
        lo = (p - 1) / 2 + 0.1
        for s in db.pointwise_samples(mk, 1, [dict(domain=(lo, lo + 5), int_domain=(p, p + 6))]):
            if p == 2 or s.layout == 'contiguous':
                yield db.Sample(s.args + (p,), layout=s.layout)


db.register(db.OpInfo('mvlgamma', _mvlgamma_samples, db.NO_BOOL, inplace=True, out=True, tol=SPECIAL_TOL,
                      errors=db._err(torch.ones(3) * 4, 0, match='p has to be'),
                      coverage=db.POINTWISE_COVERAGE))

for _name in ('igamma', 'igammac'):
    db.binary(_name, db.FLOATS, lhs=dict(domain=(0.1, 8)), rhs=dict(domain=(0.05, 12)), scalars=(),
              partner=db._same_kind_float_partner, tol=SPECIAL_TOL,
              extra=lambda mk: [db.Sample((mk.values([0.5, 3.0, 30.0, 200.0, 1e-3]),
                                           mk.values([0.2, 40.0, 25.0, 210.0, 1e-4])))])
db.binary('special.zeta', NO_HALF, lhs=dict(domain=(1.1, 6), int_domain=(2, 6)),
          rhs=dict(domain=(0.1, 5), int_domain=(1, 5)), scalars=(2, 3.5), scalar_self=(2, 2.5),
          method=False, inplace=False, tol=SPECIAL_TOL, message_names=('zeta', 'special_zeta'),
          errors=db._err(torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float16),
                         exc=NotImplementedError))

# ------------------------------------------------------------------ error function family
_special = dict(method=False, inplace=False, tol=SPECIAL_TOL)
_no_half_error = lambda name: db._err(torch.ones(2, dtype=torch.bfloat16), exc=NotImplementedError)
db.unary('special.erfcx', NO_HALF, domain=(-5, 12), extras=(-26, -27, 30, 1e10, -1e-10), errors=_no_half_error('erfcx'),
         message_names=('erfcx', 'special_erfcx'), **_special)
db.unary('special.ndtr', domain=(-6, 6), extras=(-10, 10, 1e-5), message_names=('ndtr', 'special_ndtr'), **_special)
db.unary('special.ndtri', NO_HALF, domain=(0.01, 0.99), extras=(1, 0.5, 1e-300, 1 - 1e-12, 1.5, -0.5),
         errors=_no_half_error('ndtri'), message_names=('ndtri', 'special_ndtri'), **_special)
db.unary('special.log_ndtr', NO_HALF, domain=(-10, 6), extras=(-40, 10, 40, -1, 1e-10),
         errors=_no_half_error('log_ndtr'), message_names=('log_ndtr', 'special_log_ndtr'), **_special)

# ------------------------------------------------------------------ Bessel functions
db.unary('i0', domain=(-10, 10), extras=(30, -30, 100, 700), tol=SPECIAL_TOL)
for _name in ('i0e', 'i1', 'i1e'):
    db.unary('special.' + _name, domain=(-10, 10), extras=(30, -30, 100, 700, 1e-10),
             message_names=(_name, 'special_' + _name), **_special)
# PyTorch's j0/j1 are off by up to ~4e-7 (absolute) just above |x| = 5, where its
# approximation switches (ours: ~1e-15 against mpmath): a looser float64 tolerance
_BESSEL_J_TOL = dict(SPECIAL_TOL, float64=(1e-6, 5e-7))
for _name in ('bessel_j0', 'bessel_j1'):
    db.unary('special.' + _name, NO_HALF, domain=(-30, 30), extras=(2.404825557695773, 3.8317, 100, 1e-10),
             errors=_no_half_error(_name), message_names=(_name, 'special_' + _name), method=False,
             inplace=False, tol=_BESSEL_J_TOL)

# PyTorch's second series (Cephes' methods, float32 evaluated in float): its y0/y1 are off by
# up to ~1e-6 (absolute) just above x = 5 and its airy_ai by ~1e-6 near x = -2.4, where ours
# are within ~1e-15 of mpmath (tests/python/test_special_polynomials.py)
_BESSEL_Y_TOL = dict(SPECIAL_TOL, float64=(3e-6, 3e-6))
for _name, _dom, _extras, _tol in [
        ('airy_ai', (-10, 5), (-30, 30, 103, 104, 1e-10, -2.3786802679605117), _BESSEL_Y_TOL),
        ('bessel_y0', (0.1, 30), (0.8935769662791675, 3.9576784193148578, 100, 1e-10, -1, 1e4), _BESSEL_Y_TOL),
        ('bessel_y1', (0.1, 30), (2.197141326031017, 5.4296810407941351, 100, 1e-10, -1, 1e4), _BESSEL_Y_TOL),
        ('modified_bessel_i0', (-10, 10), (30, -30, 100, 700, 1e-10), SPECIAL_TOL),
        ('modified_bessel_i1', (-10, 10), (30, -30, 100, 700, 1e-10), SPECIAL_TOL),
        ('modified_bessel_k0', (0.05, 20), (1e-10, 1, 2, 100, 700, -1), SPECIAL_TOL),
        ('modified_bessel_k1', (0.05, 20), (1e-10, 1, 2, 100, 700, -1), SPECIAL_TOL),
        ('scaled_modified_bessel_k0', (0.05, 50), (1e-10, 1, 2, 1000, 1e10, -1), SPECIAL_TOL),
        ('scaled_modified_bessel_k1', (0.05, 50), (1e-10, 1, 2, 1000, 1e10, -1), SPECIAL_TOL),
        ('spherical_bessel_j0', (-20, 20), (1e-10, 0.49, 0.5, 100, 1e4), SPECIAL_TOL)]:
    db.unary('special.' + _name, NO_HALF, domain=_dom, extras=_extras, errors=_no_half_error(_name),
             message_names=(_name, 'special_' + _name), method=False, inplace=False, tol=_tol)

# ------------------------------------------------------------------ orthogonal polynomials
# p_n(x) with n a tensor or number (truncated to an integer). Values on domains where neither
# library's float32 recurrence loses much to cancellation; PyTorch returns uninitialised values
# for NaN x at degrees >= 2 in most kinds (Note [Orthogonal polynomial kernels]), so NaN x meets only
# degrees below 2 and NaN n here.
POLY_TOL = {'float32': (1e-4, 1e-4), 'float64': (1e-9, 1e-9)}
_POLY_X = [INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5, 0.5, -0.5]
_POLY_N = [NAN, INF, -INF, -1.0, -0.5, 0.0, 1.0, 2.0, 2.5, 3.0, 9.0, 10.0, 1e30]


def _poly_extra(mk):
    if not mk.is_float:
        return []
    return [db.Sample((mk.values(_POLY_X).reshape(-1, 1), mk.values(_POLY_N).reshape(1, -1))),
            db.Sample((mk.values([NAN]), mk.values([NAN, -1.0, 0.0, 0.5, 1.0]))),
            db.Sample((mk((3, 4), domain=(-1, 1)), mk.values([12.0, 20.0, 30.0, 7.0]))),
            db.Sample((2.5, mk.values([0.0, 1.0, 4.0, 7.0])))]


for _name, _x in [('chebyshev_polynomial_t', (-1.2, 1.2)), ('chebyshev_polynomial_u', (-1.2, 1.2)),
                  ('chebyshev_polynomial_v', (-1.2, 1.2)), ('chebyshev_polynomial_w', (-1.2, 1.2)),
                  ('shifted_chebyshev_polynomial_t', (-0.1, 1.1)), ('shifted_chebyshev_polynomial_u', (-0.1, 1.1)),
                  ('shifted_chebyshev_polynomial_v', (-0.1, 1.1)), ('shifted_chebyshev_polynomial_w', (-0.1, 1.1)),
                  ('hermite_polynomial_h', (-2, 2)), ('hermite_polynomial_he', (-2, 2)),
                  ('laguerre_polynomial_l', (-2, 6)), ('legendre_polynomial_p', (-1.2, 1.2))]:
    db.binary('special.' + _name, NO_HALF, lhs=dict(domain=_x, int_domain=(-2, 3)),
              rhs=dict(domain=(-1, 9), int_domain=(-1, 8)), scalars=(3, 2.5, 0), scalar_self=(0.5, 2),
              grid=False, extra=_poly_extra, method=False, inplace=False, tol=POLY_TOL,
              message_names=(_name, 'special_' + _name),
              errors=db._err(torch.ones(2, dtype=torch.float16), 2, exc=NotImplementedError))

# ------------------------------------------------------------------ others
db.unary('special.entr', domain=(0.01, 5), extras=(1, -1, 1e-30), message_names=('entr', 'special_entr'),
         **_special)
db.binary('special.xlog1py', rhs=dict(domain=(-0.9, 5)), scalar_self=(2, 0.5), method=False, inplace=False,
          tol=SPECIAL_TOL, message_names=('xlog1py', 'special_xlog1py'),
          extra=lambda mk: [db.Sample((mk.values([0.0, 0.0, 2.0, 0.0]), mk.values([-1.0, -2.0, -1.0, NAN])))]
          if mk.is_float else [])
db.unary('sinc', domain=(-3, 3), extras=(1, -1, 0.5, 1e-10, 100.5), tol=SPECIAL_TOL)
for _name in ('gcd', 'lcm'):
    db.binary(_name, db.INTS, lhs=dict(int_domain=(-20, 20)), rhs=dict(int_domain=(-12, 12)), scalars=(),
              partner=db._int_partner,
              errors=db._err(torch.ones(2), torch.ones(2), exc=NotImplementedError))


def _frexp_samples(op, mk):
    yield from db.pointwise_samples(mk, 1, [dict(domain=(-100, 100))])
    yield db.Sample((mk.values(db.SPECIAL + [1.0, 0.5, 3.0, -1e-30, 1e30, 6e-5]),))


db.register(db.OpInfo('frexp', _frexp_samples, db.FLOATS, out=True, tol=db.EXACT_TOL,
                      coverage=db.POINTWISE_COVERAGE,
                      errors=db._err(torch.ones(2, dtype=torch.int64), match='floating-point')))
# a floating input with an integer exponent takes PyTorch's ldexp kernel (self's dtype; a
# bool exponent raises there); other pairs its composition input * 2 ** other. Its integer
# exponents stay >= 0 here: PyTorch's gradient for that kernel computes 2 ** other in integer
# arithmetic (0 for negative exponents); ours is the true 2 ** other.
db.binary('ldexp', lhs=dict(domain=(-4, 4)), rhs=dict(domain=(-6, 6), int_domain=(-6, 6)), scalars=(),
          partner=lambda dt: 'int64' if dt == 'bool' else db._float_partner(dt),
          extra=lambda mk: [db.Sample((mk((3, 4)), mk((3, 4), dtype='int32', int_domain=(0, 30))))],
          errors=db._err(torch.ones(2), torch.ones(2, dtype=torch.bool), exc=NotImplementedError))
db.binary('nextafter', db.FLOATS, scalars=(), partner=db._same_kind_float_partner, tol=db.EXACT_TOL,
          extra=lambda mk: [db.Sample((mk.values([0.0, -0.0, 1.0, 65504.0, 1e-7, 2.0, 2.0]),
                                       mk.values([-1.0, 1.0, 2.0, INF, 0.0, 0.0, 3.0])))])
db.binary('float_power', lhs=dict(domain=(0.1, 4), int_domain=(0, 5)), rhs=dict(domain=(-3, 3), int_domain=(0, 3)),
          scalars=(2, 0.5, -1.5), scalar_self=(2, 2.5),
          errors=db._err(torch.ones(2), 2.0, form='inplace'))
db.binary('heaviside', partner=None, scalars=(),
          errors=db._err(torch.ones(2), torch.ones(2, dtype=torch.float64), match='different dtypes'))
db.unary('signbit', inplace=False, extras=(-1e-30, 1e-30))

# ------------------------------------------------------------------ reparameterised gradients
# Ours are exact; PyTorch's are fitted approximations (relative error up to ~1e-3 on these
# domains): Note [Exact reparameterised gradients]. Neither is differentiable (both raise).
GRAD_APPROX_TOL = {'float32': (3e-3, 1e-5), 'float64': (3e-3, 1e-9)}


def _gamma_grad_samples(op, mk):
    for shape, layout in [((3, 4), 'contiguous'), ((), 'contiguous'), ((0,), 'contiguous'),
                          ((4, 3), 'transposed'), ((3, 4), 'strided')]:
        a = mk(shape, domain=(0.2, 8))
        yield db.Sample((a, a * mk(shape, domain=(0.3, 3))), layout=layout)
    yield db.Sample((mk((3, 1), domain=(0.5, 4)), mk((1, 4), domain=(0.5, 4))))  # broadcast


def _dirichlet_grad_samples(op, mk):
    for shape, layout in [((3, 4), 'contiguous'), ((), 'contiguous'), ((0,), 'contiguous'),
                          ((4, 3), 'transposed'), ((3, 4), 'strided')]:
        a = mk(shape, domain=(0.2, 6))
        yield db.Sample((mk(shape, domain=(0.05, 0.95)), a, a + mk(shape, domain=(0.5, 5))), layout=layout)
    yield db.Sample((mk((3, 4), domain=(0.05, 0.95)), mk((4,), domain=(0.5, 2)), mk((), domain=(3, 5))))


db.register(db.OpInfo('_standard_gamma_grad', _gamma_grad_samples, FLOAT32_64, method=False,
                      tol=GRAD_APPROX_TOL, coverage=db.POINTWISE_COVERAGE + ('broadcast',),
                      errors=db._err(torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float16),
                                     exc=NotImplementedError)))
db.register(db.OpInfo('_dirichlet_grad', _dirichlet_grad_samples, FLOAT32_64, method=False,
                      tol=GRAD_APPROX_TOL, coverage=db.POINTWISE_COVERAGE + ('broadcast',)))
