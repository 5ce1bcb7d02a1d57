"""fully_shard (FSDP2's API) over DTensor and the Gloo process group.

Note [FSDP parameter groups]. Each fully_shard call makes one parameter group: the parameters
of the module's subtree that no nested fully_shard already manages. A parameter is replaced,
at every place the tree registers it, by a Parameter holding a DTensor of its torch.chunk
block along dim 0. The group's blocks travel together: one all-gather per dtype (blocks padded
to the chunk size, laid end to end) and one reduce-scatter per dtype.
- Forward. The pre-forward hook all-gathers (unless unshard() did) and passes the unsharded
  tensors through _Unshard, a Function whose outputs become the module's parameters for the
  forward; its backward is the group's post-backward (it runs once every gradient of those
  outputs is known), which reduce-scatters (AVG) into the sharded parameters' `.grad`
  DTensors and reshards. A dummy leaf input makes autograd record the Function.
- Resharding after forward. While the forward runs, saved-tensor hooks replace any saved
  tensor whose storage is an unsharded parameter's by a reference (group, index, view
  geometry), so dropping the unsharded tensors after forward frees them; hooks on the
  forward's outputs all-gather again before backward reaches the module, and the unpack hook
  rebuilds the view on the new tensor (gathering too if it is called first). The outermost
  module of a forward keeps its parameters unsharded (backward needs them at once), as
  PyTorch's root does.
- The gathered parameters are exposed as leaves whose post-accumulate-grad hooks reduce
  like _Unshard's backward, for computations outside _Unshard (a reentrant activation
  checkpoint's recomputation, code after an explicit unshard()).
- set_requires_gradient_sync(False) keeps the unsharded gradients (summed) in the group; the
  next synced backward adds them before reducing.
- Mixed precision: blocks are cast to param_dtype before the all-gather, gradients reduced in
  reduce_dtype (default param_dtype) and stored in the parameter's dtype.
- CPUOffloadPolicy: the blocks and their gradients are kept on the CPU and moved to the
  mesh's device for communication and compute (on a CPU mesh both are the CPU).
"""
import dataclasses
import threading

import tensorplay as tp
from tensorplay import _C
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter
from tensorplay.utils._pytree import tree_flatten, tree_unflatten

from ..device_mesh import DeviceMesh, init_device_mesh
from ..tensor import DTensor, Shard
from ..tensor._api import _block, _make, _Spec

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "CPUOffloadPolicy", "UnshardHandle"]


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    """param_dtype: the dtype of the unsharded parameters (forward and backward compute);
    reduce_dtype: the gradient reduction's dtype (default param_dtype); output_dtype: the
    forward outputs' dtype; cast_forward_inputs: cast floating inputs to param_dtype."""
    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """No offloading (the default)."""


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Sharded parameters and their gradients live on the CPU (the optimizer steps there);
    pin_memory pins them where an accelerator exists."""
    pin_memory: bool = True


class UnshardHandle:
    """What unshard(async_op=True) returns; wait() makes the parameters usable."""

    def __init__(self, group):
        self._group = group

    def wait(self):
        if self._group is not None:
            self._group.unshard()
            self._group = None


_tls = threading.local()


def _state():
    s = getattr(_tls, "s", None)
    if s is None:
        s = _tls.s = {"depth": 0, "hooked": [], "saved": {}}
    return s


class _Packed:
    __slots__ = ("group", "index", "shape", "stride", "offset")

    def __init__(self, group, index, t):
        self.group, self.index = group, index
        self.shape, self.stride, self.offset = tuple(t.shape), t.stride(), t.storage_offset()


def _pack(t):
    if type(t) is not tp.Tensor and not isinstance(t, Parameter) or not t.numel():
        return t
    entry = _state()["saved"].get(t.untyped_storage().data_ptr())
    if entry is None or entry[0].dtype_of(entry[1]) != t.dtype:
        return t
    return _Packed(entry[0], entry[1], t)


def _unpack(x):
    if not isinstance(x, _Packed):
        return x
    full = x.group._for_backward(x.index)
    return full.as_strided(x.shape, x.stride, x.offset)


class _Outer:
    """A saved tensor packed by the saved-tensor hooks around the FSDP module's forward."""
    __slots__ = ("packed", "unpack")

    def __init__(self, packed, unpack):
        self.packed, self.unpack = packed, unpack


