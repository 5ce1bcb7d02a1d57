"""The default device of factory functions (tp.set_default_device / get_default_device) and
the Tensor predicates for device types TensorPlay never holds (is_xpu, is_mps, ...)."""
from tensorplay import _C
from tensorplay.overrides import TorchFunctionMode, _pop_mode, _push_mode, \
    _get_current_function_mode_stack

# Functions that create a tensor from nothing: the default device fills their ``device=``.
_FACTORIES = frozenset("""
    empty empty_permuted empty_strided ones zeros full arange range linspace logspace eye
    rand randn randint randperm tril_indices triu_indices tensor as_tensor asarray scalar_tensor
    bartlett_window blackman_window hamming_window hann_window kaiser_window fftfreq rfftfreq
""".split())


class _DeviceContext(TorchFunctionMode):
    """The mode set_default_device pushes: a factory call without ``device=`` gets one."""

    def __init__(self, device):
        self.device = _C.device(device) if not isinstance(device, _C.device) else device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, '__name__', None) in _FACTORIES and kwargs.get('device') is None:
            kwargs['device'] = self.device
        return func(*args, **kwargs)


_current = None  # the _DeviceContext set_default_device pushed, if any


def set_default_device(device):
    """Makes ``device`` where factory functions (tp.zeros, tp.tensor, ...) put their results
    when no ``device=`` is given; None restores the CPU default.

        >>> tp.set_default_device('meta'); tp.zeros(2).device
        device(type='meta')
    """
    global _current
    mode = None if device is None else _DeviceContext(device)
    if _current is not None:
        stack = _get_current_function_mode_stack()
        # the mode normally sits on top; modes entered since stay above it
        above = []
        while stack and stack[-1] is not _current:
            above.append(_pop_mode())
            stack.pop()
        if stack:
            _pop_mode()
        for m in reversed(above):
            _push_mode(m)
    _current = mode
    if mode is not None:
        _push_mode(mode)


def get_default_device():
    """The device factory functions use when given none (CPU unless set_default_device)."""
    if _current is None:
        return _C.device('cpu')
    d = _current.device
    if d.type == 'cuda' and d.index is None:
        return _C.device('cuda', _C._cuda_getDevice())
    return d


def _false(self):
    return False


for _name in ('is_xpu', 'is_mps', 'is_mkldnn', 'is_vulkan', 'is_ipu', 'is_maia', 'is_mtia',
              'is_xla'):
    setattr(_C.Tensor, _name, property(_false, doc=f"False: no TensorPlay tensor lives on a "
                                                   f"{_name[3:]} device."))
