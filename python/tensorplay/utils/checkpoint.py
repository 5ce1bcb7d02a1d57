"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``): a checkpointed block keeps
only its inputs in the forward and runs again in the backward to get the tensors its
backward needs.

Two variants, chosen by ``use_reentrant``:

* reentrant (``True``): the block is one autograd ``Function`` whose forward runs under
  ``no_grad``; its backward reruns the block with grad on and calls ``backward`` on the
  result (a backward inside the backward, hence "reentrant"). It needs every checkpointed
  output used through ``.backward()`` without ``inputs=``, and takes no keyword arguments.
* non-reentrant (``False``, recommended): the block runs with grad on under
  ``saved_tensors_hooks`` whose pack hook keeps a small holder instead of each saved tensor.
  The first unpack in a backward reruns the block under a second pair of hooks that drops
  the recomputed tensors into the holders (and stops the rerun once all are filled). It
  works with ``tp.autograd.grad``, keyword arguments and nesting.

Both restore the random state of the forward before the rerun (CPU, and the GPUs of the
inputs once CUDA is initialized), so dropout draws the same mask twice.
"""
import contextlib
import warnings
import weakref

from tensorplay import _C
from tensorplay.autograd.function import Function
from tensorplay.autograd.grad_mode import enable_grad, no_grad
from tensorplay.autograd.graph import saved_tensors_hooks
from tensorplay.utils._pytree import tree_map

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled", "DefaultDeviceType"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None


class CheckpointError(RuntimeError):
    """Raised when the rerun of a checkpointed block saved different tensors than its forward."""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides every checkpoint's ``debug`` flag inside the block (None: leave it)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant checkpoints run in the block stop their rerun as soon as every
    tensor the backward needs was recomputed (default True)."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the rerun."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of the tensors in the tuple ``inputs`` keeping ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, _C.Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(isinstance(inp, _C.Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG states checkpoints keep when no input is off the CPU."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            import tensorplay.cuda
            DefaultDeviceType._default_device_type = \
                "cuda" if tensorplay.cuda.is_available() else "cpu"
        return DefaultDeviceType._default_device_type


def _device_types_of(args):
    found = []

    def visit(a):
        if isinstance(a, _C.Tensor) and a.device.type != "cpu":
            found.append(a.device.type)
        return a
    tree_map(visit, args)
    return found


def _infer_device_type(*args):
    found = _device_types_of(args)
    if len(set(found)) > 1:
        warnings.warn(
            "Tensor arguments, excluding CPU tensors, are detected on at least two types of "
            "devices. Device state will only be saved for devices of a single device type, and "
            "the remaining devices will be ignored. Consequently, if any checkpointed functions "
            "involve randomness, this may result in incorrect gradients. (Note that if CUDA "
            "devices are among the devices detected, it will be prioritized; otherwise, the "
            "first device encountered will be selected.)"
            f"\nDevice types: {sorted(set(found))} first device type: {found[0]}", stacklevel=2)
    if not found:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in found else found[0]


def _device_module(device_type):
    if device_type == "cuda":
        import tensorplay.cuda
        return tensorplay.cuda
    return None


def _device_initialized(device_type):
    mod = _device_module(device_type)
    return mod is not None and mod.is_initialized()


def get_device_states(*args):
    """The GPUs the tensors in ``args`` live on, and each one's RNG state."""
    ids = []

    def visit(a):
        if isinstance(a, _C.Tensor) and a.device.type not in ("cpu", "meta"):
            if a.get_device() not in ids:
                ids.append(a.get_device())
        return a
    tree_map(visit, args)
    mod = _device_module(_infer_device_type(*args))
    return ids, [mod.get_rng_state(i) for i in ids] if mod is not None else []


def set_device_states(devices, states, *, device_type=None):
    """Puts back the RNG states ``get_device_states`` returned."""
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    mod = _device_module(device_type)
    if mod is None:
        return
    for dev, state in zip(devices, states):
        mod.set_rng_state(state, dev)


