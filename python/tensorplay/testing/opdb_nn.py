"""Op-database entries: the nn kernels (csrc/ops/nn_conv.yaml, nn_pool.yaml, nn_norm.yaml,
nn_activation.yaml, nn_attention.yaml): convolutions, pooling, softmax, the normalisation
layers, the fused activations and attention. Loaded after opdb.py.

Each op's first sample is tiny (at most 24 input elements) so the gradient suites also run
gradcheck and gradgradcheck on it. An op's dtypes are those for which PyTorch accepts every
sample; the others are checked to fail (or succeed) as they do in PyTorch."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

NAN, INF = float('nan'), float('inf')
HALF_TOL = {'float16': (1e-2, 1e-2), 'bfloat16': (5e-2, 5e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)}


def _register(name, samples, fn=None, errors=None, tol=None, method=False, coverage=('noncontig',),
              message_names=()):
    """Registers `name` with the dtypes torch accepts for all of its samples. PyTorch keeps
    some of these ops in torch._C._nn only (avg_pool2d, ...), while tensorplay exports them as
    tp.<name>; the reference is then made reachable as torch.<name> for the harness."""
    if '.' not in name and not hasattr(torch, name):
        setattr(torch, name, getattr(torch._C._nn, name))
    fn = fn or getattr(torch, name)
    dtypes = []
    for dt in db.ALL_DTYPES:
        try:
            for s in samples(None, db.Maker(dt, 0)):
                args, kwargs = db.materialize(s, torch)
                fn(*args, **kwargs)
            dtypes.append(dt)
        except Exception:  # noqa: BLE001 - any failure leaves the dtype out
            pass
    assert dtypes, f'{name}: torch rejects a sample in every dtype'
    db.register(db.OpInfo(name, samples, tuple(dtypes), method=method, tol=tol or HALF_TOL,
                          errors=errors, coverage=coverage, message_names=message_names))


def _w(mk, shape):
    return mk(shape, domain=(-1, 1), int_domain=(-2, 2))


# ---------------------------------------------------------------- convolutions
def _conv_samples(nsp):
    def samples(op, mk):
        sp = lambda n: (n,) * nsp
        small_k = sp(2) if nsp < 3 else (1, 1, 2)  # at most 24 elements: gradcheck runs on it
        yield db.Sample((_w(mk, (1, 2) + sp(3 if nsp < 2 else 2)), _w(mk, (2, 1) + small_k), _w(mk, (2,))),
                        {'groups': 2})
        x = _w(mk, (2, 4) + sp(7 if nsp < 3 else 5))
        yield db.Sample((x, _w(mk, (6, 4) + sp(3)), _w(mk, (6,))))
        yield db.Sample((x, _w(mk, (6, 4) + sp(3))), {'stride': 2, 'padding': 1, 'dilation': 1})
        yield db.Sample((x, _w(mk, (6, 2) + sp(2))), {'stride': 1, 'padding': 2, 'dilation': 2, 'groups': 2})
        yield db.Sample((x, _w(mk, (4, 1) + sp(3)), _w(mk, (4,))), {'padding': 1, 'groups': 4})  # depthwise
        yield db.Sample((x, _w(mk, (8, 1) + sp(3))), {'stride': 2, 'groups': 4})  # channel multiplier 2
        yield db.Sample((x, _w(mk, (4, 1) + sp(2))), {'padding': 1, 'dilation': 2, 'groups': 4})
        yield db.Sample((x, _w(mk, (4, 1) + sp(3))), {'stride': 2, 'padding': 1, 'groups': 4})
        yield db.Sample((x, _w(mk, (4, 1) + sp(2))), {'padding': 3, 'groups': 4})  # padding past the kernel
        yield db.Sample((x, _w(mk, (5, 4) + sp(1)), _w(mk, (5,))))  # 1x1
        yield db.Sample((x, _w(mk, (6, 4) + sp(3))), {'padding': 'same'})
        yield db.Sample((x, _w(mk, (6, 4) + sp(2))), {'padding': 'same', 'dilation': 1})
        yield db.Sample((x, _w(mk, (6, 4) + sp(3))), {'padding': 'valid'})
        yield db.Sample((x[0], _w(mk, (3, 4) + sp(3))), {'padding': 1})  # unbatched
        yield db.Sample((_w(mk, (2, 4) + sp(5)), _w(mk, (3, 4) + sp(2))), layout='strided')
        if nsp == 2:  # Winograd F(4x4, 3x3): 16+ channels, 3x3, stride 1 (odd sizes, paddings 0-2)
            x16 = _w(mk, (2, 16, 9, 7))
            yield db.Sample((x16, _w(mk, (16, 16, 3, 3)), _w(mk, (16,))), {'padding': 1})
            yield db.Sample((x16, _w(mk, (20, 16, 3, 3))))
            yield db.Sample((_w(mk, (1, 17, 5, 6)), _w(mk, (16, 17, 3, 3))), {'padding': 2})
            yield db.Sample((x16, _w(mk, (16, 16, 3, 3))), {'padding': 'same'})
    return samples


def _conv_errors(nsp):
    sp = lambda n: (n,) * nsp
    x, w = torch.ones((1, 2) + sp(4)), torch.ones((3, 2) + sp(3))
    return db._errors(
        db._err(torch.ones((1, 2) + sp(2)), w),                       # kernel larger than input
        db._err(torch.ones((1, 4) + sp(4)), w),                       # channel mismatch
        db._err(x, w, torch.ones(4)),                                 # bias size
        db._err(torch.ones(sp(4)), w),                                # too few dims
        db._err(x, w, stride=0),
        db._err(x, w, padding=-1),
        db._err(x, w, groups=2),
        db._err(x, w.double()),
        db._err(x, w, padding='same', stride=2),
        db._err(x, w, stride=(1,) * (nsp + 1)))


def _conv_t_samples(nsp):
    def samples(op, mk):
        sp = lambda n: (n,) * nsp
        small_k = sp(2) if nsp < 3 else (1, 1, 2)  # at most 24 elements: gradcheck runs on it
        yield db.Sample((_w(mk, (1, 2) + sp(2)), _w(mk, (2, 1) + small_k), _w(mk, (2,))), {'groups': 2})
        x = _w(mk, (2, 4) + sp(5 if nsp < 3 else 3))
        yield db.Sample((x, _w(mk, (4, 3) + sp(3)), _w(mk, (3,))))
        yield db.Sample((x, _w(mk, (4, 3) + sp(3))), {'stride': 2, 'padding': 1, 'output_padding': 1})
        yield db.Sample((x, _w(mk, (4, 2) + sp(2))), {'stride': 2, 'groups': 2, 'dilation': 2})
        yield db.Sample((x, _w(mk, (4, 1) + sp(3)), _w(mk, (4,))), {'padding': 1, 'groups': 4})  # depthwise
        yield db.Sample((x, _w(mk, (4, 1) + sp(2))), {'padding': 1, 'dilation': 2, 'groups': 4})
        yield db.Sample((x, _w(mk, (4, 1) + sp(3))), {'stride': 2, 'padding': 2, 'groups': 4})
        yield db.Sample((x, _w(mk, (4, 5) + sp(1))))  # 1x1
        yield db.Sample((x[0], _w(mk, (4, 2) + sp(3))), {'stride': 2})  # unbatched
        yield db.Sample((_w(mk, (2, 4) + sp(3)), _w(mk, (4, 3) + sp(2))), layout='strided')
        if nsp == 2:  # Winograd F(4x4, 3x3) as the transposed convolution (16+ channels, stride 1)
            yield db.Sample((_w(mk, (2, 16, 7, 9)), _w(mk, (16, 18, 3, 3)), _w(mk, (18,))), {'padding': 1})
    return samples


def _conv_t_errors(nsp):
    sp = lambda n: (n,) * nsp
    x, w = torch.ones((1, 2) + sp(4)), torch.ones((2, 3) + sp(3))
    return db._errors(
        db._err(torch.ones((1, 4) + sp(4)), w),
        db._err(x, w, torch.ones(4)),
        db._err(x, w, output_padding=1),
        db._err(torch.ones(sp(4)), w),
        db._err(x, w, stride=0))


# 2-D float32: Winograd F(4x4, 3x3) rounds differently from a direct sum (Note [Winograd
# convolution] in csrc/kernels/cpu/conv/conv_winograd_kernel.cpp): a few 1e-6 of the output's
# largest magnitude, over 1e-5 absolute on outputs of 144-term sums.
# complex64 (three float32 convolutions, Note [Complex convolution]): s - p - q cancels, so
# its imaginary parts carry the rounding of |xr + xi| |wr + wi| products (16 channels x 3x3)
WINOGRAD_TOL = dict(HALF_TOL, float32=(5e-5, 5e-5), complex64=(1e-4, 2e-4))
for _n in (1, 2, 3):
    _tol = WINOGRAD_TOL if _n == 2 else None
    _register(f'conv{_n}d', _conv_samples(_n), errors=_conv_errors(_n), tol=_tol)
    _register(f'conv_transpose{_n}d', _conv_t_samples(_n), errors=_conv_t_errors(_n), tol=_tol)


def _convolution_samples(op, mk):
    yield db.Sample((_w(mk, (1, 2, 3)), _w(mk, (2, 2, 2)), _w(mk, (2,)), [1], [0], [1], False, [0], 1))
    x = _w(mk, (2, 4, 6, 5))
    yield db.Sample((x, _w(mk, (6, 2, 3, 2)), None, [2, 1], [1, 0], [1, 2], False, [0, 0], 2))
    yield db.Sample((x, _w(mk, (4, 3, 3, 3)), _w(mk, (6,)), [2], [1], [1], True, [1], 2))
    yield db.Sample((_w(mk, (2, 4, 6)), _w(mk, (3, 4, 2)), None, [1], [1], [1], False, [0], 1), layout='strided')


_register('convolution', _convolution_samples,
          errors=db._errors(db._err(torch.ones(1, 2, 4), torch.ones(3, 2, 5), None, [1], [0], [1], False, [0], 1)))


# ---------------------------------------------------------------- pooling
def _pool_input(mk, nsp, size):
    return mk((2, 3) + (size,) * nsp, domain=(-3, 3), int_domain=(-20, 20))


def _max_pool_samples(nsp):
    def samples(op, mk):
        yield db.Sample((mk((1, 2) + (3,) * nsp if nsp < 3 else (1, 1, 2, 3, 3)), 2), {'stride': 1})
        x = _pool_input(mk, nsp, 7 if nsp < 3 else 5)
        yield db.Sample((x, 3))
        yield db.Sample((x, 3, 2, 1))
        yield db.Sample((x, 2), {'stride': 2, 'ceil_mode': True})
        yield db.Sample((x, 3), {'stride': 2, 'padding': 1, 'dilation': 2})
        yield db.Sample((x, [2] * nsp, [1] * nsp), {'dilation': 1, 'ceil_mode': True})
        yield db.Sample((x[0], 2))  # unbatched
        yield db.Sample((_pool_input(mk, nsp, 6), 2), layout='strided')
        if mk.is_float:
            t = _pool_input(mk, nsp, 4)
            t.view(-1)[::5] = NAN
            t.view(-1)[1::7] = -INF
            yield db.Sample((t, 2))
    return samples


def _pool_errors(nsp, too_few_dims=True):
    x = torch.ones((1, 2) + (4,) * nsp)
    few = (db._err(torch.ones(4), 2),) if too_few_dims else ()  # avg_pool2d: torch's IndexError
    return db._errors(db._err(x, 3, 1, 2), db._err(x, 0), db._err(x, 2, 0), db._err(torch.ones((1, 2) + (1,) * nsp), 2),
                      *few)


for _n in (1, 2, 3):
    _register(f'max_pool{_n}d', _max_pool_samples(_n), errors=_pool_errors(_n))
    _register(f'max_pool{_n}d_with_indices', _max_pool_samples(_n), fn=(
        torch.max_pool1d_with_indices if _n == 1 else getattr(torch._C._nn, f'max_pool{_n}d_with_indices')))


def _avg_pool_samples(nsp):
    def samples(op, mk):
        yield db.Sample((mk((1, 2) + (3,) * nsp if nsp < 3 else (1, 1, 2, 3, 3)), 2), {'stride': 1})
        x = _pool_input(mk, nsp, 7 if nsp < 3 else 5)
        yield db.Sample((x, 3))
        yield db.Sample((x, 3, 2, 1))
        yield db.Sample((x, 3, 2, 1), {'count_include_pad': False})
        yield db.Sample((x, 2), {'stride': 2, 'ceil_mode': True})
        yield db.Sample((x, 3), {'stride': 2, 'padding': 1, 'ceil_mode': True, 'count_include_pad': False})
        if nsp > 1:
            yield db.Sample((x, 3), {'padding': 1, 'divisor_override': 4})
        yield db.Sample((x[0], 2))
        yield db.Sample((_pool_input(mk, nsp, 6), 2), layout='strided')
    return samples


for _n in (1, 2, 3):
    _register(f'avg_pool{_n}d', _avg_pool_samples(_n), fn=(
        torch.avg_pool1d if _n == 1 else getattr(torch._C._nn, f'avg_pool{_n}d')), errors=_pool_errors(_n, False))


def _adaptive_samples(nsp):
    def samples(op, mk):
        yield db.Sample((mk((1, 2) + (3,) * nsp if nsp < 3 else (1, 1, 2, 3, 3)), 2))
        x = _pool_input(mk, nsp, 7 if nsp < 3 else 5)
        yield db.Sample((x, 3))
        yield db.Sample((x, [4] + [1] * (nsp - 1)))
        yield db.Sample((x, 7 if nsp < 3 else 5))
        yield db.Sample((x[0], 2))
        yield db.Sample((_pool_input(mk, nsp, 6), 4), layout='strided')
    return samples


for _n in (1, 2, 3):
    _register(f'adaptive_avg_pool{_n}d', _adaptive_samples(_n), fn=(
        torch.adaptive_avg_pool1d if _n == 1 else getattr(torch._C._nn, f'adaptive_avg_pool{_n}d')),
        errors=db._errors(db._err(torch.ones(4), 2)))
for _n in (1, 2):
    _register(f'adaptive_max_pool{_n}d', _adaptive_samples(_n), fn=(
        torch.adaptive_max_pool1d if _n == 1 else torch._C._nn.adaptive_max_pool2d),
        errors=db._errors(db._err(torch.ones(4), 2)))


# ---------------------------------------------------------------- softmax
def _softmax_samples(op, mk):
    yield db.Sample((mk((2, 3)), 1))
    x = mk((3, 4, 5))
    for d in (0, 1, -1):
        yield db.Sample((x, d))
    yield db.Sample((x, 1, torch.float64))
    yield db.Sample((mk(()), 0))
    yield db.Sample((mk((4, 37)), -1), layout='transposed')
    yield db.Sample((mk((3, 6)), 1), layout='strided')
    if mk.is_float:
        yield db.Sample((mk.values([[1.0, NAN, 2.0], [-INF, -INF, -INF], [INF, 1.0, 2.0], [1e4, -1e4, 0.0]]), 1))


for _name in ('softmax', 'log_softmax'):
    _register(_name, _softmax_samples, method=True, errors=db._errors(db._err(torch.ones(2, 3), 2, exc=IndexError)))


# ---------------------------------------------------------------- normalisation
def _layer_norm_samples(op, mk):
    yield db.Sample((mk((2, 3)), [3], mk((3,)), mk((3,))))
    x = mk((3, 4, 5))
    yield db.Sample((x, [5]))
    yield db.Sample((x, [4, 5], mk((4, 5)), mk((4, 5))))
    yield db.Sample((x, [5], mk((5,)), None, 1e-3))
    yield db.Sample((mk((4, 6)), [6], mk((6,)), mk((6,))), layout='transposed')


_register('layer_norm', _layer_norm_samples, tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2),
                                                 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3), [4]), db._err(torch.ones(2, 3), [3], torch.ones(4))))


def _batch_norm_samples(op, mk):
    yield db.Sample((mk((3, 2)), mk((2,)), mk((2,)), None, None, True, 0.1, 1e-5, True))
    x = mk((4, 3, 5))
    yield db.Sample((x, mk((3,)), mk((3,)), mk.values([0.0, 0.5, -1.0]), mk.values([1.0, 2.0, 0.5]), True, 0.1, 1e-5, True))
    yield db.Sample((x, None, None, mk((3,)), mk((3,), domain=(0.5, 2)), False, 0.1, 1e-5, True))
    yield db.Sample((mk((2, 3, 4, 4)), mk((3,)), None, None, None, True, 0.3, 1e-3, True))
    yield db.Sample((mk((4, 3)), mk((3,)), mk((3,)), None, None, True, 0.1, 1e-5, True), layout='transposed')


_register('batch_norm', _batch_norm_samples,
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3), torch.ones(4), None, None, None, True, 0.1, 1e-5, True),
                            db._err(torch.ones(2, 3), None, None, None, None, False, 0.1, 1e-5, True)))


def _group_norm_samples(op, mk):
    yield db.Sample((mk((2, 4, 2)), 2, mk((4,)), mk((4,))))
    yield db.Sample((mk((3, 6, 5)), 3))
    yield db.Sample((mk((2, 6, 3, 3)), 2, mk((6,)), None, 1e-3))
    yield db.Sample((mk((4, 6)), 3, mk((6,)), mk((6,))), layout='transposed')


_register('group_norm', _group_norm_samples,
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3, 4), 2)))


def _native_group_norm_samples(op, mk):
    yield db.Sample((mk((2, 4, 2)), mk((4,)), mk((4,)), 2, 4, 2, 2, 1e-5))
    yield db.Sample((mk((3, 6, 5)), None, None, 3, 6, 5, 3, 1e-5))
    yield db.Sample((mk((2, 6, 3, 3)), mk((6,)), None, 2, 6, 9, 2, 1e-3))


# PyTorch's native_group_norm takes only inputs dense in their own layout (group_norm makes them so)
_register('native_group_norm', _native_group_norm_samples, coverage=(),
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3, 4), None, None, 2, 3, 5, 1, 1e-5),
                            db._err(torch.ones(2, 6, 4), None, None, 2, 6, 4, 4, 1e-5),
                            db._err(torch.ones(6, 4, 3), None, None, 4, 6, 3, 3, 1e-5, layout='transposed')))


def _rms_norm_samples(op, mk):
    yield db.Sample((mk((2, 3)), [3], mk((3,))))
    x = mk((3, 4, 5))
    yield db.Sample((x, [5]))
    yield db.Sample((x, [4, 5], mk((4, 5)), 1e-3))
    yield db.Sample((mk((4, 6)), [6]), layout='transposed')


_register('rms_norm', _rms_norm_samples,
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3), [4])))


def _fused_rms_norm_samples(op, mk):
    yield db.Sample((mk((2, 3)), [3], mk((3,)), None))
    yield db.Sample((mk((3, 4, 5)), [4, 5], None, 1e-3))
    yield db.Sample((mk((5, 40)), [40], mk((40,)), 1e-5))
    yield db.Sample((mk((4, 6)), [6], mk((6,)), None), layout='transposed')


# the kernel rms_norm calls: also the per-row 1/rms in the accumulation dtype. PyTorch's CPU
# form checks no shapes (rms_norm's errors are checked above), so only a weight it cannot scale by
_register('_fused_rms_norm', _fused_rms_norm_samples,
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(2, 3), [3], torch.ones(2), None)))


# ---------------------------------------------------------------- padding
def _constant_pad_samples(op, mk):
    yield db.Sample((mk((2, 3)), [1, 2]))
    x = mk((2, 3, 4))
    yield db.Sample((x, [1, 2, 0, 1], 2))
    yield db.Sample((x, [-1, 2]))
    yield db.Sample((x, [1, 1, 1, 1, 1, 1]))
    yield db.Sample((x, [0, 0, -1, -1]))
    yield db.Sample((mk((0, 3)), [1, 1]))
    yield db.Sample((mk((3, 5)), [2, 1]), layout='strided')


_register('constant_pad_nd', _constant_pad_samples,
          errors=db._errors(db._err(torch.ones(2, 3), [1]), db._err(torch.ones(2, 3), [1, 1, 1, 1, 1, 1]),
                            db._err(torch.ones(2, 3), [-3, -1])))


def _pad_samples(nsp):
    def samples(op, mk):
        yield db.Sample((mk((1, 2) + (3,) * nsp if nsp < 3 else (1, 1, 2, 2, 3)), [1, 2] * nsp if nsp < 3 else [1, 1] * 3))
        x = mk((2, 3) + (4,) * nsp)
        yield db.Sample((x, [3, 1] + [2, 0] * (nsp - 1)))
        yield db.Sample((x, [0, 2] * nsp))
        yield db.Sample((x[0], [1, 1] * nsp))
        yield db.Sample((mk((2, 3) + (5,) * nsp), [2, 1] * nsp), layout='strided')
    return samples


for _n in (1, 2, 3):
    for _kind in ('reflection', 'replication'):
        _register(f'{_kind}_pad{_n}d', _pad_samples(_n),
                  errors=db._errors(db._err(torch.ones(4), [1, 1] * _n), db._err(torch.ones((1, 2) + (2,) * _n), [1]),
                                    db._err(torch.ones((1, 2) + (2,) * _n), [-3, 0] * _n),
                                    *((db._err(torch.ones((1, 2) + (2,) * _n), [5, 5] * _n),) if _kind == 'reflection' else ())))


# ---------------------------------------------------------------- unpooling
def _unpool_samples(nsp, output_size):
    def samples(op, mk):
        pool = getattr(torch._C._nn, f'max_pool{nsp}d_with_indices') if nsp > 1 else torch.max_pool1d_with_indices
        x = mk((2, 3) + (4,) * nsp, domain=(-3, 3)).double() if mk.is_float else mk((2, 3) + (4,) * nsp).double()
        values, idx = pool(x, 2)
        values = values.to(db.torch_dtype(mk.dtype))
        small = values[:1, :1] if nsp == 3 else values[:1]
        extra = ([2] * nsp, [0] * nsp) if nsp == 3 else ()
        yield db.Sample((small, idx[:small.shape[0], :small.shape[1]], [4] * nsp) + extra)
        yield db.Sample((values, idx, [4] * nsp) + extra)
        yield db.Sample((values, idx, [5] * nsp) + extra)
        yield db.Sample((values[0], idx[0], [4] * nsp) + extra)
        yield db.Sample((values, idx, [4] * nsp) + extra, layout='strided')
    return samples


def _max_unpool1d_reference(input, indices, output_size):
    """PyTorch's F.max_unpool1d: max_unpool2d over a trailing unit dim."""
    if not isinstance(input, torch.Tensor) or not isinstance(indices, torch.Tensor):
        raise TypeError('max_unpool1d(): input and indices must be tensors')
    return torch._C._nn.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), list(output_size) + [1]).squeeze(-1)


