"""Shared helpers of tensorplay.cuda: the availability checks and device arguments."""
from tensorplay import _C

_compiled = bool(getattr(_C, "_cuda_compiled", False))


def _not_compiled():
    return AssertionError("Torch not compiled with CUDA enabled")


def _lazy_init():
    """Raises as PyTorch does when CUDA cannot be used: AssertionError in a build without
    CUDA, RuntimeError when no GPU is visible."""
    if not _compiled:
        raise _not_compiled()
    _C._cuda_init()


def _is_initialized():
    return _compiled and _C._cuda_getDeviceCount() > 0


def _lazy_call(callable):
    """Runs ``callable`` when CUDA is usable. PyTorch queues such calls until CUDA
    initialises; without a GPU that never happens, so here they are dropped (with a GPU,
    CUDA is usable from the start and the call runs at once)."""
    if _is_initialized():
        callable()


def _get_device_index(device, optional=True):
    """The ordinal of ``device`` (int, "cuda:1", tp.device, None -> current)."""
    if device is None:
        if not optional:
            raise ValueError("Expected a cuda device, but got: None")
        return _C._cuda_getDevice()
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return _C._cuda_getDevice() if device.index is None else device.index
    if isinstance(device, int):
        return _C._cuda_getDevice() if device < 0 else device
    idx = getattr(device, "idx", None)  # a tp.cuda.device
    if idx is not None:
        return idx
    raise ValueError(f"Expected a cuda device, but got: {device!r}")