class _RngAndAutocast:
    """The random and autocast state of a checkpoint's forward, put back around its rerun."""

    def __init__(self, args, preserve_rng_state):
        self.preserve = preserve_rng_state
        self.device_type = _infer_device_type(*args)
        self.autocast = {}
        for dev in {"cpu", self.device_type} & {"cpu", "cuda"}:
            if _C._autocast_is_enabled(dev):
                self.autocast[dev] = _C._autocast_get_dtype(dev)
        self.had_device = False
        if preserve_rng_state:
            self.cpu_state = _C._default_cpu_generator().get_state()
            if _device_initialized(self.device_type):
                self.had_device = True
                self.devices, self.device_states = get_device_states(*args)

    @contextlib.contextmanager
    def restored(self):
        from tensorplay.random import fork_rng
        from tensorplay.amp import autocast
        devices = self.devices if self.preserve and self.had_device else []
        with contextlib.ExitStack() as stack:
            stack.enter_context(fork_rng(devices=devices, enabled=self.preserve,
                                         device_type=self.device_type))
            if self.preserve:
                _C._default_cpu_generator().set_state(self.cpu_state)
                if self.had_device:
                    set_device_states(self.devices, self.device_states,
                                      device_type=self.device_type)
            for dev in ("cpu", "cuda"):
                if dev in self.autocast:
                    stack.enter_context(autocast(dev, dtype=self.autocast[dev]))
                elif _C._autocast_is_enabled(dev):
                    stack.enter_context(autocast(dev, enabled=False))
            yield


# --------------------------------------------------------------------- reentrant variant

class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under no_grad, rerun and inner backward in backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.state = _RngAndAutocast(args, preserve_rng_state)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensors = []
        for i, a in enumerate(args):
            if isinstance(a, _C.Tensor):
                tensors.append(a)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(a)
        ctx.save_for_backward(*tensors)
        from tensorplay import autograd
        autograd._track_checkpoint = True  # backward calls now say whether they may run it
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from tensorplay import autograd
        if not autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for idx, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[idx] = t
        with ctx.state.restored():
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, _C.Tensor):
            outputs = (outputs,)
        outs, gs = [], []
        for out, g in zip(outputs, grads):
            if isinstance(out, _C.Tensor) and out.requires_grad:
                outs.append(out)
                gs.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        autograd.backward(outs, gs)
        return (None, None) + tuple(d.grad if isinstance(d, _C.Tensor) else None
                                    for d in detached)


# ----------------------------------------------------------------- non-reentrant variant

class _Holder:
    """What a checkpointed block's saved tensor becomes: empty until a rerun fills it."""
    __slots__ = ("value", "__weakref__")

    def __init__(self):
        self.value = None


class _StopRecomputation(Exception):
    pass