if not hasattr(torch, 'max_unpool1d'):
    torch.max_unpool1d = _max_unpool1d_reference
_register('max_unpool1d', _unpool_samples(1, 4))
_register('max_unpool2d', _unpool_samples(2, 4),
          errors=db._errors(db._err(torch.ones(1, 2, 2, 2), torch.full((1, 2, 2, 2), 30), [4, 4]),
                            db._err(torch.ones(1, 2, 2, 2), torch.zeros(1, 2, 2, 2, dtype=torch.long), [4, 4, 4]),
                            db._err(torch.ones(1, 2, 2, 2), torch.zeros(1, 2, 2, 1, dtype=torch.long), [4, 4])))
_register('max_unpool3d', _unpool_samples(3, 4))


# ---------------------------------------------------------------- im2col / col2im
def _im2col_samples(op, mk):
    yield db.Sample((mk((1, 2, 3, 3)), [2, 2], [1, 1], [0, 0], [1, 1]))
    x = mk((2, 3, 6, 5))
    yield db.Sample((x, [3, 2], [1, 1], [1, 0], [2, 1]))
    yield db.Sample((x, [2, 2], [2, 1], [1, 1], [1, 2]))
    yield db.Sample((x[0], [3, 3], [1, 1], [1, 1], [1, 1]))
    yield db.Sample((mk((2, 3, 4, 6)), [2, 2], [1, 1], [0, 0], [2, 2]), layout='strided')


