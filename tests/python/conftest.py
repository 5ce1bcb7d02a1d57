"""Selects the library under test for the opdb-driven suites.

The library is ``tensorplay`` unless ``TP_OPDB_AGAINST_TORCH=1`` is set, in
which case ``torch`` itself is tested against torch: a self-check of the
harness and of the op database, which must then pass completely.

If tensorplay fails to import, every test using the ``lib`` fixture FAILS
(it is never skipped).

``TP_OPDB_LAYOUTS`` (default ``contiguous,transposed,strided``) limits the
sample layouts that run, e.g. ``contiguous,transposed`` while the library
under test cannot slice with steps yet.

PyTorch, the reference, runs at its AVX2 level (``ATEN_CPU_CAPABILITY=avx2``, oneDNN capped
at AVX2) whatever the machine: its AVX-512 kernels and oneDNN's AVX-512 code give other
results at a few special values (NaN and -0.0 gradients of elu / celu / selu / hardswish /
logit, gelu(inf), the layout of a bfloat16 channels-last conv3d), so an unpinned reference
would make the suite's outcome depend on the CPU (docs/architecture.md, "CPU capability
levels"). TensorPlay's own level is ``TP_CPU_CAPABILITY`` (default: the highest the CPU has);
test_cpu_capability.py reruns the op database at the lower levels.

The op database lives in ``python/tensorplay/testing/opdb.py``.  It depends
only on numpy and torch, so it is loaded from the source tree by path (as the
module ``tensorplay_opdb``) and works before the C++ core is built; test
modules simply ``import tensorplay_opdb as opdb``.
"""
import importlib.util
import os
import pathlib
import sys

import pytest

# Before torch is imported (by the op database, below): see the docstring. TensorPlay also
# reads ATEN_CPU_CAPABILITY when TP_CPU_CAPABILITY is unset, so that one is pinned first.
os.environ.setdefault('TP_CPU_CAPABILITY', os.environ.get('ATEN_CPU_CAPABILITY') or 'avx512')
os.environ['ATEN_CPU_CAPABILITY'] = 'avx2'
os.environ['ONEDNN_MAX_CPU_ISA'] = 'AVX2'

ROOT = pathlib.Path(__file__).resolve().parents[2]
AGAINST_TORCH = os.environ.get('TP_OPDB_AGAINST_TORCH', '') not in ('', '0')
LAYOUTS = tuple(os.environ.get('TP_OPDB_LAYOUTS', 'contiguous,transposed,strided').split(','))


def _load(name, path):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _load_opdb():
    """The harness (opdb.py), then each op family's entries (opdb_<family>.py), then the fuzzer."""
    folder = ROOT / 'python' / 'tensorplay' / 'testing'
    db = _load('tensorplay_opdb', folder / 'opdb.py')
    for path in sorted(folder.glob('opdb_*.py')):
        _load(f'tensorplay_{path.stem}', path)
    _load('tensorplay_fuzz', folder / 'fuzz.py')  # the differential fuzzer over the entries
    return db


_load_opdb()


class _ImportFailed:
    """Stands in for a library that failed to import: any use fails the test."""

    def __init__(self, name, error):
        self._name, self._error = name, error

    def __getattr__(self, attr):
        pytest.fail(f'{self._name} failed to import: {self._error!r}', pytrace=False)


def _import_library():
    if AGAINST_TORCH:
        import torch
        return torch
    try:
        import tensorplay
    except Exception as e:  # noqa: BLE001 - any import failure must fail the tests
        return _ImportFailed('tensorplay', e)
    return tensorplay


@pytest.fixture(scope='session')
def lib():
    """The library under test: tensorplay, or torch with TP_OPDB_AGAINST_TORCH=1."""
    return _import_library()


@pytest.fixture(scope='session')
def lib_is_torch(lib):
    """True when the harness runs torch against itself."""
    return AGAINST_TORCH


@pytest.fixture(scope='session')
def layouts():
    """The sample layouts to run (see TP_OPDB_LAYOUTS)."""
    return LAYOUTS


def pytest_report_header(config):
    name = 'torch (TP_OPDB_AGAINST_TORCH=1)' if AGAINST_TORCH else 'tensorplay'
    import torch
    level = 'unknown'
    if not AGAINST_TORCH:
        try:
            import tensorplay
            level = tensorplay.backends.cpu.get_cpu_capability()
        except Exception:  # noqa: BLE001 - the tests report the import failure
            pass
    return (f"opdb library under test: {name}; layouts: {','.join(LAYOUTS)}; CPU levels: "
            f"tensorplay {level}, torch {torch.backends.cpu.get_cpu_capability()}")

