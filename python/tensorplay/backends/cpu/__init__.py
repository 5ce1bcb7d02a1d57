"""tp.backends.cpu: which vector instruction level the CPU kernels run at (as torch.backends.cpu).

The kernels are compiled for the portable x86-64 baseline and again for AVX2 and AVX-512;
the highest level the CPU supports is chosen at start-up. ``TP_CPU_CAPABILITY`` (or
PyTorch's ``ATEN_CPU_CAPABILITY``) set to ``default``, ``avx2`` or ``avx512`` before the
import lowers it.
"""
from tensorplay import _C

__all__ = ['get_cpu_capability']


def get_cpu_capability():
    """The level the CPU kernels run at: ``'DEFAULT'``, ``'AVX2'`` or ``'AVX512'``.

    >>> tp.backends.cpu.get_cpu_capability()
    'AVX512'
    """
    return _C._get_cpu_capability()