_register('im2col', _im2col_samples,
          errors=db._errors(db._err(torch.ones(1, 2, 2, 2), [3, 3], [1, 1], [0, 0], [1, 1]),
                            db._err(torch.ones(2, 2, 2, 2, 2), [1, 1], [1, 1], [0, 0], [1, 1])))


def _blocks(size, k, d, p, st):
    """How many sliding blocks fit along each spatial dim (their product is col2im's L)."""
    n = 1
    for a, b, c, e, f in zip(size, k, d, p, st):
        n *= (a + 2 * e - c * (b - 1) - 1) // f + 1
    return n


def _col2im_samples(op, mk):
    for batch, c, args, layout in [((1,), 1, ([2, 3], [2, 2], [1, 1], [0, 0], [1, 1]), 'contiguous'),
                                   ((2,), 3, ([6, 5], [3, 2], [1, 1], [1, 0], [2, 1]), 'contiguous'),
                                   ((2,), 3, ([6, 5], [2, 2], [2, 1], [1, 1], [1, 2]), 'contiguous'),
                                   ((), 3, ([6, 5], [3, 3], [1, 1], [1, 1], [1, 1]), 'contiguous'),
                                   ((2,), 3, ([4, 6], [2, 2], [1, 1], [0, 0], [2, 2]), 'strided')]:
        k = args[1][0] * args[1][1]
        yield db.Sample((mk(batch + (c * k, _blocks(*args))),) + args, layout=layout)


