"""tensorplay.amp.GradScaler: dynamic loss scaling for mixed-precision training, with
PyTorch's torch.amp.GradScaler API, per-optimizer stages, update rule and messages."""
import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum

import tensorplay as tp

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    """Where an optimizer stands in the current iteration: nothing done, gradients
    unscaled, or stepped (reset by ``update()``)."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    """A fresh per-optimizer record (a module-level function so that the defaultdict
    holding the records pickles)."""
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDeviceCopies:
    """A tensor and its copies on other devices, each made once on first request."""

    def __init__(self, master):
        self.master = master
        self.copies = {master.device: master}

    def get(self, device):
        copy = self.copies.get(device)
        if copy is None:
            copy = self.copies[device] = self.master.to(device=device, non_blocking=True, copy=True)
        return copy


_HALF_TYPES = (tp.float16, tp.bfloat16)


def _unscale_and_check_(grads, found_inf, inv_scale):
    """PyTorch's ``_amp_foreach_non_finite_check_and_unscale_`` for gradients on one
    device: ``found_inf`` becomes 1.0 when any element is inf or NaN (as the gradients
    were before unscaling), and every gradient is multiplied by ``inv_scale`` in place,
    float16/bfloat16 ones through float32 as PyTorch's kernel does. Nothing is read back
    to the host."""
    all_finite = tp.stack([tp.isfinite(g).all() for g in grads]).all()
    found_inf.masked_fill_(all_finite.logical_not(), 1.0)
    for g in grads:
        if g.dtype in _HALF_TYPES:
            g.copy_(g.float().mul_(inv_scale))
        else:
            g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's ``_amp_update_scale_`` with tensor ops (no host read): after a step with
    inf/NaN gradients (``found_inf`` nonzero) the scale is multiplied by ``backoff_factor``
    and the tracker reset; otherwise the tracker counts one more clean step and, on
    reaching ``growth_interval``, is reset and the scale multiplied by ``growth_factor``
    unless that overflows float32. Products are taken in float64 and rounded to float32."""
    found = found_inf != 0
    tracker = tp.where(found, 0, growth_tracker + 1)
    at_interval = tracker == growth_interval
    grown = scale.double().mul_(growth_factor).float()
    backed_off = scale.double().mul_(backoff_factor).float()
    grow = at_interval.logical_and(tp.isfinite(grown))
    scale.copy_(tp.where(found, backed_off, tp.where(grow, grown, scale)))
    growth_tracker.copy_(tp.where(at_interval, 0, tracker))


