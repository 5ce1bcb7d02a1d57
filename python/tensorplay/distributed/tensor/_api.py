"""DTensor: a global tensor laid out over a 1-D DeviceMesh.

Note [DTensor lite]. A DTensor is a wrapper subclass (``Tensor._make_wrapper_subclass``):
its shape, dtype and device are the global tensor's, and ``_local_tensor`` holds this rank's
block. Ops reach ``__torch_dispatch__`` below autograd, so autograd (and an optimizer's
``param.grad``) sees DTensors with global shapes. The dispatch knows two rules, enough for
FSDP and optimizers:
- pointwise ops (and detach/clone/_to_copy/copy_/fill_/zero_) whose DTensor arguments all
  have one mesh, one placement and one global shape, other arguments being numbers or 0-dim
  tensors, run on the local blocks and keep the layout (no communication);
- any other op gathers its DTensor arguments (``full_tensor``), runs on the global values and
  returns Replicate DTensors; an in-place op writes each rank's block back. The values are
  right, though PyTorch would often keep a Shard or Partial layout and move less data.
``*_like`` factories are Python functions here, not ops, so ``__torch_function__`` maps
them onto the local block. Shards follow torch.chunk: blocks of ceil(n / world) along the
dimension, so trailing ranks may hold fewer rows or none (PyTorch's layout).
"""
import tensorplay as tp
from tensorplay import _C
from tensorplay._ops import Tag
from tensorplay.utils._pytree import tree_flatten, tree_unflatten

from ..device_mesh import DeviceMesh
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "zeros", "ones", "empty", "full", "rand", "randn"]

Tensor = _C.Tensor


# ---- layout arithmetic ----
def _block(size, n, r):
    """(start, length) of rank r's torch.chunk block of ``size`` rows over n ranks."""
    c = -(-size // n) if size else 0
    start = min(r * c, size)
    return start, min(start + c, size) - start


def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _normalize(placements, ndim, mesh):
    if placements is None:
        return (Replicate(),)
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found "
                         f"placements length: {len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Placement objects (Shard, Replicate, Partial), "
                            f"got {p!r}")
        if isinstance(p, Shard):
            d = p.dim
            if not -max(ndim, 1) <= d < max(ndim, 1) or ndim == 0:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {d})")
            if d < 0:
                p = Shard(d + ndim)
        out.append(p)
    return tuple(out)


class _Spec:
    __slots__ = ("mesh", "placements", "shape")

    def __init__(self, mesh, placements, shape):
        self.mesh, self.placements, self.shape = mesh, placements, tuple(shape)

    def same_layout(self, other):
        return self.mesh == other.mesh and self.placements == other.placements and \
            self.shape == other.shape


def _local_block(full, spec):
    """This rank's block of the global tensor ``full`` under spec (a contiguous copy)."""
    p = spec.placements[0]
    if not isinstance(p, Shard):
        return full.clone(memory_format=tp.contiguous_format)
    n = spec.mesh.size()
    start, length = _block(full.shape[p.dim], n, spec.mesh.get_local_rank())
    return full.narrow(p.dim, start, length).clone(memory_format=tp.contiguous_format)


