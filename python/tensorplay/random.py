"""Seeding and the state of the default generator (``tp.manual_seed``, ``tp.random.fork_rng``).

The CPU generator reproduces PyTorch's CPU stream: the same seed gives the same numbers, and
states move between the two libraries (``tp.set_rng_state(torch.get_rng_state())``, through
NumPy). docs/random.md lists the draws each random op makes. ``manual_seed`` and ``seed``
also seed the CUDA generators (tensorplay.cuda.random), as PyTorch's do.
"""
import contextlib
import warnings

from tensorplay import _C
from tensorplay._creation import _like_strides, empty_like

Generator = _C.Generator
default_generator = _C._default_cpu_generator()

__all__ = ["thread_safe_generator", "Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


def thread_safe_generator():
    """The generator a DataLoader *thread* worker keeps for its own use, or None (the main
    process and process workers, where the default generator is the thread's own). TensorPlay's
    workers are processes, so this is None; transforms may pass it as ``generator=`` anyway."""
    from tensorplay.utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" and \
            getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None


def manual_seed(seed):
    """Seeds the default generator and every GPU's; returns the CPU one."""
    import tensorplay.cuda
    seed = int(seed)
    tensorplay.cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator from a nondeterministic source, and every GPU's with the
    same seed; returns the seed."""
    import tensorplay.cuda
    s = default_generator.seed()
    tensorplay.cuda.manual_seed_all(s)
    return s


def initial_seed():
    """The seed the default generator started from."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, as a uint8 tensor (5056 bytes)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores the default generator's state (from get_rng_state, or from torch's)."""
    if not isinstance(new_state, _C.Tensor) or new_state.dtype != _C.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    default_generator.set_state(new_state)


_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restores the random states on exit: draws inside the block leave the streams outside
    untouched. The CPU state always, and the CUDA states of ``devices`` (default: every GPU,
    with PyTorch's warning when there are several)."""
    global _fork_rng_warned_already
    if device_type == "meta":
        yield
        return
    if not enabled:
        yield
        return
    import tensorplay.cuda as device_mod
    if devices is None:
        num_devices = device_mod.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            kind = device_type.upper()
            warnings.warn(
                f"{kind} reports that you have {num_devices} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For safety, "
                f"we initialize *every* {kind} device by default, which can be quite slow if you "
                f"have a lot of {kind}s. If you know that you are only making use of a few {kind} "
                f"devices, set the environment variable {kind}_VISIBLE_DEVICES or the "
                f"'{_devices_kw}' keyword argument of {_caller} with the set of devices you are "
                f"actually using.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)
    state = get_rng_state()
    device_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(state)
        for d, s in zip(devices, device_states):
            device_mod.set_rng_state(s, d)


def _layout_donor(input, memory_format):
    """A tensor with input's shape whose strides the *_like samplers copy: input itself when
    it is contiguous and stays so, else an empty_like of the asked-for format (its rules)."""
    if input.is_contiguous() and _like_strides(input, memory_format) is None:
        return input
    return empty_like(input, memory_format=memory_format)


def _like_sampler(c_fn):
    def like(input, *args, generator=None, dtype=None, layout=None, device=None,
             requires_grad=False, memory_format=None, **bounds):
        if not isinstance(input, _C.Tensor):
            raise TypeError(f"{c_fn.__name__}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")
        return c_fn(_layout_donor(input, memory_format), *args, **bounds, generator=generator,
                    dtype=input.dtype if dtype is None else dtype,
                    device=input.device if device is None else device, requires_grad=requires_grad)
    like.__name__ = c_fn.__name__
    like.__doc__ = c_fn.__doc__
    return like


rand_like = _like_sampler(_C.rand_like)
randn_like = _like_sampler(_C.randn_like)
randint_like = _like_sampler(_C.randint_like)
