"""The Optimizer base class: parameter groups, per-parameter state, state_dict round trips
and the step/state_dict hooks, with PyTorch's contract, structure and messages."""
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

import tensorplay as tp
from tensorplay.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


class _RequiredParameter:
    """Marks a hyper-parameter that every parameter group must give (SGD's lr once was)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    """torch.typename: a tensor's type string, else the object's qualified class name."""
    if isinstance(obj, tp.Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _get_scalar_dtype(is_fused=None):
    """The dtype of the `step` (and similar) state tensors: float32, or float64 when that
    is the default dtype (fused groups always keep float32)."""
    if is_fused:
        return tp.float32
    return tp.float64 if tp.get_default_dtype() == tp.float64 else tp.float32


def _to_scalar(x):
    """A 1-element hyper-parameter tensor squeezed to 0-dim; anything else unchanged."""
    if isinstance(x, tp.Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _get_value(x):
    """A Python number from a 0-dim tensor (or the number itself)."""
    return x.item() if isinstance(x, tp.Tensor) else x


def _check_lr(lr):
    if isinstance(lr, tp.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_moment_args(eps, betas, weight_decay):
    """The Adam family's checks of eps, betas and weight_decay, in PyTorch's order and words."""
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_fused_flags(optimizer, fused, foreach, differentiable):
    """PyTorch's construction-time checks of fused=True."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        optimizer._step_supports_amp_scaling = True


_FUSED_DEVICES = ["cuda", "cpu"]


def _device_dtype_check_for_fused(p):
    if not (p.device.type in _FUSED_DEVICES and p.is_floating_point()):
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of supported "
            f"devices: {_FUSED_DEVICES} but {p.dtype} and {p.device.type}")


_DEFAULT_FUSED_DTYPES = {tp.float32, tp.float64}
_PLAIN_DISPATCH = tp.Tensor.__torch_dispatch__


def _use_fused_kernel(params, fused, foreach, differentiable):
    """Whether a group's update runs on the multi-tensor C++ kernel (Note [Fused optimizer
    kernels] in csrc/ops/optim.cpp): by default for float32/float64 parameters, whose
    results are the for-loop path's; for any floating dtype with fused=True. Differentiable
    groups, and fused=False or foreach=False, take the per-tensor (for-loop) path."""
    if not params or differentiable or fused is False or foreach is False:
        return False
    # the kernel reads storage: subclasses with their own dispatch (DTensor) step per tensor
    if any(type(p).__torch_dispatch__ is not _PLAIN_DISPATCH for p in params):
        return False
    if fused:
        return all(p.is_floating_point() for p in params)
    return {p.dtype for p in params} <= _DEFAULT_FUSED_DTYPES


def _check_capturable(params, *state, what="params and state_steps", supports_xla=True):
    """capturable=True needs accelerator tensors, which a CPU build does not have: PyTorch's
    AssertionError at step time."""
    supported = ["cuda", "xpu", "hpu", "privateuseone"] + (["xla"] if supports_xla else [])
    for p, *others in zip(params, *state):
        if not (all(p.device.type == o.device.type for o in others) and p.device.type in supported):
            raise AssertionError(f"If capturable=True, {what} must be on supported devices: {supported}.")


def _cuda_graph_capture_health_check(opt):
    """A step captured into a CUDA graph must keep its step count on the device (each replay
    then counts): PyTorch's error when a group is not capturable, and its warning when a
    capturable one runs uncaptured."""
    if not tp.cuda.is_available():
        return
    capturing = tp.cuda.is_current_stream_capturing()
    if capturing and not all(g.get("capturable", False) for g in opt.param_groups):
        raise RuntimeError("Attempting CUDA graph capture of step() for an instance of "
                           f"{opt.__class__.__name__} but param_groups' capturable is False.")
    if (not getattr(opt, "_warned_capturable_if_run_uncaptured", False)
            and all(g.get("capturable", False) for g in opt.param_groups) and not capturing):
        warnings.warn("This instance was constructed with capturable=True or some of all the "
                      "param_groups came with capturable=True, but step() is running without "
                      "CUDA graph capture. If you never intend to graph-capture this instance, "
                      "capturable=True can impair performance, and you should set "
                      "capturable=False.")
        opt._warned_capturable_if_run_uncaptured = True


def _eval_closure(closure):
    """The loss from ``closure()`` run with grad enabled, or None without a closure."""
    if closure is None:
        return None
    with tp.enable_grad():
        return closure()