def _gather_dim(local, dim, size, mesh):
    """The global tensor of ``size`` rows along ``dim`` from the ranks' chunk blocks."""
    import tensorplay.distributed as dist
    n = mesh.size()
    if n == 1:
        return local.clone(memory_format=tp.contiguous_format)
    c = -(-size // n) if size else 0
    x = local.movedim(dim, 0)
    rest = tuple(x.shape[1:])
    buf = tp.zeros((c,) + rest, dtype=local.dtype, device=local.device)
    buf[:x.shape[0]] = x
    out = tp.empty((n * c,) + rest, dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(out, buf, group=mesh.get_group())
    return out[:size].movedim(0, dim).contiguous()


_REDUCE = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN", "product": "PRODUCT"}


def _to_full(local, spec):
    """The global value (every rank's copy) of a local block under spec."""
    import tensorplay.distributed as dist
    p = spec.placements[0]
    if isinstance(p, Replicate):
        return local
    if isinstance(p, Shard):
        return _gather_dim(local, p.dim, spec.shape[p.dim], spec.mesh)
    out = local.clone(memory_format=tp.contiguous_format)
    dist.all_reduce(out, op=getattr(dist.ReduceOp, _REDUCE[p.reduce_op]), group=spec.mesh.get_group())
    return out


def _redistribute_local(local, spec, placements):
    src, dst = spec.placements[0], placements[0]
    if src == dst:
        return local
    if isinstance(dst, Partial):
        # Replicate -> Partial: values whose reduction is the replicated value
        if not isinstance(src, Replicate) or dst.reduce_op == "product":
            raise RuntimeError(f"redistribute from {src} to {dst} is not supported")
        if dst.reduce_op == "sum" and spec.mesh.get_local_rank() != 0:
            return tp.zeros_like(local)
        return local
    full = _to_full(local, spec)
    if isinstance(dst, Replicate):
        return full
    return _local_block(full, _Spec(spec.mesh, placements, spec.shape))


def _make(local, spec, requires_grad=False):
    shape = spec.shape
    r = Tensor._make_wrapper_subclass(DTensor, shape, strides=_contiguous_strides(shape),
                                      dtype=local.dtype, device=local.device,
                                      requires_grad=requires_grad)
    d = r.__dict__
    d["_local_tensor"] = local
    d["_spec"] = spec
    return r


# ---- dispatch ----
_LOCAL_OPS = frozenset({"detach", "clone", "alias", "_to_copy", "_to_dtype", "copy_", "fill_",
                        "zero_", "lift_fresh", "contiguous"})
_MIXED_MSG = ("{} got mixed torch.Tensor and DTensor, need to convert all torch.Tensor to "
              "DTensor before calling distributed operators!")


def _unwrap(x):
    return x._local_tensor if isinstance(x, DTensor) else x


def _is_inplace(func):
    return func._opname.endswith("_") and not func._opname.startswith("_")


def _local_rule(func, flat, spec_tree, dts):
    """The results of the local rule, or None when the op needs the global values."""
    spec = dts[0]._spec
    if isinstance(spec.placements[0], Partial):
        return None
    if not (Tag.pointwise in func.tags or func._opname in _LOCAL_OPS):
        return None
    for a in flat:
        if isinstance(a, DTensor):
            if a is not dts[0] and not a._spec.same_layout(spec):
                return None
        elif isinstance(a, Tensor) and a.dim() != 0:
            raise RuntimeError(_MIXED_MSG.format(func))
    args, kwargs = tree_unflatten([_unwrap(a) for a in flat], spec_tree)
    out = func(*args, **kwargs)
    if _is_inplace(func):
        return flat[0] if isinstance(flat[0], DTensor) else out
    local_shape = tuple(dts[0]._local_tensor.shape)
    outs, out_tree = tree_flatten(out)
    if any(isinstance(o, Tensor) and tuple(o.shape) != local_shape for o in outs):
        return None
    return tree_unflatten([_make(o, spec) if isinstance(o, Tensor) else o for o in outs], out_tree)


def _global_rule(func, flat, spec_tree, dts):
    mesh = dts[0]._spec.mesh
    for a in dts:
        if a._spec.mesh != mesh:
            raise RuntimeError(f"{func}: DTensor arguments on different device meshes "
                               f"({mesh} and {a._spec.mesh})")
    for a in flat:
        if isinstance(a, Tensor) and not isinstance(a, DTensor) and a.dim() != 0:
            raise RuntimeError(_MIXED_MSG.format(func))
    full = [_to_full(a._local_tensor, a._spec) if isinstance(a, DTensor) else a for a in flat]
    args, kwargs = tree_unflatten(full, spec_tree)
    out = func(*args, **kwargs)
    if _is_inplace(func) and isinstance(flat[0], DTensor):
        target = flat[0]
        with tp.no_grad():
            target._local_tensor.copy_(_local_block(out, target._spec))
        return target
    rep = (Replicate(),)
    outs, out_tree = tree_flatten(out)
    return tree_unflatten([_make(o, _Spec(mesh, rep, o.shape)) if isinstance(o, Tensor) else o
                           for o in outs], out_tree)


def _like_rule(func, args, kwargs):
    x = args[0]
    spec = x._spec
    rg = kwargs.pop("requires_grad", False)
    name = getattr(func, "__name__", "")
    if name in ("rand_like", "randn_like", "randint_like"):
        # drawn globally (same generator state on every rank gives one global draw), then
        # each rank keeps its block: the values a single process would draw
        full = func(_C.empty(spec.shape, dtype=x.dtype), *args[1:], **kwargs)
        local = _local_block(full, spec)
    else:
        local = func(x._local_tensor, *args[1:], **kwargs)
    return _make(local, spec, requires_grad=rg)


class DTensor(Tensor):
    """A global tensor distributed over a DeviceMesh: ``placements`` say how, ``to_local()``
    is this rank's block, ``full_tensor()`` the whole value (Note [DTensor lite])."""

    @staticmethod
    def __new__(cls, local_tensor, spec, *, requires_grad=False):
        return _make(local_tensor, spec, requires_grad)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _LIKE_FUNCS and args and isinstance(args[0], DTensor):
            with _C.DisableTorchFunctionSubclass():
                return _like_rule(func, args, dict(kwargs or {}))
        return _C._disabled_torch_function_impl(func, types, args, kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        flat, spec_tree = tree_flatten((args, kwargs or {}))
        dts = [a for a in flat if isinstance(a, DTensor)]
        out = _local_rule(func, flat, spec_tree, dts)
        if out is None:
            out = _global_rule(func, flat, spec_tree, dts)
        return out

    # ---- PyTorch's API ----
    @property
    def placements(self):
        return self._spec.placements

    @property
    def device_mesh(self):
        return self._spec.mesh

    def to_local(self, *, grad_placements=None):
        if not (_C.is_grad_enabled() and self.requires_grad):
            return self._local_tensor
        return _ToLocal.apply(self, grad_placements)

    def full_tensor(self, *, grad_placements=None):
        return self.redistribute(self._spec.mesh, (Replicate(),)).to_local(
            grad_placements=grad_placements)

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False,
                     forward_dtype=None, backward_dtype=None):
        mesh = device_mesh if device_mesh is not None else self._spec.mesh
        if mesh != self._spec.mesh:
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        if placements is None:
            raise RuntimeError("placements is needed for redistribute!")
        placements = _normalize(placements, self.dim(), mesh)
        src = self._spec.placements[0]
        for p in placements:
            if isinstance(p, Partial) and not isinstance(src, (Partial, Replicate)):
                raise RuntimeError(f"Can not redistribute from {src} to {p}, redistributing to "
                                   f"Partial is for internal use only!")
        if placements == self._spec.placements:
            return self
        if _C.is_grad_enabled() and self.requires_grad:
            return _Redistribute.apply(self, placements)
        return _redistribute(self, placements)

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None):
        import tensorplay.distributed as dist
        if device_mesh is None:
            raise RuntimeError("No device mesh is currently active!")
        if not isinstance(device_mesh, DeviceMesh):
            raise TypeError(f"device_mesh must be a DeviceMesh, got {type(device_mesh).__name__}")
        if isinstance(local_tensor, DTensor):
            raise RuntimeError("from_local: the local tensor is already a DTensor")
        placements = _normalize(placements, local_tensor.dim(), device_mesh)
        if shape is None:
            shape = list(local_tensor.shape)
            p = placements[0]
            if isinstance(p, Shard):
                shape[p.dim] *= device_mesh.size()  # even sharding assumed (PyTorch's rule)
        if run_check and isinstance(placements[0], Replicate):
            with tp.no_grad():
                local_tensor = local_tensor.clone()
                dist.broadcast(local_tensor, src=device_mesh._ranks[0], group=device_mesh.get_group())
        spec = _Spec(device_mesh, placements, tuple(shape))
        if _C.is_grad_enabled() and local_tensor.requires_grad:
            return _FromLocal.apply(local_tensor, spec)
        return _make(local_tensor, spec)

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self._spec.mesh!r}, "
                f"placements={self._spec.placements!r})")

    __str__ = __repr__

    def __deepcopy__(self, memo):
        # a new block on the same mesh (a mesh, holding process groups, is not copied)
        if id(self) in memo:
            return memo[id(self)]
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        new = _make(self._local_tensor.detach().clone(), self._spec,
                    requires_grad=self.requires_grad)
        if getattr(self, "_is_param", False):
            from tensorplay.nn import Parameter
            new = Parameter(new, requires_grad=self.requires_grad)
        memo[id(self)] = new
        if self.grad is not None:
            import copy
            new.grad = copy.deepcopy(self.grad, memo)
        return new

    def __reduce_ex__(self, protocol):
        # a DTensor's value spans processes: refuse, rather than pickle a wrapper without data
        raise RuntimeError("DTensor cannot be pickled directly; save it with "
                           "tensorplay.distributed.checkpoint or call full_tensor() first")



