"""The context of a fake kernel (``tp.library.get_ctx()``)."""
import contextlib
import threading

__all__ = ['FakeImplCtx', 'get_ctx', 'set_ctx_getter']

_local = threading.local()


class FakeImplCtx:
    """What a fake kernel may ask while it runs: ``new_dynamic_size()`` for an output size
    that depends on data (``nonzero``-like ops)."""

    def __init__(self, op):
        self._op = op

    def new_dynamic_size(self, *, min=0, max=None):
        """A size only known from the data. Without symbolic shapes (no ShapeEnv) the op's
        output shape cannot be represented: DynamicOutputShapeException, as PyTorch raises."""
        from tensorplay._subclasses.fake_tensor import DynamicOutputShapeException
        if min < 0:
            raise ValueError(f'new_dynamic_size: min must be non-negative, got {min}')
        raise DynamicOutputShapeException(self._op)

    create_unbacked_symint = new_dynamic_size


@contextlib.contextmanager
def set_ctx_getter(ctx):
    prev = getattr(_local, 'ctx', None)
    _local.ctx = ctx
    try:
        yield
    finally:
        _local.ctx = prev


def get_ctx():
    """The FakeImplCtx of the fake kernel running now (only valid inside one)."""
    ctx = getattr(_local, 'ctx', None)
    if ctx is None:
        raise RuntimeError('tp.library.get_ctx() may only be called from inside a fake kernel '
                           '(one registered with register_fake) while it runs')
    return ctx