_register('col2im', _col2im_samples,
          errors=db._errors(db._err(torch.ones(1, 5, 9), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]),
                            db._err(torch.ones(1, 4, 8), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1])))


# ---------------------------------------------------------------- fused activations
def _activation_samples(variants):
    def samples(op, mk):
        yield db.Sample((mk((2, 3)),), dict(variants[0]))
        for kwargs in variants:
            yield db.Sample((mk((4, 37)),), dict(kwargs), layout='transposed')
            yield db.Sample((mk((3, 6)),), dict(kwargs), layout='strided')
            yield db.Sample((mk(()),), dict(kwargs))
            if mk.is_float:  # the branch points and specials
                yield db.Sample((mk.values([-3.0, 3.0, 0.0, -0.0, 20.0, -20.0, 2.5, NAN, INF, -INF]),),
                                dict(kwargs))
    return samples


for _name, _variants in (('gelu', ({}, {'approximate': 'tanh'})), ('silu', ({},)), ('mish', ({},)),
                         ('softplus', ({}, {'beta': 2.0, 'threshold': 5.0})),
                         ('elu', ({}, {'alpha': 0.5})), ('celu', ({'alpha': 2.0},)), ('selu', ({},)),
                         ('leaky_relu', ({}, {'negative_slope': 0.2})), ('hardswish', ({},)),
                         ('hardsigmoid', ({},))):
    db.register(db.OpInfo(f'nn.functional.{_name}', _activation_samples(_variants), db.FLOATS,
                          method=False, tol=HALF_TOL, coverage=('noncontig',),
                          message_names=(_name, f'_{_name}', '_gelu_tanh', '_elu'),
                          errors=db._errors(db._err(torch.tensor([1, 2]), exc=NotImplementedError))))


