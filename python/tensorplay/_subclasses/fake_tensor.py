"""Fake tensors (PyTorch's ``torch._subclasses.fake_tensor``): tensors with shapes, dtypes,
strides and a device but no data, and the mode that makes every op produce them.

Note [Fake tensors]
A FakeTensor is a meta tensor (its C++ tensor lives on the meta device, so no memory is
allocated and every op runs its Meta kernel) that says it is on ``fake_device`` (any device,
CUDA included on a machine without a GPU). Under ``FakeTensorMode`` every op (factories
included) reaches the mode through the Python dispatch key, below autograd: the mode checks
the devices, runs the op on the meta tensors with the Python key excluded, and returns the
results as FakeTensors on the common device. Autograd records on them as on any tensor, so a
model's forward and backward run whole without data. Ops whose output shape depends on the
data raise DynamicOutputShapeException; reading a value raises DataDependentOutputException.
A FakeTensor used outside its mode re-enters the mode (its ``__torch_dispatch__``).

    with FakeTensorMode():
        w = tp.randn(1024, 1024, device='cuda', requires_grad=True)   # no memory
        (w @ w).sum().backward()                                          # shapes only
        w.grad.shape                                                      # (1024, 1024)
"""
import contextlib

from tensorplay import _C
from tensorplay._ops import Tag, ops
from tensorplay._tensor import Tensor
from tensorplay.utils._python_dispatch import TorchDispatchMode

_LIFT_FRESH = ops.aten.lift_fresh.default
_COPIES = frozenset({ops.aten.copy_.default})

__all__ = ['FakeTensor', 'FakeTensorMode', 'DataDependentOutputException',
           'DynamicOutputShapeException', 'FakeTensorDeviceMismatchError',
           'UnsupportedFakeTensorException']

aten = ops.aten


class UnsupportedFakeTensorException(RuntimeError):
    """An op or input fake tensors cannot handle."""


class DynamicOutputShapeException(RuntimeError):
    """The op's output shape depends on the input's values (nonzero, unique, ...)."""

    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class DataDependentOutputException(RuntimeError):
    """The op reads a value (item, tolist, a Python bool of a tensor)."""

    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class FakeTensorDeviceMismatchError(RuntimeError):
    """Tensors of one op on different devices."""


def _device(d):
    """A tp.device, with CUDA given its index (cuda -> cuda:0) as PyTorch's fake tensors do."""
    d = _C.device(d) if not isinstance(d, _C.device) else d
    if d.type == 'cuda' and d.index is None:
        return _C.device('cuda:0')
    return d


def _read_value(self, *args, **kwargs):
    raise DataDependentOutputException(aten._local_scalar_dense.default
                                       if hasattr(aten, '_local_scalar_dense') else 'item')


class FakeTensor(Tensor):
    """A tensor with metadata and no data (Note [Fake tensors]); ``fake_device`` is the
    device it stands for, ``fake_mode`` the mode that made it."""

    @staticmethod
    def __new__(cls, fake_mode, elem, device):
        if not isinstance(elem, Tensor) or elem.device.type != 'meta':
            raise UnsupportedFakeTensorException('FakeTensor: expected a meta tensor to stand for')
        return _wrap(fake_mode, elem, _device(device))

    @property
    def device(self):
        return self.fake_device

    @property
    def is_cuda(self):
        return self.fake_device.type == 'cuda'

    @property
    def is_cpu(self):
        return self.fake_device.type == 'cpu'

    @property
    def is_meta(self):
        return False

    def __repr__(self):
        dev = '' if self.fake_device.type == 'cpu' else f"device='{self.fake_device}', "
        return f'FakeTensor(..., {dev}size={tuple(self.shape)})'

    __str__ = __repr__
    __torch_function__ = _C._disabled_torch_function_impl  # as PyTorch's FakeTensor

    @property
    def data(self):
        return Tensor.data.__get__(self)

    @data.setter
    def data(self, new):
        # PyTorch's fake device lives in the TensorImpl, so set_data moves it; ours is an
        # attribute (module.to('cuda') assigns param.data)
        Tensor.data.__set__(self, new)
        if isinstance(new, FakeTensor):
            self.fake_device = new.fake_device
    item = tolist = numpy = __bool__ = __float__ = __int__ = __index__ = _read_value

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # a fake tensor outside its mode: the mode of the first one handles the call
        mode = next(a.fake_mode for a in _flatten((args, kwargs or {})) if isinstance(a, FakeTensor))
        with mode:
            return func(*args, **(kwargs or {}))


def _wrap(mode, t, device):
    """The meta tensor `t` as a FakeTensor on `device` (the same C++ tensor)."""
    return _C._as_subclass_inplace(t, FakeTensor, {'fake_device': device, 'fake_mode': mode})