class GradScaler:
    """Scales the loss so that small float16 gradients do not underflow, unscales the
    gradients before the optimizer steps, skips steps whose gradients hold inf/NaN and
    adapts the scale (PyTorch's ``torch.amp.GradScaler``).

    ``scale(loss)`` multiplies by the current scale; ``step(optimizer)`` unscales the
    gradients (unless ``unscale_(optimizer)`` already did this iteration) and calls
    ``optimizer.step()`` only when they are all finite; ``update()`` multiplies the scale
    by ``backoff_factor`` after a skipped step, or by ``growth_factor`` after
    ``growth_interval`` consecutive clean steps. A disabled scaler passes everything
    through. With ``device="cuda"`` and no GPU it warns and disables itself.

    Example::

        >>> scaler = tp.amp.GradScaler("cpu")
        >>> for input, target in data:
        ...     optimizer.zero_grad()
        ...     loss = loss_fn(model(input), target)
        ...     scaler.scale(loss).backward()
        ...     scaler.step(optimizer)
        ...     scaler.update()
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not tp.cuda.is_available():
            warnings.warn("tensorplay.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # created on the device of the first tensor given to scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = tp.full((), self._init_scale, dtype=tp.float32, device=dev)
        self._growth_tracker = tp.full((), self._init_growth_tracker, dtype=tp.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple/iterable of them, nested) times the scale
        factor; lists and tuples keep their type, other iterables come back as a lazy
        ``map``. A disabled scaler returns ``outputs`` unchanged."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, tp.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        scales = []  # the per-device copies of the scale, made on the first tensor met

        def apply_scale(val):
            if isinstance(val, tp.Tensor):
                if not scales:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    scales.append(_PerDeviceCopies(self._scale))
                return val * scales[0].get(val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscales every gradient of ``optimizer`` by ``inv_scale``, grouped by device
        and dtype; returns the found-inf flag of each device."""
        inv_scales = _PerDeviceCopies(inv_scale)
        found_infs = _PerDeviceCopies(found_inf)
        grads_by_device_dtype = defaultdict(list)
        with tp.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, tp.Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == tp.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads_by_device_dtype[(grad.device, grad.dtype)].append(grad)
            per_device = {}
            for (device, _), grads in grads_by_device_dtype.items():
                per_device[device] = found_infs.get(device)
                _unscale_and_check_(grads, per_device[device], inv_scales.get(device))
        return per_device

    def _unscale(self, optimizer, allow_fp16):
        scale, _ = self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch (float32 division may be inexact)
        inv_scale = scale.double().reciprocal().float()
        found_inf = tp.full((), 0.0, dtype=tp.float32, device=scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16)
        optimizer_state["stage"] = OptState.UNSCALED

    def unscale_(self, optimizer):
        """Divides ``optimizer``'s gradients by the scale factor in place and records
        whether any holds inf/NaN; at most once per optimizer between ``update()`` calls
        and before ``step()``, e.g. to clip the true gradients::

            >>> scaler.scale(loss).backward()
            >>> scaler.unscale_(optimizer)
            >>> tp.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            >>> scaler.step(optimizer)
            >>> scaler.update()

        float16 gradients raise ValueError (keep float32 master parameters)."""
        if not self._enabled:
            return
        self._unscale(optimizer, allow_fp16=False)

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        """``optimizer.step()`` unless a gradient held inf/NaN (the one host read of the
        iteration)."""
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales ``optimizer``'s gradients (unless ``unscale_`` did already) and calls
        ``optimizer.step(*args, **kwargs)`` if they are all finite, returning its result
        (None for a skipped step). Closures are not supported.

        Optimizers marked ``_step_supports_amp_scaling`` (``fused=True``) accept float16
        gradients here and step even when they have none. One whose ``step`` takes a
        ``grad_scaler`` keyword is handed the scaler and does its own unscaling (deprecated
        in PyTorch: a FutureWarning)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")

        supports_scaling = getattr(optimizer, "_step_supports_amp_scaling", False)
        if supports_scaling and "grad_scaler" in inspect.signature(optimizer.step).parameters:
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                FutureWarning, stacklevel=2)
            kwargs["grad_scaler"] = self
            retval = optimizer.step(*args, **kwargs)
            optimizer_state["stage"] = OptState.STEPPED
            return retval

        if optimizer_state["stage"] is OptState.READY:
            self._unscale(optimizer, allow_fp16=supports_scaling)
        if not supports_scaling and len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Updates the scale factor at the end of an iteration (after every ``step``):
        backoff if any optimizer's gradients held inf/NaN, growth after ``growth_interval``
        clean iterations; or sets it to ``new_scale`` (a float, or a 1-element float tensor
        on the scaler's device type without requires_grad, copied)."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for found_inf in found_infs[1:]:
                found_inf_combined = found_inf_combined + found_inf
            _update_scale_(scale, growth_tracker, found_inf_combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (the initial scale before the first
        ``scale()``, 1.0 when disabled); reads the scale tensor back to the host."""
        if self._enabled:
            return self._init_scale if self._scale is None else self._scale.item()
        return 1.0

    def get_growth_factor(self):
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Sets the scale growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by after a step with inf/NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Sets the scale backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """The number of consecutive clean steps after which the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Sets the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self):
        """Whether this scaler scales (False when built disabled or without a GPU for "cuda")."""
        return self._enabled

    def state_dict(self):
        """The scaler's state: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval`` and ``_growth_tracker`` (consecutive clean steps) as Python
        numbers; an empty dict when disabled. Take it after ``update()``."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        """Restores a state from ``state_dict()`` (a no-op when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # the tensors are re-created lazily from plain numbers after unpickling
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        """Records which devices' gradients of ``optimizer`` hold inf/NaN, without
        unscaling them (for optimizers that unscale inside their step)."""
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = tp.full((), 1.0, dtype=tp.float32, device=scale.device)
        found_inf = tp.full((), 0.0, dtype=tp.float32, device=scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