# ---------------------------------------------------------------- attention
# The math path on the CPU; on CUDA the float16 / bfloat16 samples with head dim 64 take the
# fused kernel (Note [Flash attention]), the others the math path.
def _sdpa_samples(op, mk):
    yield db.Sample((mk((1, 2, 3, 2)), mk((1, 2, 2, 2)), mk((1, 2, 2, 2))))
    q, kv = mk((2, 3, 5, 8)), mk((2, 3, 7, 8))
    yield db.Sample((q, kv, kv), {'is_causal': True})
    yield db.Sample((q, kv, kv), {'scale': 0.3})
    yield db.Sample((q, kv, kv, mk((5, 7))))
    yield db.Sample((mk((3, 6, 8)), mk((3, 6, 8)), mk((3, 6, 8))), {'is_causal': True}, layout='transposed')
    yield db.Sample((mk((2, 2, 9, 64)), mk((2, 2, 4, 64)), mk((2, 2, 4, 64))), {'is_causal': True})
    yield db.Sample((mk((1, 2, 6, 64)), mk((1, 2, 6, 64)), mk((1, 2, 6, 64))), layout='strided')


_register('nn.functional.scaled_dot_product_attention', _sdpa_samples,
          fn=torch.nn.functional.scaled_dot_product_attention, message_names=('scaled_dot_product_attention',),
          tol={'float16': (2e-2, 2e-2), 'bfloat16': (8e-2, 8e-2), 'float32': (1e-5, 1e-5), 'float64': (1e-7, 1e-7)},
          errors=db._errors(db._err(torch.ones(1, 2, 3), torch.ones(1, 2, 3), torch.ones(1, 2, 3),
                                    torch.ones(2, 2, dtype=torch.bool), is_causal=True)))