def _flatten(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flatten(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _flatten(v)
    else:
        yield x


def _map(f, x):
    if isinstance(x, list):
        return [_map(f, v) for v in x]
    if isinstance(x, tuple):
        return tuple(_map(f, v) for v in x)
    if isinstance(x, dict):
        return {k: _map(f, v) for k, v in x.items()}
    return f(x)


class FakeTensorMode(TorchDispatchMode):
    """Makes every op produce FakeTensors (Note [Fake tensors]).

    ``allow_non_fake_inputs``: real tensors reaching an op are converted (else an
    AssertionError, as in PyTorch)."""

    def __init__(self, *, allow_non_fake_inputs=False, allow_fallback_kernels=True, shape_env=None,
                 static_shapes=None):
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = shape_env

    def from_tensor(self, t, *, static_shapes=None, source=None):
        """A FakeTensor with the metadata of the real tensor ``t`` (its device, dtype, sizes,
        strides, storage offset and requires_grad)."""
        if isinstance(t, FakeTensor):
            return t
        with _C._DisablePythonDispatch():
            meta = _C.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device='meta')
        fake = _wrap(self, meta, _device(t.device))
        if t.requires_grad:
            fake.requires_grad_(True)
        return fake

    from_real_tensor = from_tensor

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if Tag.dynamic_output_shape in func.tags:
            raise DynamicOutputShapeException(func)
        if func is _LIFT_FRESH:  # a tensor made from data inside the mode: its fake twin
            return self.from_tensor(args[0])
        flat = list(_flatten((args, kwargs)))
        tensors = [a for a in flat if isinstance(a, Tensor)]
        real = [a for a in tensors if not isinstance(a, FakeTensor)]
        if real:
            if not self.allow_non_fake_inputs:
                raise AssertionError(
                    "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode "
                    f"with 'allow_non_fake_inputs'. Found in {func}")
            convert = {id(t): self.from_tensor(t) for t in real}
            args, kwargs = _map(lambda a: convert.get(id(a), a), (args, kwargs))
            tensors = [a for a in _flatten((args, kwargs)) if isinstance(a, Tensor)]
        if func.namespace != 'aten':  # a tp.library op: its fake kernel, inside this mode
            from tensorplay.library import fake_kernel_of
            fake = fake_kernel_of(func)
            if fake is not None:
                with self:
                    out = fake(*args, **kwargs)
                return _map(lambda r: self._fake_result(r, self._common_device(func, tensors, kwargs), tensors), out)
        # a copy moves data across devices: its result is on its destination's device
        device = tensors[0].fake_device if func in _COPIES else self._common_device(func, tensors, kwargs)
        if 'device' in kwargs and kwargs['device'] is not None:
            kwargs['device'] = 'meta'
        elif not tensors:  # a factory with the default device
            kwargs['device'] = 'meta'
        with _C._DisablePythonDispatch():
            out = func(*args, **kwargs)
        return _map(lambda r: self._fake_result(r, device, tensors), out)

    def _common_device(self, func, tensors, kwargs):
        if kwargs.get('device') is not None:
            return _device(kwargs['device'])
        found = None
        # Our fake tensors are meta tensors in C++: a C++ formula that makes a tensor "on its
        # input's device" (a backward's zeros) makes a meta one. Such a tensor takes the
        # device of the tensors it meets (PyTorch's fake tensors report their fake device to
        # C++ and never make these).
        if any(t.fake_device.type != 'meta' for t in tensors):
            tensors = [t for t in tensors if t.fake_device.type != 'meta']
        for t in tensors:
            d = t.fake_device
            if found is None or found == d:
                found = d
            elif t.dim() == 0 and d.type == 'cpu':  # a CPU scalar tensor mixes with any device
                continue
            elif found.type == 'cpu' and not self._is_cpu_scalar(tensors, found):
                raise FakeTensorDeviceMismatchError(
                    'Expected all tensors to be on the same device, but found at least two '
                    f'devices, {found} and {d}!')
            elif found.type == 'cpu':
                found = d
            else:
                raise FakeTensorDeviceMismatchError(
                    'Expected all tensors to be on the same device, but found at least two '
                    f'devices, {found} and {d}!')
        return found if found is not None else _C.device('cpu')

    @staticmethod
    def _is_cpu_scalar(tensors, device):
        return all(t.dim() == 0 for t in tensors if t.fake_device == device)

    def _fake_result(self, r, device, inputs):
        if not isinstance(r, Tensor) or isinstance(r, FakeTensor):
            return r
        return _wrap(self, r, device)


@contextlib.contextmanager
def unset_fake_temporarily():
    """Runs the block with no FakeTensorMode (the modes are put back after)."""
    from tensorplay.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes() as modes:
        yield modes