def _redistribute(dt, placements):
    spec = dt._spec
    local = _redistribute_local(dt._local_tensor, spec, placements)
    return _make(local, _Spec(spec.mesh, placements, spec.shape))


class _ToLocal(tp.autograd.Function):
    @staticmethod
    def forward(ctx, dt, grad_placements):
        ctx.spec = dt._spec
        ctx.grad_placements = grad_placements
        return dt._local_tensor.view_as(dt._local_tensor)

    @staticmethod
    def backward(ctx, grad):
        spec = ctx.spec
        gp = ctx.grad_placements
        if gp is None:
            return _make(grad.contiguous(), spec), None
        gspec = _Spec(spec.mesh, _normalize(gp, len(spec.shape), spec.mesh), spec.shape)
        return _redistribute(_make(grad.contiguous(), gspec), spec.placements), None


class _FromLocal(tp.autograd.Function):
    @staticmethod
    def forward(ctx, local, spec):
        ctx.spec = spec
        return _make(local.view_as(local), spec)

    @staticmethod
    def backward(ctx, grad):
        if isinstance(grad, DTensor):
            if grad._spec.placements != ctx.spec.placements:
                grad = _redistribute(grad, ctx.spec.placements)
            return grad._local_tensor, None
        return _local_block(grad, ctx.spec), None


