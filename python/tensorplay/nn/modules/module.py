"""nn.Module: parameters, buffers and submodules registered by attribute assignment, with
PyTorch's traversal, state_dict, hooks, device/dtype moves and printing."""
import functools
import itertools
from collections import OrderedDict, namedtuple

from tensorplay import _C
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.nn.parameter import Buffer, Parameter, is_lazy
from tensorplay.utils.hooks import RemovableHandle

Tensor = _C.Tensor

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def _type_name(value):
    if isinstance(value, Tensor):
        return "tensorplay.Tensor"
    return type(value).__name__


class Module:
    """Base class of every layer and model (PyTorch's nn.Module)."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = None  # subclasses define it

    # ------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer: state that is not a parameter (saved in state_dict if persistent)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a parameter (None is allowed: a missing optional parameter, e.g. bias)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a submodule (None allowed)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule at the dotted path `target` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, last = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, last):
            raise AttributeError(parent._get_name() + " has no attribute `" + last + "`")
        setattr(parent, last, module)

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ------------------------------------------------------------ attributes
    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_type_name(value)}' as child module "
                                    f"'{name}' (torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                sub = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # ------------------------------------------------------------ moves and casts
    def _apply(self, fn, recurse=True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            param.data = new  # in place: optimizers keep pointing at the same Parameter
            if type(new) is not Tensor and new.__dict__:
                param.__dict__.update(new.__dict__)  # a wrapper subclass's state (DTensor)
            if param.grad is not None:
                with no_grad():
                    g = fn(param.grad)
                param.grad.data = g
                if type(g) is not Tensor and g.__dict__:
                    param.grad.__dict__.update(g.__dict__)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or casts parameters and buffers: to(device), to(dtype), to(tensor),
        to(device, dtype), memory_format= (4-D/5-D tensors); dtypes must be floating (integer
        tensors keep theirs)."""
        layout = kwargs.pop("memory_format", None)
        device, dtype, non_blocking = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            want = dtype if (dtype is not None and t.is_floating_point()) else None
            fmt = layout if t.dim() in (4, 5) else None  # PyTorch relayouts 4-D/5-D tensors only
            return t.to(device=device, dtype=want, non_blocking=non_blocking, memory_format=fmt)
        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device=None, recurse=True):
        return self._apply(lambda t: _C.empty(tuple(t.shape), dtype=t.dtype, device=device),
                           recurse=recurse)

    def share_memory(self):
        """Moves every parameter and buffer into shared memory (Tensor.share_memory_), so
        processes the module is sent to through tensorplay.multiprocessing share them."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs)
        -> None or (new args, new kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or new output (with_kwargs: also kwargs)."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[
            self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, run when the gradients with
        respect to the module's outputs are ready."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input, run when the
        gradients with respect to the module's tensor inputs are ready."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        return self.register_full_backward_hook(hook)

    def register_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(hook, self) \
            if _takes_module(hook) else hook
        return handle

    def register_load_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------ calling
    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        called_always = False
        bw = _BackwardHook(self) if (self._backward_hooks or self._backward_pre_hooks) else None
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            if bw is not None:
                args = bw.wrap_inputs(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called_always = True
                res = hook(self, args, kwargs, result) \
                    if hook_id in self._forward_hooks_with_kwargs else hook(self, args, result)
                if res is not None:
                    result = res
            if bw is not None:
                result = bw.wrap_outputs(result)
            return result
        except Exception:
            if not called_always:
                for hook_id, hook in list(self._forward_hooks.items()):
                    if hook_id in self._forward_hooks_always_called:
                        try:
                            if hook_id in self._forward_hooks_with_kwargs:
                                hook(self, args, kwargs, None)
                            else:
                                hook(self, args, None)
                        except Exception:
                            pass
            raise

    def __call__(self, *args, **kwargs):
        # the plain path first: no hooks means one attribute check and the forward call
        if self._forward_hooks or self._forward_pre_hooks or self._backward_hooks \
                or self._backward_pre_hooks:
            return self._call_impl(*args, **kwargs)
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer, by dotted name."""
        if args:  # the old positional form (destination, prefix, keep_vars)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            if not is_lazy(param) and tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_torch_size(input_param.shape)} from checkpoint, the shape in current "
                    f"model is {_torch_size(param.shape)}.")
                continue
            try:
                with no_grad():
                    if is_lazy(param):
                        param.materialize(tuple(input_param.shape))
                    if assign:
                        if isinstance(param, Parameter):
                            new = Parameter(input_param, requires_grad=param.requires_grad)
                            setattr(self, name, new)
                        else:
                            setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {_torch_size(param.shape)} and whose dimensions in the checkpoint are "
                    f"{_torch_size(input_param.shape)}, an exception occurred : {ex.args}.")
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from `state_dict` (or takes them, with assign=True);
        returns (missing_keys, unexpected_keys); strict raises on either."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, incompatible)
                if out is not None:
                    raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` "
                                       "are not expected to return new values, if incompatible_keys "
                                       "need to be modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ------------------------------------------------------------ printing
    def extra_repr(self):
        return ""

    def _get_name(self):
        return self.__class__.__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)


class _BackwardHook:
    """Runs a module's full backward (pre-)hooks: identity autograd Functions around its
    tensor inputs and outputs see the gradients flowing through them."""

    def __init__(self, module):
        self.module = module
        self.grad_outputs = None
        self.n_inputs = 0
        self.inputs_hooked = False

    def _call_full_hooks(self, grad_inputs):
        for hook in list(self.module._backward_hooks.values()):
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None:
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(res)}, but expected {len(grad_inputs)}")
                grad_inputs = res
        return grad_inputs

    def wrap_inputs(self, args):
        from tensorplay.autograd import Function
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(positions)
        if not any(args[i].requires_grad for i in positions):
            return args
        self.inputs_hooked = True
        hook = self

        class InputHook(Function):
            @staticmethod
            def forward(ctx, *xs):
                return xs

            @staticmethod
            def backward(ctx, *grads):
                req = [args[i].requires_grad for i in positions]
                gin = tuple(g if r else None for g, r in zip(grads, req))
                out = hook._call_full_hooks(gin)
                return tuple(out)

        wrapped = InputHook.apply(*[args[i] for i in positions])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        new = list(args)
        for i, w in zip(positions, wrapped):
            new[i] = w if args[i].requires_grad else args[i]
        return tuple(new)

    def wrap_outputs(self, result):
        from tensorplay.autograd import Function
        single = isinstance(result, Tensor)
        outs = (result,) if single else result
        if not isinstance(outs, tuple) or not any(isinstance(o, Tensor) and o.requires_grad
                                                  for o in outs):
            return result
        hook = self

        class OutputHook(Function):
            @staticmethod
            def forward(ctx, *xs):
                return xs

            @staticmethod
            def backward(ctx, *grads):
                grads = tuple(grads)
                for pre in list(hook.module._backward_pre_hooks.values()):
                    res = pre(hook.module, grads)
                    if res is not None:
                        grads = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                hook.grad_outputs = grads
                if not hook.inputs_hooked:  # no input takes a gradient: grad_input is all None
                    hook._call_full_hooks((None,) * hook.n_inputs)
                return grads

        tensors = [o for o in outs if isinstance(o, Tensor)]
        wrapped = OutputHook.apply(*tensors)
        wrapped = list(wrapped) if isinstance(wrapped, tuple) else [wrapped]
        it = iter(wrapped)
        new = tuple(next(it) if isinstance(o, Tensor) else o for o in outs)
        return new[0] if single else new


def _torch_size(shape):
    return "torch.Size([" + ", ".join(str(s) for s in shape) + "])"


def _takes_module(hook):
    return False


def _parse_to(*args, **kwargs):
    """(device, dtype, non_blocking) from Tensor.to-style arguments."""
    from tensorplay._dtype import dtype as dtype_cls
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {list(kwargs)}")
    for a in args:
        if isinstance(a, dtype_cls):
            dtype = a
        elif isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, bool):
            non_blocking = a
        elif a is not None:
            device = _C.device(a) if not isinstance(a, _C.device) else a
    return device, dtype, non_blocking