# ---------------------------------------------------------------- dropout (csrc/ops/random.yaml)
# native_dropout's deterministic form (train=False: a copy and an all-True mask) and its
# backward; the training form is random and is compared with torch under equal seeds in
# tests/python/test_cuda_random.py.
def _native_dropout_samples(op, mk):
    yield db.Sample((mk((2, 3)), 0.4, False))
    yield db.Sample((mk((4, 5)), 0.0, False), layout='transposed')
    yield db.Sample((mk((3, 6)), 1.0, False), layout='strided')
    yield db.Sample((mk(()), 0.5, False))
    yield db.Sample((mk((0, 2)), 0.5, False))


def _native_dropout_backward_samples(op, mk):
    yield db.Sample((mk((2, 3)), mk((2, 3), dtype='bool'), 2.0))
    yield db.Sample((mk((4, 5)), mk((4, 5), dtype='bool'), 1 / 0.7), layout='transposed')
    yield db.Sample((mk((3, 6)), mk((3, 6), dtype='bool'), 0.0), layout='strided')
    yield db.Sample((mk((3, 4)), mk((4,), dtype='bool'), 1.5))  # the mask broadcasts
    yield db.Sample((mk(()), mk((), dtype='bool'), 3.0))


def _torch_native_dropout_backward(grad_output, mask, scale):
    """torch.ops.aten's native_dropout_backward (torch exports no function), with the
    TypeError a torch function raises for a non-tensor argument."""
    for name, a in (('grad_output', grad_output), ('mask', mask)):
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"native_dropout_backward(): argument '{name}' must be Tensor, "
                            f"not {type(a).__name__}")
    return torch.ops.aten.native_dropout_backward(grad_output, mask, scale)


if not hasattr(torch, 'native_dropout_backward'):
    torch.native_dropout_backward = _torch_native_dropout_backward
_register('native_dropout', _native_dropout_samples)
_register('native_dropout_backward', _native_dropout_backward_samples,
          errors=db._errors(db._err(torch.ones(3), torch.tensor([True, False]), 2.0)))