class _Redistribute(tp.autograd.Function):
    @staticmethod
    def forward(ctx, dt, placements):
        ctx.placements = dt._spec.placements
        return _redistribute(dt, placements)

    @staticmethod
    def backward(ctx, grad):
        src = grad._spec.placements[0]
        dst = ctx.placements[0]
        if isinstance(src, Replicate) and isinstance(dst, Partial):
            # the gradient of a Partial -> Replicate reduction is the same on every rank
            return _make(grad._local_tensor, _Spec(grad._spec.mesh, (Replicate(),),
                                                   grad._spec.shape)), None
        return _redistribute(grad, ctx.placements), None


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """``tensor`` laid out over ``device_mesh``: each rank keeps its block of the tensor of
    mesh rank ``src_data_rank`` (broadcast first), or of its own tensor when it is None."""
    import tensorplay.distributed as dist
    if device_mesh is None:
        raise RuntimeError("No device mesh is currently active!")
    if isinstance(tensor, DTensor):
        if tensor.device_mesh != device_mesh:
            raise ValueError(f"Cannot distribute a DTensor with device mesh {tensor.device_mesh} "
                             f"to a different device mesh {device_mesh}.")
        if tensor.placements != tuple(placements):
            raise ValueError(f"Cannot distribute a DTensor with placements {tensor.placements} "
                             f"to a different placements {placements}. do you want to call "
                             f"`redistribute` instead?")
        return tensor
    placements = _normalize(placements, tensor.dim(), device_mesh)
    if any(isinstance(p, Partial) for p in placements):
        raise RuntimeError("distribute_tensor: Partial placements are not supported as a source")
    rg = tensor.requires_grad
    with tp.no_grad():
        full = tensor.detach()
        if src_data_rank is not None and device_mesh.size() > 1:
            full = full.clone(memory_format=tp.contiguous_format)
            dist.broadcast(full, src=device_mesh._ranks[src_data_rank],
                           group=device_mesh.get_group())
        spec = _Spec(device_mesh, placements, tuple(tensor.shape))
        local = _local_block(full, spec)
    return _make(local, spec, requires_grad=rg)


_LIKE_FUNCS = frozenset()


def _init_like_funcs():
    global _LIKE_FUNCS
    _LIKE_FUNCS = frozenset(f for f in (tp.zeros_like, tp.ones_like, tp.empty_like, tp.full_like,
                                        tp.rand_like, tp.randn_like, tp.randint_like) if f)


_init_like_funcs()


# ---- factories: DTensors made blockwise (random ones drawn globally, as one process would) ----
def _size_of(size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return tuple(size[0])
    return tuple(size)


def _factory(name, draw_globally):
    def factory(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
                placements=None, **fill):
        if device_mesh is None:
            raise RuntimeError("No device mesh is currently active!")
        shape = _size_of(size)
        placements = _normalize(placements, len(shape), device_mesh)
        spec = _Spec(device_mesh, placements, shape)
        make = getattr(tp, name)
        args = (fill.pop("fill_value"),) if name == "full" else ()
        with tp.no_grad():
            if draw_globally:
                local = _local_block(make(shape, *args, dtype=dtype, **fill), spec)
            else:
                p = placements[0]
                local_shape = list(shape)
                if isinstance(p, Shard):
                    local_shape[p.dim] = _block(shape[p.dim], device_mesh.size(),
                                                device_mesh.get_local_rank())[1]
                local = make(tuple(local_shape), *args, dtype=dtype, **fill)
        return _make(local, spec, requires_grad=requires_grad)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (f"A DTensor of ``size`` laid out by ``placements`` over ``device_mesh`` "
                       f"(``tensorplay.{name}``'s values).")
    return factory


zeros = _factory("zeros", False)
ones = _factory("ones", False)
empty = _factory("empty", False)
rand = _factory("rand", True)
randn = _factory("randn", True)
_full = _factory("full", False)


def full(size, fill_value, *, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of ``size`` filled with ``fill_value``, laid out by ``placements``."""
    return _full(size, fill_value=fill_value, requires_grad=requires_grad, dtype=dtype,
                 layout=layout, device_mesh=device_mesh, placements=placements)