def _restore_tensor_state(optimizer, keys):
    """Turns number-valued state entries of old checkpoints (``step`` ...) into the scalar
    tensors this version keeps (Optimizer.__setstate__, from ``_tensor_state``)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, [])
            if len(p_state) == 0:
                continue
            for key in keys:
                if not isinstance(p_state[key], tp.Tensor):
                    p_state[key] = tp.tensor(float(p_state[key]),
                                             dtype=_get_scalar_dtype(is_fused=group.get("fused")))


def _gather_group(optimizer, group, keys, init_state):
    """The parameters of ``group`` that have a gradient, their gradients, and per state key
    in ``keys`` the list of those parameters' entries; a parameter's state is created by
    ``init_state(state, p, group)`` the first time it is stepped."""
    params, grads, lists = [], [], tuple([] for _ in keys)
    for p in group["params"]:
        if p.grad is None:
            continue
        params.append(p)
        grads.append(p.grad)
        state = optimizer.state[p]
        if len(state) == 0:
            init_state(state, p, group)
        for entries, key in zip(lists, keys):
            entries.append(state[key])
    return params, grads, lists


def _use_grad_for_differentiable(func):
    """Runs an optimizer's step with grad mode set to its `differentiable` default."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        with tp.set_grad_enabled(self.defaults["differentiable"]):
            return func(self, *args, **kwargs)
    return _use_grad


def register_optimizer_step_pre_hook(hook):
    """Registers ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, called
    before every optimizer's step. Returns a handle whose ``remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Registers ``hook(optimizer, args, kwargs) -> None``, called after every optimizer's
    step. Returns a handle whose ``remove()`` unregisters it."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _register(hooks, hook, prepend=False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups, each with its own options); ``defaults`` holds the options a group does not give.
    Subclasses implement ``step``. Parameters must come in a deterministic order (a list,
    not a set) so that ``state_dict`` indices mean the same thing in every run.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()
        if isinstance(params, tp.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # What __setstate__ (unpickling, load_state_dict) gives the param groups of older
    # checkpoints that lack an option, and the per-parameter state entries it turns from
    # numbers into the scalar tensors this version keeps (each optimizer sets its own).
    _group_defaults: dict = {}
    _tensor_state: tuple = ()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)
        if self._tensor_state:
            _restore_tensor_state(self, self._tensor_state)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ------------------------------------------------------------------ step hooks
    @staticmethod
    def profile_hook_step(func):
        """Wraps a step function so that the global and per-optimizer step hooks run
        around it."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                  self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                   _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        return wrapper

    def _patch_step_function(self):
        # As PyTorch: the class's step is wrapped once, by its first instance.
        if not getattr(self.__class__.step, "hooked", None):
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook):
        """Registers ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``,
        called before this optimizer's step; returns a removable handle."""
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Registers ``hook(optimizer, args, kwargs) -> None``, called after this
        optimizer's step; returns a removable handle."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Registers ``hook(optimizer) -> None``, called before ``state_dict`` builds its
        result (first among the others with ``prepend=True``)."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Registers ``hook(optimizer, state_dict) -> state_dict or None``, called on the
        result of ``state_dict``; a returned dict replaces it."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Registers ``hook(optimizer, state_dict) -> state_dict or None``, called with a
        shallow copy of the dict given to ``load_state_dict``; a returned dict is loaded
        instead."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Registers ``hook(optimizer) -> None``, called after ``load_state_dict``."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state_dict
    def state_dict(self):
        """The optimizer's state as a dict: ``state`` maps parameter indices (their order
        over all groups) to each parameter's state, and ``param_groups`` lists the groups'
        options with ``params`` as those indices.

        >>> opt.state_dict()["param_groups"][0]["params"]
        [0, 1]
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index_of = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(index_of[id(k)] if isinstance(k, tp.Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """A loaded state tensor on its parameter's device, and floating state in the
        parameter's dtype; ``step`` keeps its dtype unless the group is fused or capturable
        (then float32)."""
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=tp.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Loads a dict made by ``state_dict`` (of this optimizer class, with groups of the
        same sizes). State tensors follow their parameter's device and floating dtype.
        Load it after creating any LR scheduler, which would overwrite the loaded lr."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group "
                             "that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, tp.Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, param_groups, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v, param_id, param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ the rest
    def zero_grad(self, set_to_none=True):
        """Resets the gradients of the optimized tensors: to None (default), or to zeros
        (detached from any graph) with ``set_to_none=False``."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure=None):
        """Performs one optimization step; ``closure`` re-evaluates the model and returns
        the loss (needed by some optimizers, e.g. LBFGS)."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Adds a parameter group (a dict with ``params`` and any options to override);
        useful to train frozen layers later on. Raises PyTorch's errors for a set of
        params, non-tensors, non-leaf tensors, missing required options, a mix of named
        and unnamed groups and parameters already in another group."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, tp.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, tp.Tensor):
                raise TypeError("optimizer can only optimize Tensors, "
                                "but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(tensors)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not param_set.isdisjoint(set(tensors)):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)
