"""The CUDA generators' seeds and states (PyTorch's torch.cuda.random).

Each GPU has a default generator (``tp.cuda.default_generators``), created on first use with
a nondeterministic seed; ``tp.manual_seed`` seeds them all. A state is 16 bytes: the seed
and the Philox offset, as uint64 (PyTorch's layout). Without a usable GPU the seeding calls
do nothing (PyTorch defers them until CUDA initialises, which cannot happen then) and the
calls that read a state raise, as in PyTorch."""
from tensorplay import _C
from tensorplay.cuda._utils import _is_initialized, _lazy_call, _lazy_init

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]


def _generators():
    import tensorplay.cuda
    return tensorplay.cuda.default_generators


def _device_index(device):
    if isinstance(device, str):
        device = _C.device(device)
    elif isinstance(device, int):
        device = _C.device("cuda", device)
    return _C._cuda_getDevice() if device.index is None else device.index


def get_rng_state(device="cuda"):
    """The state of ``device``'s default generator, as a 16-byte uint8 tensor."""
    _lazy_init()
    return _generators()[_device_index(device)].get_state()


def get_rng_state_all():
    """The states of every GPU's default generator."""
    import tensorplay.cuda
    return [get_rng_state(i) for i in range(tensorplay.cuda.device_count())]


def set_rng_state(new_state, device="cuda"):
    """Restores the state of ``device``'s default generator (from get_rng_state)."""
    if not _is_initialized():
        from tensorplay._tensor import contiguous_format
        new_state = new_state.clone(memory_format=contiguous_format)

    def cb():
        _generators()[_device_index(device)].set_state(new_state)

    _lazy_call(cb)


def set_rng_state_all(new_states):
    """Restores each GPU's default generator from a sequence of states."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed):
    """Seeds the current GPU's default generator (ignored without a GPU)."""
    seed = int(seed)

    def cb():
        _generators()[_C._cuda_getDevice()].manual_seed(seed)

    _lazy_call(cb)


def manual_seed_all(seed):
    """Seeds every GPU's default generator (ignored without a GPU)."""
    seed = int(seed)

    def cb():
        for g in _generators():
            g.manual_seed(seed)

    _lazy_call(cb)


def seed():
    """Seeds the current GPU's default generator nondeterministically."""
    def cb():
        _generators()[_C._cuda_getDevice()].seed()

    _lazy_call(cb)


def seed_all():
    """Seeds every GPU's default generator with one nondeterministic seed."""
    def cb():
        gens = _generators()
        if gens:
            gens[0].seed()
            for g in gens[1:]:
                g.manual_seed(gens[0].initial_seed())

    _lazy_call(cb)


def initial_seed():
    """The seed the current GPU's default generator started from."""
    _lazy_init()
    return _generators()[_C._cuda_getDevice()].initial_seed()
