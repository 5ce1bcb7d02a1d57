"""Triton kernels on TensorPlay tensors (``tp.library.wrap_triton``, ``tp.library.triton_op``).

Note [Triton launches]
Triton takes any argument with ``data_ptr()`` and ``dtype`` as a pointer (our dtypes print as
``tensorplay.float32``, whose last part Triton reads), so our tensors pass without copies.
What Triton does not know is our current CUDA stream and device: it asks its driver, which
asks PyTorch when PyTorch is installed. ``wrap_triton(kernel)[grid](...)`` therefore points
the driver at ``tp.cuda.current_stream()`` / ``tp.cuda.current_device()`` for the launch, so
the kernel is ordered with our work on our stream. Inside a fake kernel (FakeTensorMode or
meta tensors) a launch does nothing: a ``triton_op``'s body allocates its outputs with
tensor ops and launches kernels to fill them, so running the body with launches skipped is
its fake kernel (no ``register_fake`` needed, as in PyTorch). Triton is imported only when a
kernel is launched.
"""
import contextlib
import threading

__all__ = ['wrap_triton', 'triton_op']

_local = threading.local()


def launches_skipped():
    """True inside a kernel-language op's fake kernel: launches (Triton, tile-lang) do nothing."""
    return getattr(_local, 'skip', False)


@contextlib.contextmanager
def _launches_skipped():
    prev = getattr(_local, 'skip', False)
    _local.skip = True
    try:
        yield
    finally:
        _local.skip = prev


def body_op(name, fn, mutates_args, schema):
    """The custom op of a kernel-language body (``triton_op``, ``tile_lang_op``): the body is
    its kernel for every device, and the body with launches skipped its fake kernel."""
    from tensorplay._library.custom_ops import custom_op
    op = custom_op(name, fn, mutates_args=mutates_args, schema=schema)

    def fake(*args, **kwargs):
        with _launches_skipped():
            return fn(*args, **kwargs)
    op.register_fake(fake)
    return op


@contextlib.contextmanager
def _our_stream():
    import tensorplay as tp
    from triton.runtime import driver
    active = driver.active
    saved = active.get_current_stream, active.get_current_device
    active.get_current_stream = lambda idx=None: tp.cuda.current_stream(idx).cuda_stream
    active.get_current_device = tp.cuda.current_device
    try:
        yield
    finally:
        active.get_current_stream, active.get_current_device = saved


class _Launcher:
    def __init__(self, kernel, grid):
        self._kernel, self._grid = kernel, grid

    def __call__(self, *args, **kwargs):
        if launches_skipped():
            return None
        with _our_stream():
            return self._kernel[self._grid](*args, **kwargs)


class wrap_triton:
    """``wrap_triton(kernel)[grid](*args)`` launches a ``@triton.jit`` kernel on our tensors,
    on our current CUDA stream; inside a fake kernel the launch does nothing."""

    def __init__(self, triton_kernel):
        if not hasattr(triton_kernel, '__getitem__') or not hasattr(triton_kernel, 'run'):
            raise TypeError('wrap_triton expected a @triton.jit or @triton.autotune kernel, '
                            f'got {type(triton_kernel).__name__}')
        self.kernel = triton_kernel

    def __getitem__(self, grid):
        return _Launcher(self.kernel, grid)

    def run(self, *args, grid, **kwargs):
        return _Launcher(self.kernel, grid)(*args, **kwargs)


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """A custom op whose body launches Triton kernels through ``wrap_triton``: the body is
    the op's kernel for every device, and the body with launches skipped its fake kernel."""
    def inner(fn):
        return body_op(name, fn, mutates_args, schema)
    return inner if fn is None else inner(fn)
