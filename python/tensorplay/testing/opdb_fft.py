"""Op-database entries: tp.fft's transforms (csrc/ops/fft/, python/tensorplay/fft.py).
Loaded after opdb.py."""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

# PyTorch's CPU FFT takes integers and bools (promoted to the default float dtype), float32,
# float64 and the complex types; float16 and bfloat16 raise "Unsupported dtype".
ANY_IN = db.INTEGRAL + ('float32', 'float64') + db.COMPLEX
REAL_IN = db.INTEGRAL + ('float32', 'float64')
FFT_TOL = {'float32': (1e-4, 1e-4), 'float64': (1e-10, 1e-10), 'complex64': (1e-4, 1e-4),
           'complex128': (1e-10, 1e-10)}


def _one_d_samples(op, mk):
    yield db.Sample((mk((6, 8)),))
    yield db.Sample((mk((5,)),), {'n': 8})
    yield db.Sample((mk((5, 7)),), {'n': 3, 'dim': 0})
    yield db.Sample((mk((4, 6)),), {'norm': 'ortho'})
    yield db.Sample((mk((4, 6)),), {'dim': 0, 'norm': 'forward'})
    yield db.Sample((mk((3, 6)),), layout='transposed')


def _n_d_samples(op, mk):
    yield db.Sample((mk((3, 4, 6)),))
    yield db.Sample((mk((3, 4, 6)),), {'dim': (0, 2)})
    yield db.Sample((mk((3, 4, 6)),), {'s': (5, 3)})
    yield db.Sample((mk((3, 4, 6)),), {'s': (4, -1), 'norm': 'ortho'})
    yield db.Sample((mk((4, 5)),), {'dim': (-1, 0), 'norm': 'forward'})


def _errors(op):
    x = torch.ones(4, 4)
    one_d = op.name[-1] not in 'n2'
    yield from (db._err(x, n=0) if one_d else db._err(x, s=(0, 2)))(op)
    yield from db._err(x, norm='bad', match='Invalid normalization mode')(op)
    yield from (db._err(x, dim=2, exc=IndexError) if one_d else db._err(x, dim=(0, 0)))(op)


def _register(name, dtypes, samples):
    db.register(db.OpInfo(name, samples, dtypes=dtypes, method=False, out=True, tol=FFT_TOL,
                          errors=_errors, message_names=(name.split('.')[1],)))


for _name in ('fft', 'ifft', 'irfft', 'hfft'):
    _register(f'fft.{_name}', ANY_IN, _one_d_samples)
for _name in ('rfft', 'ihfft'):
    _register(f'fft.{_name}', REAL_IN, _one_d_samples)
for _name in ('fftn', 'ifftn', 'irfftn', 'hfftn', 'fft2', 'ifft2', 'irfft2', 'hfft2'):
    _register(f'fft.{_name}', ANY_IN, _n_d_samples)
for _name in ('rfftn', 'ihfftn', 'rfft2', 'ihfft2'):
    _register(f'fft.{_name}', REAL_IN, _n_d_samples)