# ---------------------------------------------------------------- grid sampling
def _grid_samples(op, mk):
    def grid(shape):
        g = mk(shape, domain=(-1.2, 1.2), int_domain=(-1, 1))
        # PyTorch rounds every step to float16/bfloat16 (we compute in float32): on a grid of
        # eighths the positions are exact in both, so they pick the same input elements
        return (g * 8).round() / 8 if mk.dtype in db.HALF_DTYPES else g
    yield db.Sample((_w(mk, (1, 1, 2, 3)), grid((1, 2, 2, 2)), 0, 0, False))  # tiny: gradcheck runs on it
    x2, x3 = _w(mk, (2, 3, 4, 5)), _w(mk, (2, 2, 3, 4, 3))
    for mode, padding, align in [(0, 0, False), (0, 1, True), (0, 2, False), (0, 2, True), (1, 0, True),
                                 (1, 1, False), (1, 2, True), (2, 0, False), (2, 1, True), (2, 2, False),
                                 (2, 2, True)]:
        yield db.Sample((x2, grid((2, 3, 4, 2)), mode, padding, align))
    for mode, padding, align in [(0, 0, False), (0, 1, True), (0, 2, False), (0, 2, True), (1, 1, False),
                                 (1, 2, True)]:
        yield db.Sample((x3, grid((2, 2, 3, 2, 3)), mode, padding, align))
    yield db.Sample((_w(mk, (1, 2, 1, 1)), grid((1, 2, 2, 2)), 0, 2, True))  # unit spatial dims
    yield db.Sample((_w(mk, (2, 3, 4, 5)), grid((2, 0, 3, 2)), 0, 0, False))  # empty grid
    yield db.Sample((_w(mk, (0, 3, 4, 5)), grid((0, 2, 3, 2)), 1, 1, False))  # empty batch
    if mk.dtype in ('float32', 'float64'):  # NaN / inf / huge positions (2-D border/reflection crash PyTorch)
        special = [NAN, INF, -INF, 1e30, -3e9, 1.0, -1.0, 0.0]
        g2 = mk.values(special * 2).reshape(1, 2, 4, 2)
        yield db.Sample((_w(mk, (1, 2, 3, 4)), g2, 0, 0, False))
        yield db.Sample((_w(mk, (1, 2, 3, 4)), g2, 2, 0, True))
        g3 = mk.values(special * 3).reshape(1, 2, 2, 2, 3)
        for padding in (0, 1, 2):
            yield db.Sample((_w(mk, (1, 2, 2, 3, 4)), g3, 0, padding, False))
        yield db.Sample((_w(mk, (1, 2, 2, 3, 4)), g3, 1, 2, True))
    yield db.Sample((_w(mk, (2, 3, 4, 5)), grid((2, 3, 4, 2)), 0, 2, False), layout='strided')
    yield db.Sample((_w(mk, (2, 2, 3, 4, 5)), grid((2, 2, 3, 4, 3)), 0, 1, True), layout='transposed')


_register('grid_sampler', _grid_samples, tol={**HALF_TOL, 'float16': (2e-2, 2e-2), 'bfloat16': (1e-1, 1e-1)},
          errors=db._errors(db._err(torch.ones(2, 1, 3, 3), torch.zeros(1, 2, 2, 2), 0, 0, False),  # batch
                            db._err(torch.ones(1, 1, 3, 3), torch.zeros(1, 2, 2, 3), 0, 0, False),  # last dim
                            db._err(torch.ones(1, 1, 3, 3), torch.zeros(1, 2, 2, 2, 2), 0, 0, False),
                            db._err(torch.ones(1, 3, 3), torch.zeros(1, 2, 1), 0, 0, False),
                            db._err(torch.ones(1, 1, 0, 3), torch.zeros(1, 2, 2, 2), 0, 0, False),
                            db._err(torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 2, 2, 2, 3), 2, 0, False),
                            db._err(torch.ones(1, 1, 3, 3), torch.zeros(1, 2, 2, 2, dtype=torch.float64), 0, 0,
                                    False),
                            db._err(torch.ones(1, 1, 3, 3, dtype=torch.int64), torch.zeros(1, 2, 2, 2), 0, 0, False,
                                    exc=NotImplementedError)))


# ---------------------------------------------------------------- embedding bags
def _long(vals, dtype=torch.int64):
    return torch.tensor(vals, dtype=dtype)


def _embedding_bag_samples(op, mk):
    idx, offs = _long([1, 2, 4, 5, 4, 3, 2, 9, 0, 7, 7]), _long([0, 4, 4, 6, 10])
    w = lambda: _w(mk, (10, 3))
    # tiny first: gradcheck runs on it
    yield db.Sample((_w(mk, (5, 3)), _long([0, 2, 4, 2, 1]), _long([0, 2]), False, 0, False, None, False, None))
    for mode in (0, 1, 2):
        yield db.Sample((w(), idx, offs, False, mode, False, None, False, None))
        yield db.Sample((w(), idx, offs, False, mode, False, None, False, 4))   # padding_idx
        yield db.Sample((w(), idx, offs, False, mode, False, None, False, -3))  # counted from the end
        yield db.Sample((w(), idx, _long([0, 4, 4, 6, 10, 11]), False, mode, False, None, True, None))
        yield db.Sample((w(), idx.int(), offs.int(), False, mode, False, None, False, 2))
        yield db.Sample((w(), _long([]), _long([0, 0]), False, mode, False, None, False, None))  # empty bags
        yield db.Sample((w(), idx, offs, False, mode, False, None, False, None), layout='strided')
    yield db.Sample((w(), idx, offs, False, 0, False, _w(mk, (11,)), False, None))  # per_sample_weights
    yield db.Sample((w(), idx, offs, False, 0, False, _w(mk, (11,)), False, 7))
    if mk.is_float:  # NaN / inf rows: max keeps the first of a tie and a NaN only in first place
        special = _w(mk, (4, 2))
        special[1, 0], special[2, 1], special[3, 0] = NAN, INF, -INF
        yield db.Sample((special, _long([0, 1, 2, 3, 1, 0, 3, 2]), _long([0, 4, 6]), False, 2, False, None, False,
                         None))
        yield db.Sample((special, _long([0, 1, 2, 3, 1, 0, 3, 2]), _long([0, 4, 6]), False, 1, False, None, False,
                         None))