def _hooks():
    """(pack, unpack) for a forward: parameters become references; other tensors go to the
    enclosing saved-tensor hooks if any (innermost hooks alone would apply otherwise)."""
    active = tp.autograd.graph._active_hooks()
    if not active:
        return _pack, _unpack
    outer_pack, outer_unpack = active[-1]

    def pack(t):
        r = _pack(t)
        return r if isinstance(r, _Packed) else _Outer(outer_pack(t), outer_unpack)

    def unpack(x):
        return x.unpack(x.packed) if isinstance(x, _Outer) else _unpack(x)
    return pack, unpack


class _Unshard(tp.autograd.Function):
    """Identity on the unsharded parameters; its backward is the group's post-backward."""

    @staticmethod
    def forward(ctx, group, train, dummy, *tensors):
        ctx.group, ctx.train = group, train  # train: the group's indices of the tensors
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        ctx.group._post_backward(grads, ctx.train)
        return (None, None, None) + (None,) * len(grads)


class _FSDPParam:
    """One managed parameter: where the module tree registers it and its sharded form."""

    def __init__(self, param, places, mesh, offload):
        self.places = places  # [(module, name)]
        self.shape = tuple(param.shape)
        if not self.shape:
            raise ValueError("fully_shard: 0-dim parameters cannot be sharded along dim 0; "
                             "pass them in ignored_params")
        n, r = mesh.size(), mesh.get_local_rank()
        self.chunk = -(-self.shape[0] // n) if self.shape[0] else 0
        self.rest = 1
        for s in self.shape[1:]:
            self.rest *= s
        start, self.rows = _block(self.shape[0], n, r)
        with tp.no_grad():
            local = param.detach().narrow(0, start, self.rows).clone(memory_format=tp.contiguous_format)
            if offload:
                local = local.cpu()
                if offload.pin_memory and tp.cuda.is_available():
                    local = local.pin_memory()
        self.spec = _Spec(mesh, (Shard(0),), self.shape)
        self.sharded = Parameter(_make(local, self.spec), requires_grad=param.requires_grad)

    @property
    def requires_grad(self):
        return self.sharded.requires_grad  # follows requires_grad_() on the sharded parameter

    @property
    def orig_dtype(self):
        return self.sharded.dtype  # follows module.to(dtype)

    def set_attr(self, value):
        for module, name in self.places:
            module._parameters[name] = value


class _FSDPParamGroup:
    def __init__(self, module, fparams, mesh, reshard_after_forward, mp, offload):
        self.module = module
        self.fparams = fparams
        self.mesh = mesh
        self.reshard_after_forward = reshard_after_forward
        self.mp = mp
        self.offload = offload if isinstance(offload, CPUOffloadPolicy) else None
        self.unsharded = None  # plain tensors while unsharded
        self.requires_grad_sync = True
        self._grad_accum = None
        self._dummy = tp.zeros((), requires_grad=True)
        self._root_call = False
        self._hooked = False
        for fp in fparams:
            fp.set_attr(fp.sharded)

    # ---- all-gather / reduce-scatter of the group's blocks ----
    def dtype_of(self, i):
        return self.mp.param_dtype or self.fparams[i].orig_dtype

    def _by_dtype(self, dtype_of, which=None):
        groups = {}
        for i in range(len(self.fparams)) if which is None else which:
            groups.setdefault(dtype_of(i), []).append(i)
        return groups

    def _all_gather(self):
        import tensorplay.distributed as dist
        n = self.mesh.size()
        out = [None] * len(self.fparams)
        device = self.mesh.device_type
        with tp.no_grad():
            for dtype, idx in self._by_dtype(self.dtype_of).items():
                sizes = [self.fparams[i].chunk * self.fparams[i].rest for i in idx]
                total = sum(sizes)
                flat = tp.zeros(total, dtype=dtype, device=device)
                off = 0
                for i, s in zip(idx, sizes):
                    fp = self.fparams[i]
                    local = fp.sharded._local_tensor
                    k = fp.rows * fp.rest
                    flat[off:off + k] = local.reshape(-1).to(device=device, dtype=dtype)
                    off += s
                gathered = tp.empty(n * total, dtype=dtype, device=device)
                if n == 1:
                    gathered.copy_(flat)
                else:
                    dist.all_gather_into_tensor(gathered, flat, group=self.mesh.get_group())
                rows = gathered.view(n, total)
                off = 0
                for i, s in zip(idx, sizes):
                    fp = self.fparams[i]
                    full = rows[:, off:off + s].reshape((n * fp.chunk,) + fp.shape[1:])
                    # a storage of its own: saved-tensor hooks find parameters by storage
                    out[i] = full[:fp.shape[0]].clone(memory_format=tp.contiguous_format)
                    off += s
        return out

    def _reduce_scatter(self, grads, which):
        """Averages grads[i] (unsharded) over the mesh into parameter i's `.grad` block, for
        i in which."""
        import tensorplay.distributed as dist
        n = self.mesh.size()
        reduce_dtype = self.mp.reduce_dtype or self.mp.param_dtype
        with tp.no_grad():
            for dtype, idx in self._by_dtype(lambda i: reduce_dtype or self.fparams[i].orig_dtype,
                                             which).items():
                sizes = [self.fparams[i].chunk * self.fparams[i].rest for i in idx]
                total = sum(sizes)
                flat = tp.zeros((n, total), dtype=dtype, device=grads[idx[0]].device)
                off = 0
                for i, s in zip(idx, sizes):
                    fp = self.fparams[i]
                    g = grads[i].reshape(-1).to(dtype)
                    padded = tp.zeros(n * s, dtype=dtype, device=g.device)
                    padded[:g.numel()] = g
                    flat[:, off:off + s] = padded.view(n, s)
                    off += s
                out = tp.empty(total, dtype=dtype, device=flat.device)
                if n == 1:
                    out.copy_(flat.view(-1))
                else:
                    dist.reduce_scatter_tensor(out, flat.view(-1), op=dist.ReduceOp.AVG,
                                               group=self.mesh.get_group())
                off = 0
                for i, s in zip(idx, sizes):
                    fp = self.fparams[i]
                    block = out[off:off + fp.rows * fp.rest].view((fp.rows,) + fp.shape[1:])
                    block = block.to(fp.orig_dtype)
                    if self.offload is not None:
                        block = block.cpu()
                    p = fp.sharded
                    if p.grad is None:
                        p.grad = _make(block.clone(memory_format=tp.contiguous_format), fp.spec)
                    else:
                        p.grad._local_tensor.add_(block)
                    off += s

    # ---- states ----
    def unshard(self):
        if self.unsharded is not None or not self.fparams:
            return
        self.unsharded = self._all_gather()
        for i, (fp, t) in enumerate(zip(self.fparams, self.unsharded)):
            p = Parameter(t, requires_grad=fp.requires_grad)
            if fp.requires_grad:
                # used outside _Unshard (the recomputation of a reentrant checkpoint, or code
                # after an explicit unshard()), the leaf's gradient is reduced like _Unshard's
                p.register_post_accumulate_grad_hook(self._leaf_hook(i))
            fp.set_attr(p)

    def _leaf_hook(self, i):
        def hook(p):
            g, p.grad = p.grad, None
            self._post_backward([g], [i])
        return hook

    def reshard(self):
        if self.unsharded is None:
            return
        self.unsharded = None
        for fp in self.fparams:
            fp.set_attr(fp.sharded)

    def _show_sharded(self):
        """Registers the sharded parameters, returning what was registered."""
        prev = [fp.places[0][0]._parameters[fp.places[0][1]] for fp in self.fparams]
        for fp in self.fparams:
            fp.set_attr(fp.sharded)
        return prev

    def _restore(self, prev):
        for fp, v in zip(self.fparams, prev):
            fp.set_attr(v)

    def _for_backward(self, i):
        if self.unsharded is None:
            self.unshard()
        return self.unsharded[i]

    # ---- hooks ----
    def pre_forward(self, module, args, kwargs):
        st = _state()
        self._root_call = st["depth"] == 0
        st["depth"] += 1
        self.unshard()
        grad = _C.is_grad_enabled() and any(fp.requires_grad for fp in self.fparams)
        self._hooked = grad
        if grad:
            train = [i for i, fp in enumerate(self.fparams) if fp.requires_grad]
            outs = _Unshard.apply(self, train, self._dummy, *[self.unsharded[i] for i in train])
            if not isinstance(outs, tuple):
                outs = (outs,)
            for i, o in zip(train, outs):
                self.fparams[i].set_attr(o)
            for i, t in enumerate(self.unsharded or ()):
                if t.numel():
                    st["saved"][t.untyped_storage().data_ptr()] = (self, i)
            hooks = tp.autograd.graph.saved_tensors_hooks(*_hooks())
            hooks.__enter__()
            st["hooked"].append(hooks)
        if self.mp.param_dtype is not None and self.mp.cast_forward_inputs:
            args, kwargs = _cast((args, kwargs), self.mp.param_dtype)
        return args, kwargs

    def post_forward(self, module, args, kwargs, output):
        st = _state()
        st["depth"] -= 1
        if self._hooked:
            self._hooked = False
            st["hooked"].pop().__exit__(None, None, None)
            for t in self.unsharded or ():
                if t.numel():
                    st["saved"].pop(t.untyped_storage().data_ptr(), None)
            for t in tree_flatten(output)[0]:  # output None: the forward raised
                if isinstance(t, tp.Tensor) and t.requires_grad:
                    t.register_hook(self._pre_backward)
        # the root keeps its parameters for the backward that follows at once; with no
        # backward to come (grad disabled) it reshards too, so that an optimizer step before
        # the next forward is not hidden by stale unsharded values
        if self.reshard_after_forward and (not self._root_call or not _C.is_grad_enabled()):
            self.reshard()
        if self.mp.output_dtype is not None:
            output = _cast(output, self.mp.output_dtype)
        return output

    def _pre_backward(self, grad):
        self.unshard()

    def _post_backward(self, grads, train):
        full = [None] * len(self.fparams)  # by group index; unused outputs contribute zeros
        for i, g in zip(train, grads):
            full[i] = g if g is not None else tp.zeros(self.fparams[i].shape, dtype=self.dtype_of(i),
                                                       device=self.mesh.device_type)
        grads = full
        if self._grad_accum is not None:
            grads = [a if g is None else (g if a is None else a + g)
                     for a, g in zip(self._grad_accum, grads)]
            self._grad_accum = None
        if not self.requires_grad_sync:
            self._grad_accum = grads
        else:
            self._reduce_scatter(grads, [i for i, g in enumerate(grads)
                                         if g is not None and self.fparams[i].requires_grad])
        self.reshard()


def _cast(tree, dtype):
    flat, spec = tree_flatten(tree)
    return tree_unflatten([t.to(dtype) if isinstance(t, tp.Tensor) and t.is_floating_point()
                           and not isinstance(t, DTensor) else t for t in flat], spec)


class FSDPModule:
    """The class fully_shard mixes into a module's class (``FSDPLinear`` for a Linear)."""

    def _fsdp_modules(self, recurse):
        return [m for m in (self.modules() if recurse else [self]) if isinstance(m, FSDPModule)]

    def unshard(self, async_op=False):
        group = self._fsdp_group
        if async_op:
            return UnshardHandle(group)
        group.unshard()
        return None

    def reshard(self):
        self._fsdp_group.reshard()

    def _sharded_view(self, method, args, kwargs):
        # state dicts hold the sharded parameters (DTensors) in any state
        groups = [m._fsdp_group for m in self.modules() if isinstance(m, FSDPModule)]
        shown = [g._show_sharded() for g in groups]
        try:
            return method(*args, **kwargs)
        finally:
            for g, prev in zip(groups, shown):
                g._restore(prev)

    def state_dict(self, *args, **kwargs):
        return self._sharded_view(super().state_dict, args, kwargs)

    def _apply(self, fn, recurse=True):
        # module.to() / .double() convert the shards; unsharded copies would be stale
        for m in self._fsdp_modules(True):
            m._fsdp_group.reshard()
        return super()._apply(fn, recurse)

    def load_state_dict(self, *args, **kwargs):
        return self._sharded_view(super().load_state_dict, args, kwargs)

    def set_requires_gradient_sync(self, requires_gradient_sync, *, recurse=True):
        if not isinstance(requires_gradient_sync, bool):
            raise TypeError(f"requires_gradient_sync should be a bool, got "
                            f"{type(requires_gradient_sync).__name__}")
        for m in self._fsdp_modules(recurse):
            m._fsdp_group.requires_grad_sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward, recurse=True):
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got "
                             f"{type(reshard_after_forward).__name__}")
        for m in self._fsdp_modules(recurse):
            m._fsdp_group.reshard_after_forward = reshard_after_forward