class _NoopSaveInputs(Function):
    """Keeps a checkpoint's inputs as saved tensors of a node, so that an enclosing
    checkpoint treats them as its own saved tensors (nesting)."""

    @staticmethod
    def forward(ctx, dummy, *args):
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.others = [None if isinstance(a, _C.Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        return _C.empty((0,))

    @staticmethod
    def backward(ctx, *grads):
        raise AssertionError("Did not expect to backward on this graph")

    @staticmethod
    def inputs(ctx):
        args = list(ctx.others)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            args[i] = t
        return args


def _metadata(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_metadata_fns = {_DEFAULT_DETERMINISM_MODE: _metadata, "none": None}

_debug_tip = ("\nTip: To see a more detailed error message, either pass `debug=True` to "
              "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block with `with "
              "torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to enable "
              "checkpoint-debug mode globally.\n")


class _Frame:
    """One non-reentrant checkpoint call: its rerun, holders and forward metadata."""

    def __init__(self, recompute_fn, early_stop, metadata_fn, op_logs):
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.op_logs = op_logs          # (forward ops, recompute ops) lists when debug
        self.holders = []               # weak references, one per saved tensor, in order
        self.metadata = []
        self.input_saver = None
        self.forward_completed = False

    def pack(self, x):
        holder = _Holder()
        self.holders.append(weakref.ref(holder))
        if self.metadata_fn is not None:
            self.metadata.append(self.metadata_fn(x))
        return holder

    def unpack(self, holder):
        if holder.value is None:
            self.recompute()
        value, holder.value = holder.value, None
        return value

    def recompute(self):
        args = _NoopSaveInputs.inputs(self.input_saver)
        counter = [0]
        recomputed = []

        def pack(x):
            x = x.detach() if x.requires_grad else x
            i = counter[0]
            counter[0] += 1
            if i >= len(self.holders):
                if not self.forward_completed:
                    return x
                self._fail("torch.utils.checkpoint: trying to save more tensors during "
                           "recomputation than during the original forward pass.\n" + _debug_tip)
            holder = self.holders[i]()
            if holder is not None:
                holder.value = x
            recomputed.append(x)
            if self.early_stop and counter[0] == len(self.holders):
                raise _StopRecomputation
            return x

        if self.op_logs is not None:
            self.op_logs[1].clear()
        try:
            with saved_tensors_hooks(pack, lambda x: x), enable_grad():
                self.recompute_fn(*args)
        except _StopRecomputation:
            pass
        if counter[0] != len(self.holders):
            self._fail("torch.utils.checkpoint: A different number of tensors was saved during "
                       "the original forward and recomputation.\n"
                       f"Number of tensors saved during forward: {len(self.holders)}\n"
                       f"Number of tensors saved during recomputation: {counter[0]}.\n"
                       + _debug_tip)
        if self.metadata_fn is not None:
            diffs = ""
            for i, x in enumerate(recomputed):
                meta = self.metadata_fn(x)
                if meta != self.metadata[i]:
                    diffs += (f"tensor at position {i}:\nsaved metadata: {self.metadata[i]}\n"
                              f"recomputed metadata: {meta}\n")
            if diffs:
                self._fail("torch.utils.checkpoint: Recomputed values for the following tensors "
                           "have different metadata than during the forward pass.\n"
                           f"{diffs}.\n" + _debug_tip)

    def _fail(self, message):
        if self.op_logs is not None:
            fwd, rec = self.op_logs
            message += ("\nOperations executed during the original forward:\n\n" + "\n".join(fwd)
                        + "\n\nOperations executed during recomputation:\n\n" + "\n".join(rec)
                        + "\n\nERROR: Detected non-determinism while running activation "
                          "checkpointing (debug=True)\n")
        raise CheckpointError(message)


def _op_logger(log):
    from tensorplay.utils._python_dispatch import TorchDispatchMode

    class _LogOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            shapes = [tuple(a.shape) for a in args if isinstance(a, _C.Tensor)]
            log.append(f"{func} {shapes}")
            return func(*args, **(kwargs or {}))
    return _LogOps()


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  debug, early_stop, args, kwargs):
    enabled_debug = _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug
    op_logs = None
    if enabled_debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        op_logs = ([], [])
        context_fn = lambda: (_op_logger(op_logs[0]), _op_logger(op_logs[1]))  # noqa: E731
    if determinism_check not in _metadata_fns:
        raise ValueError(f"determinism_check should be one of {list(_metadata_fns)}, "
                         f"but got {determinism_check}")
    state = _RngAndAutocast(args, preserve_rng_state)
    forward_context, recompute_context = context_fn()

    def recompute_fn(*inputs):
        with state.restored(), recompute_context:
            function(*inputs, **kwargs)

    if _enable_checkpoint_early_stop is not None:
        early_stop = _enable_checkpoint_early_stop
    frame = _Frame(recompute_fn, early_stop, _metadata_fns[determinism_check], op_logs)
    dummy = _C.empty((0,))
    dummy.requires_grad_(True)
    saver = _NoopSaveInputs.apply(dummy, *args)
    if saver.grad_fn is None:           # grad mode off: nothing will be saved
        return function(*args, **kwargs)
    frame.input_saver = saver.grad_fn
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    if preserve_rng_state and not state.had_device and _device_initialized(state.device_type):
        raise RuntimeError("PyTorch's device state was initialized in the forward pass of a "
                           "Checkpoint, which is not allowed. Please open an issue if you need "
                           "this feature.")
    return out


# -------------------------------------------------------------------------- public API

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """Runs ``function(*args, **kwargs)`` without keeping the tensors its backward needs;
    the backward reruns it to get them (see the module docstring).

    ``use_reentrant`` should be passed (omitting it warns and picks ``True``, as PyTorch 2.13
    does); ``preserve_rng_state=False`` skips restoring the random state for the rerun.
    ``context_fn``, ``determinism_check``, ``debug`` and keyword arguments to ``function``
    need ``use_reentrant=False``."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         debug, early_stop, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs ``functions`` (an ``nn.Sequential`` or a list of callables) in order on
    ``input``, checkpointing each of ``segments`` chunks but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from tensorplay.nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