_register('embedding_bag', _embedding_bag_samples, tol={**HALF_TOL, 'bfloat16': (2e-2, 2e-2)},
          errors=db._errors(
              db._err(torch.ones(10, 3), _long([1, 2]), _long([1]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, 10]), _long([0]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, -1]), _long([0]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0, 3]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 1, False, torch.ones(2), False, None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 0, False, torch.ones(3), False, None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 0, False, torch.ones(2).double(), False,
                      None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 3, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 0, False, None, False, 10),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([0]), False, 0, False, None, False, -11),
              db._err(torch.ones(10, 3), _long([1, 2]), _long([], torch.int64), False, 0, False, None, True, None),
              db._err(torch.ones(10), _long([1, 2]), _long([0]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3), _long([1, 2]).float(), _long([0]), False, 0, False, None, False, None),
              db._err(torch.ones(10, 3, dtype=torch.int64), _long([1, 2]), _long([0]), False, 0, False, None, False,
                      None)))


# ---------------------------------------------------------------- recurrent cells (_rnn_functions.py)
def _rnn_cell_samples(gates, two_states=False):
    def samples(op, mk):
        def hidden(b, h):
            return (_w(mk, (b, h)), _w(mk, (b, h))) if two_states else _w(mk, (b, h))
        yield db.Sample((_w(mk, (1, 2)), hidden(1, 1), _w(mk, (gates, 2)), _w(mk, (gates, 1))))
        x = _w(mk, (3, 4))
        yield db.Sample((x, hidden(3, 5), _w(mk, (5 * gates, 4)), _w(mk, (5 * gates, 5)), _w(mk, (5 * gates,)),
                         _w(mk, (5 * gates,))))
        yield db.Sample((x, hidden(3, 5), _w(mk, (5 * gates, 4)), _w(mk, (5 * gates, 5)), None,
                         _w(mk, (5 * gates,))))
        yield db.Sample((_w(mk, (4, 3)).t(), hidden(3, 2), _w(mk, (2 * gates, 4)), _w(mk, (2 * gates, 2))))
    return samples


def _rnn_cell_errors(gates, two_states=False):
    def hidden(b, h):
        return (torch.ones(b, h), torch.ones(b, h)) if two_states else torch.ones(b, h)
    w_ih, w_hh = torch.ones(5 * gates, 4), torch.ones(5 * gates, 5)
    errors = [db._err(torch.ones(3, 3), hidden(3, 5), w_ih, w_hh),   # input size
              db._err(torch.ones(3, 4), hidden(3, 4), w_ih, w_hh),   # hidden size
              db._err(torch.ones(3, 4), hidden(2, 5), w_ih, w_hh)]   # batch size
    if two_states:
        errors.append(db._err(torch.ones(3, 4), (torch.ones(3, 5),), w_ih, w_hh))
    return db._errors(*errors)


for _name, _gates in (('lstm_cell', 4), ('gru_cell', 3), ('rnn_tanh_cell', 1), ('rnn_relu_cell', 1)):
    _register(_name, _rnn_cell_samples(_gates, _name == 'lstm_cell'), coverage=(),
              errors=_rnn_cell_errors(_gates, _name == 'lstm_cell'),
              tol={**HALF_TOL, 'bfloat16': (1e-1, 1e-1), 'float16': (2e-2, 2e-2)})


# ---------------------------------------------------------------- fractional max pooling
def _fractional_samples(nsp):
    def samples(op, mk):
        def u(n, c):  # the window draws, in the input's dtype
            return mk((n, c, nsp), domain=(0.0, 1.0))
        # (3-D windows must end before the input's end: Note [fractional pooling size checks])
        small, kernel = ((1, 1, 4, 5), 2) if nsp == 2 else ((1, 1, 2, 3, 3), (1, 2, 2))
        yield db.Sample((mk(small), kernel), {'output_size': (2, 3) if nsp == 2 else 1, '_random_samples': u(1, 1)})
        x = mk((2, 3) + ((9, 11) if nsp == 2 else (6, 7, 8)))
        yield db.Sample((x, 3), {'output_size': (5, 6) if nsp == 2 else (3, 4, 5), '_random_samples': u(2, 3)})
        yield db.Sample((x, 2), {'output_ratio': 0.5 if nsp == 3 else (0.5, 0.5), '_random_samples': u(3, 3)})
        yield db.Sample((x[0], (2,) * nsp), {'output_size': 2, '_random_samples': u(1, 3)})
        yield db.Sample((x, 2), {'output_size': 1, '_random_samples': u(2, 3)}, layout='transposed')
        if mk.is_float:  # NaN windows pick their last NaN, as PyTorch's kernel
            t = mk((1, 2) + ((6, 6) if nsp == 2 else (5, 5, 5)))
            t.view(-1)[::5] = NAN
            yield db.Sample((t, 2), {'output_size': 3 if nsp == 2 else 2, '_random_samples': u(1, 2)})
    return samples


def _fractional_errors(nsp):
    x = torch.ones((1, 2) + (6,) * nsp)
    u = torch.rand(1, 2, nsp)
    return db._errors(db._err(x, 4, output_size=4, _random_samples=u),            # windows past the input
                      db._err(x, 2, output_size=3, _random_samples=u.double()),  # draws' dtype
                      db._err(x, 2, output_size=3, _random_samples=torch.rand(1, 3, nsp)),
                      db._err(x, 2, output_size=3, _random_samples=torch.rand(1, 2)),
                      db._err(x, 2, _random_samples=u, exc=ValueError))


for _n in (2, 3):
    for _suffix in ('', '_with_indices'):
        _register(f'nn.functional.fractional_max_pool{_n}d{_suffix}', _fractional_samples(_n),
                  fn=getattr(torch.nn.functional, f'fractional_max_pool{_n}d{_suffix}'), coverage=(),
                  message_names=(f'fractional_max_pool{_n}d', f'fractional_max_pool{_n}d_out'),
                  errors=_fractional_errors(_n), tol=db.EXACT_TOL)