_FSDP_CLASSES = {}


def _fsdp_class(cls):
    made = _FSDP_CLASSES.get(cls)
    if made is None:
        made = _FSDP_CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls),
                                         {"__module__": cls.__module__})
    return made


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=OffloadPolicy(),
                ignored_params=None):
    """Shards ``module``'s parameters (those no nested fully_shard manages) along dim 0 over
    ``mesh`` and gathers them around its forward and backward (Note [FSDP parameter groups]).
    Returns the module, whose class now derives from FSDPModule."""
    import tensorplay.distributed as dist
    from tensorplay.nn import ModuleDict, ModuleList
    if isinstance(module, (ModuleList, ModuleDict)):
        raise ValueError(f"fully_shard does not support containers that do not implement "
                         f"forward: {module}")
    if not isinstance(module, Module):
        raise ValueError(f"fully_shard expects an nn.Module, got {type(module).__name__}")
    if isinstance(module, FSDPModule):
        raise AssertionError("Each distinct composable distributed API can only be applied to a "
                             "module once. fully_shard has already been applied to the following "
                             f"module:\n{module}")
    if mesh is None:
        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        # the default group's device: CUDA over NCCL, else the CPU (as PyTorch's default mesh)
        mesh = init_device_mesh("cuda" if dist.get_backend() == "nccl" else "cpu",
                                (dist.get_world_size(),))
    if not isinstance(mesh, DeviceMesh):
        raise ValueError(f"fully_shard expects a DeviceMesh, got {type(mesh).__name__}")
    if mesh.ndim != 1:
        raise ValueError(f"fully_shard expects a 1D or 2D DeviceMesh but got {mesh}")
    if reshard_after_forward is None:
        reshard_after_forward = True
    if isinstance(reshard_after_forward, bool):
        pass
    elif isinstance(reshard_after_forward, int):
        if reshard_after_forward == 1:
            reshard_after_forward = False
        elif reshard_after_forward == mesh.size():
            reshard_after_forward = True
        else:
            raise NotImplementedError("reshard_after_forward as a group size other than 1 or the "
                                      "mesh size needs a 2-D mesh, which tensorplay lacks")
    else:
        raise ValueError(f"reshard_after_forward should be a bool or an int representing the "
                         f"group size to reshard to, not {reshard_after_forward}")
    if shard_placement_fn is not None:
        raise NotImplementedError("fully_shard: shard_placement_fn (sharding along other dims) "
                                  "is not supported; parameters are sharded along dim 0")
    if not isinstance(mp_policy, MixedPrecisionPolicy):
        raise TypeError(f"mp_policy must be a MixedPrecisionPolicy, got {type(mp_policy).__name__}")
    if not isinstance(offload_policy, OffloadPolicy):
        raise TypeError(f"offload_policy must be an OffloadPolicy, got "
                        f"{type(offload_policy).__name__}")
    ignored = {id(p) for p in ignored_params} if ignored_params else set()
    # the subtree's parameters, minus those of nested fully_shard modules
    places = {}
    order = []

    def visit(m):
        for name, p in m._parameters.items():
            if p is None or id(p) in ignored or isinstance(p, DTensor):
                continue
            if id(p) not in places:
                places[id(p)] = (p, [])
                order.append(id(p))
            places[id(p)][1].append((m, name))
        for child in m._modules.values():
            if child is not None and not isinstance(child, FSDPModule):
                visit(child)

    visit(module)
    fparams = [_FSDPParam(places[k][0], places[k][1], mesh, offload_policy
                          if isinstance(offload_policy, CPUOffloadPolicy) else None) for k in order]
    group = _FSDPParamGroup(module, fparams, mesh, reshard_after_forward, mp_policy, offload_policy)
    object.__setattr__(module, "_fsdp_group", group)
    module.register_forward_pre_hook(group.pre_forward, prepend=True, with_kwargs=True)
    module.register_forward_hook(group.post_forward, with_kwargs=True, always_call=True)
    module.__class__ = _fsdp_class(type(module))
    return module
