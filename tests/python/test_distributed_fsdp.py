"""DTensor, fully_shard (FSDP2) and distributed checkpoints on CPU (Gloo), on 2 and 3 ranks
against single-process references. Ranks are processes started by tp.multiprocessing.spawn;
each spawn runs many checks, as a process start costs about a second here."""
import gc
import os
import socket
import subprocess
import sys
import weakref
from datetime import timedelta

import pytest

import tensorplay as tp
import tensorplay.distributed as dist
import tensorplay.multiprocessing as mp

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="built without Gloo")


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))


def _chunks(n, world):
    # torch.chunk's blocks, padded with empty ones up to world
    c = -(-n // world)
    return [max(0, min(c, n - r * c)) for r in range(world)]


# ---------------------------------------------------------------- DTensor
def _dtensor_checks(rank, world):
    from tensorplay.distributed.tensor import (DTensor, Partial, Replicate, Shard,
                                               distribute_tensor, init_device_mesh)
    mesh = init_device_mesh("cpu", (world,))
    assert mesh.size() == world and mesh.get_local_rank() == rank and mesh.ndim == 1
    tp.manual_seed(0)
    x = tp.randn(5, 4)  # 5 rows: uneven over 2 and 3 ranks; 4 columns: rank 2 of 3 gets none
    d = distribute_tensor(x, mesh, [Shard(0)])
    assert isinstance(d, DTensor) and d.shape == x.shape and d.placements == (Shard(0),)
    assert d.device_mesh is mesh
    rows = _chunks(5, world)
    assert d.to_local().shape == (rows[rank], 4)
    assert tp.equal(d.to_local(), x[sum(rows[:rank]):sum(rows[:rank + 1])])
    assert tp.equal(d.full_tensor(), x)
    # round trips Shard(0) -> Replicate -> Shard(1) -> Shard(0), uneven both ways
    r = d.redistribute(mesh, [Replicate()])
    assert r.placements == (Replicate(),) and tp.equal(r.to_local(), x)
    s1 = r.redistribute(mesh, [Shard(1)])
    cols = _chunks(4, world)
    assert s1.to_local().shape == (5, cols[rank])
    assert tp.equal(s1.full_tensor(), x)
    back = s1.redistribute(mesh, [Shard(0)])
    assert tp.equal(back.to_local(), d.to_local())
    # negative dims normalise; the same placements give the same object
    assert distribute_tensor(x, mesh, [Shard(-1)]).placements == (Shard(1),)
    assert d.redistribute(mesh, [Shard(0)]) is d
    # pointwise ops stay sharded; reductions see the global value
    y = d * 2 + 1
    assert isinstance(y, DTensor) and y.placements == (Shard(0),)
    assert tp.allclose(y.full_tensor(), x * 2 + 1)
    s = d.sum()
    assert tp.allclose(s.full_tensor(), x.sum())
    assert d.double().placements == (Shard(0),) and tp.equal(d.double().full_tensor(), x.double())
    assert tp.allclose(tp.zeros_like(d).full_tensor(), tp.zeros(5, 4))
    assert tp.zeros_like(d).to_local().shape == d.to_local().shape
    # factories: blocks made in place; random ones are one process's draw
    import tensorplay.distributed.tensor as dtensor
    z = dtensor.zeros(5, 4, device_mesh=mesh, placements=[Shard(0)])
    assert z.to_local().shape == d.to_local().shape and tp.equal(z.full_tensor(), tp.zeros(5, 4))
    f = dtensor.full((4, 5), 2.5, device_mesh=mesh, placements=[Shard(1)], dtype=tp.float64)
    assert tp.equal(f.full_tensor(), tp.full((4, 5), 2.5, dtype=tp.float64))
    tp.manual_seed(7)
    rnd = dtensor.randn(5, 4, device_mesh=mesh, placements=[Shard(0)])
    tp.manual_seed(7)
    assert tp.equal(rnd.full_tensor(), tp.randn(5, 4))
    # Partial: the sum of the ranks' values
    p = DTensor.from_local(tp.full((3,), float(rank + 1)), mesh, [Partial()])
    assert tp.equal(p.full_tensor(), tp.full((3,), world * (world + 1) / 2))
    # from_local with an explicit (uneven) global shape; autograd through from_local /
    # full_tensor reaches the local block
    local = x[sum(rows[:rank]):sum(rows[:rank + 1])].clone().requires_grad_()
    dl = DTensor.from_local(local, mesh, [Shard(0)], shape=(5, 4), stride=(4, 1))
    assert tp.equal(dl.full_tensor(), x)
    w = tp.arange(20.).reshape(5, 4)
    (dl.full_tensor() * w).sum().backward()
    assert tp.equal(local.grad, w[sum(rows[:rank]):sum(rows[:rank + 1])])
    # distribute_tensor takes the source rank's values
    mine = tp.full((4,), float(rank))
    assert tp.equal(distribute_tensor(mine, mesh, [Replicate()]).to_local(), tp.zeros(4))
    assert tp.equal(distribute_tensor(mine, mesh, [Replicate()], src_data_rank=None).to_local(), mine)
    # an optimizer steps DTensor parameters blockwise (for-loop path, state as DTensors)
    pa = tp.nn.Parameter(distribute_tensor(x.clone(), mesh, [Shard(0)]))
    ref = tp.nn.Parameter(x.clone())
    g = tp.randn(5, 4)
    pa.grad = distribute_tensor(g, mesh, [Shard(0)])
    ref.grad = g.clone()
    for opt_cls in (tp.optim.AdamW, tp.optim.SGD):
        o1 = opt_cls([ref], lr=0.1) if opt_cls is tp.optim.AdamW else opt_cls([ref], lr=0.1, momentum=0.9)
        o2 = opt_cls([pa], lr=0.1) if opt_cls is tp.optim.AdamW else opt_cls([pa], lr=0.1, momentum=0.9)
        o1.step()
        o2.step()
        o1.step()
        o2.step()
        assert tp.allclose(pa.full_tensor(), ref, atol=1e-6), opt_cls
    assert isinstance(o2.state[pa]["momentum_buffer"], DTensor)
    # deepcopy: a new block on the same mesh, a Parameter stays one
    import copy
    pc = copy.deepcopy(pa)
    assert isinstance(pc, tp.nn.Parameter) and isinstance(pc, DTensor) and pc.device_mesh is mesh
    assert tp.equal(pc.to_local(), pa.to_local()) and isinstance(pc.grad, DTensor)
    with tp.no_grad():
        pc.add_(1)
    assert not tp.equal(pc.to_local(), pa.to_local()) or pa.to_local().numel() == 0
    # bad input: PyTorch's exception classes
    with pytest.raises(RuntimeError, match="aten.add.Tensor got mixed torch.Tensor and DTensor"):
        d + tp.ones(5, 4)
    with pytest.raises(RuntimeError, match="aten.matmul.default got mixed"):
        d @ tp.ones(4, 2)
    with pytest.raises(ValueError, match="same length"):
        distribute_tensor(x, mesh, [Shard(0), Shard(1)])
    with pytest.raises(ValueError, match="different placements"):
        distribute_tensor(d, mesh, [Replicate()])
    with pytest.raises(RuntimeError, match=r"from S\(0\) to P\(sum\)"):
        d.redistribute(mesh, [Partial()])
    with pytest.raises(RuntimeError, match="Mesh should not be bigger"):
        init_device_mesh("cpu", (world + 1,))
    return mesh


# ---------------------------------------------------------------- FSDP
def _mlp(dtype=tp.float64):
    tp.manual_seed(0)
    # out features 4 and 5: over 3 ranks the last rank holds no rows of the 4-row weight
    return tp.nn.Sequential(tp.nn.Linear(6, 4), tp.nn.Tanh(), tp.nn.Linear(4, 5), tp.nn.Tanh(),
                            tp.nn.Linear(5, 3)).to(dtype)


def _shard(m, nested, **kw):
    from tensorplay.distributed.fsdp import fully_shard
    if nested:
        for layer in m:
            if isinstance(layer, tp.nn.Linear):
                fully_shard(layer, **kw)
    return fully_shard(m, **kw)


def _train(rank, world, X, Y, model, steps=3, opt=tp.optim.AdamW, accumulate=False, optim=None):
    """Losses of training ``model`` on this rank's share of X, Y (world == 1: the
    single-process reference on the whole batch) with a new optimizer of class opt, or optim."""
    n = X.shape[0] // world
    lo, hi = rank * n, (rank + 1) * n
    o = optim if optim is not None else opt(model.parameters(), lr=0.05) \
        if opt is tp.optim.AdamW else opt(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        o.zero_grad()
        if accumulate and step == 1:
            # half the local batch without gradient sync, then the other half
            h = n // 2
            model.set_requires_gradient_sync(False)
            (tp.nn.functional.mse_loss(model(X[lo:lo + h]), Y[lo:lo + h]) * h / n).backward()
            model.set_requires_gradient_sync(True)
            loss = tp.nn.functional.mse_loss(model(X[lo + h:hi]), Y[lo + h:hi]) * (n - h) / n
        else:
            loss = tp.nn.functional.mse_loss(model(X[lo:hi]), Y[lo:hi])
        loss.backward()
        o.step()
        losses.append(loss.detach())
    if world > 1:
        for i, l in enumerate(losses):  # the global batch's loss
            dist.all_reduce(l, op=dist.ReduceOp.AVG)
            losses[i] = l.item()
    else:
        losses = [l.item() for l in losses]
    return losses


def _close(a, b, tol, what):
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    err = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    assert err <= tol, (what, err)


def _fsdp_checks(rank, world):
    from tensorplay.distributed.fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy,
                                             fully_shard)
    from tensorplay.distributed.tensor import DTensor, Shard, distribute_tensor, init_device_mesh
    X, Y = _batch()
    trained = {}
    for opt in (tp.optim.AdamW, tp.optim.SGD):
        ref = trained[opt] = _mlp()
        trained[opt, "losses"] = _train(0, 1, X, Y, ref, opt=opt)
    for nested in (False, True):
        for raf in (True, False):
            # AdamW hardly sees a gradient's scale: SGD runs too
            opt = tp.optim.AdamW if raf else tp.optim.SGD
            ref, ref_losses = trained[opt], trained[opt, "losses"]
            if nested and not raf:  # sharded in float32, then converted: the shards convert
                m = _shard(_mlp(tp.float32), nested, reshard_after_forward=raf).double()
            else:
                m = _shard(_mlp(), nested, reshard_after_forward=raf)
            assert isinstance(m, FSDPModule) and type(m).__name__ == "FSDPSequential"
            for p in m.parameters():
                assert isinstance(p, DTensor) and isinstance(p, tp.nn.Parameter)
                assert p.placements == (Shard(0),)
            assert m[0].weight.to_local().shape == (_chunks(4, world)[rank], 6)
            losses = _train(rank, world, X, Y, m, opt=opt)
            for a, b in zip(ref_losses, losses):
                assert abs(a - b) <= 1e-6, (nested, raf, ref_losses, losses)
            for (k, a), b in zip(ref.named_parameters(), m.parameters()):
                assert isinstance(b.grad, DTensor) and b.grad.placements == (Shard(0),)
                _close(b.full_tensor(), a, 1e-6, (nested, raf, k))
    # reshard_after_forward: non-root groups drop their unsharded parameters after forward
    # (the saved tensors hold references, not copies) and gather again for backward
    import tensorplay.distributed.fsdp._fully_shard as impl
    pack, packed = impl._pack, []

    def counting_pack(t):
        r = pack(t)
        packed.append(type(r).__name__)
        return r
    impl._pack = counting_pack
    for raf in (True, False):
        m = _shard(_mlp(), True, reshard_after_forward=raf)
        during = []
        m[2].register_forward_pre_hook(
            lambda mod, a: during.extend(weakref.ref(t) for t in mod._fsdp_group.unsharded))
        out = m(X[:4])
        gc.collect()
        inner = m[2]._fsdp_group
        assert (inner.unsharded is None) == raf
        assert isinstance(m[2].weight, DTensor) == raf
        assert len(during) == 2 and all((r() is None) == raf for r in during)
        # the weights backward reads (of the Linears whose input needs a gradient) were
        # saved as references to their groups, not as tensors
        assert packed.count("_Packed") == 2, packed
        del packed[:]
        out.sum().backward()
        assert all(layer._fsdp_group.unsharded is None for layer in (m, m[0], m[2], m[4]))
        assert all(isinstance(p.grad, DTensor) for p in m.parameters())
    impl._pack = pack
    # saved-tensor hooks around a sharded forward still see the tensors FSDP does not keep
    outer = []

    def outer_pack(t):  # notes whether t lives on an unsharded parameter's storage
        outer.append(t.untyped_storage().data_ptr() in impl._state()["saved"])
        return t.clone()
    m = _shard(_mlp(), True)
    with tp.autograd.graph.saved_tensors_hooks(outer_pack, lambda t: t):
        out = m(X[:4])
    assert len(outer) >= 3 and not any(outer), outer
    out.sum().backward()
    ref = _mlp()
    ref(X[:4]).sum().backward()
    for (k, a), b in zip(ref.named_parameters(), m.parameters()):
        _close(b.grad.full_tensor(), a.grad, 1e-12, ("outer hooks", k))
    m = _shard(_mlp(), False, reshard_after_forward=True)
    out = m(X[:4])
    assert m._fsdp_group.unsharded is not None  # the root keeps them for backward
    out.sum().backward()
    assert m._fsdp_group.unsharded is None
    with tp.no_grad():
        m(X[:4])
    assert m._fsdp_group.unsharded is None  # no backward follows: the root reshards too
    m = _shard(_mlp(), True, reshard_after_forward=True)
    lin = m[2]
    lin.unshard()
    w = lin.weight
    assert not isinstance(w, DTensor) and w.shape == (5, 4)
    _close(w.detach(), _mlp()[2].weight.detach(), 0, "unshard")
    handle = m[0].unshard(async_op=True)
    handle.wait()
    assert not isinstance(m[0].weight, DTensor)
    refs = [weakref.ref(lin._fsdp_group.unsharded[0])]
    lin.reshard()
    m[0].reshard()
    gc.collect()
    assert isinstance(lin.weight, DTensor) and refs[0]() is None
    out = m(X[:4])
    gc.collect()
    assert lin._fsdp_group.unsharded is None  # freed after forward, gathered again for backward
    out.sum().backward()
    # state_dict holds the shards in any state
    m2 = _shard(_mlp(), True, reshard_after_forward=False)
    m2(X[:2])
    assert all(isinstance(v, DTensor) for v in m2.state_dict().values())
    # gradient accumulation without sync equals the full batch
    ref = _mlp()
    ref_losses = _train(0, 1, X, Y, ref, opt=tp.optim.SGD)
    m = _shard(_mlp(), True)
    losses = _train(rank, world, X, Y, m, opt=tp.optim.SGD, accumulate=True)
    for (k, a), b in zip(ref.named_parameters(), m.parameters()):
        _close(b.full_tensor(), a, 1e-6, ("no sync", k))
    # clip_grad_norm_ over DTensor gradients: the global norm, every block scaled
    ref, m = _mlp(), _shard(_mlp(), True)
    ref(X).pow(2).sum().backward()
    n = X.shape[0] // world
    (m(X[rank * n:(rank + 1) * n]).pow(2).sum() * world).backward()  # averaged: the sum
    n1 = tp.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
    n2 = tp.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
    _close(n2.full_tensor(), n1, 1e-9, "clip norm")
    for (k, a), b in zip(ref.named_parameters(), m.parameters()):
        _close(b.grad.full_tensor(), a.grad, 1e-9, ("clip", k))
    # activation checkpointing inside sharded blocks, both variants: the reentrant one's
    # recomputation reads the gathered parameters as leaves, whose gradients are reduced too
    from tensorplay.utils.checkpoint import checkpoint

    class Block(tp.nn.Module):
        def __init__(self, reentrant):
            super().__init__()
            self.lin = tp.nn.Linear(6, 6).double()
            self.reentrant = reentrant

        def forward(self, x):
            return checkpoint(lambda t: tp.tanh(self.lin(t)), x, use_reentrant=self.reentrant)
    for reentrant in (False, True):
        tp.manual_seed(4)
        ref = tp.nn.Sequential(Block(reentrant), Block(reentrant))
        tp.manual_seed(4)
        blocks = tp.nn.Sequential(Block(reentrant), Block(reentrant))
        for blk in blocks:
            fully_shard(blk)
        fully_shard(blocks)
        ref(X.clone().requires_grad_()).pow(2).mean().backward()
        blocks(X[rank * n:(rank + 1) * n].clone().requires_grad_()).pow(2).mean().backward()
        for (k, a), b in zip(ref.named_parameters(), blocks.parameters()):
            _close(b.grad.full_tensor(), a.grad, 1e-12, ("checkpoint", reentrant, k))
        assert all(blk._fsdp_group.unsharded is None for blk in blocks)
    # a forward that raises leaves no hooks behind
    class Boom(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tp.nn.Linear(6, 3).double()

        def forward(self, x, fail=False):
            y = self.lin(x)
            if fail:
                raise ValueError("boom")
            return y
    boom = fully_shard(Boom())
    with pytest.raises(ValueError, match="boom"):
        boom(X[:2], fail=True)
    assert not tp.autograd.graph._active_hooks() and impl._state()["depth"] == 0
    assert not impl._state()["saved"]
    boom(X[:2]).sum().backward()
    assert isinstance(boom.lin.weight.grad, DTensor)
    # a frozen parameter gets no gradient; an ignored one stays a plain local parameter
    def frozen_mlp():
        m = _mlp()
        m[0].bias.requires_grad_(False)
        return m
    ref, m = frozen_mlp(), frozen_mlp()
    fully_shard(m[0])
    fully_shard(m, ignored_params={m[2].bias})
    assert not isinstance(m[2].bias, DTensor) and isinstance(m[0].bias, DTensor)
    o1 = tp.optim.SGD([p for p in ref.parameters() if p.requires_grad], lr=0.1)
    o2 = tp.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.1)
    for _ in range(2):
        o1.zero_grad()
        o2.zero_grad()
        ref(X).pow(2).mean().backward()
        m(X[rank * n:(rank + 1) * n]).pow(2).mean().backward()
        dist.all_reduce(m[2].bias.grad, op=dist.ReduceOp.AVG)  # ignored: the user's to reduce
        o1.step()
        o2.step()
    assert m[0].bias.grad is None
    for (k, a), b in zip(ref.named_parameters(), m.parameters()):
        _close(b.full_tensor() if isinstance(b, DTensor) else b.detach(), a.detach(), 1e-9, k)
    # CPU offload: shards and gradients on the CPU, training unchanged
    m = _shard(_mlp(), True, offload_policy=CPUOffloadPolicy())
    _train(rank, world, X, Y, m)
    for (k, a), b in zip(trained[tp.optim.AdamW].named_parameters(), m.parameters()):
        assert b.to_local().device.type == "cpu" and b.grad.to_local().device.type == "cpu"
        _close(b.full_tensor(), a, 1e-6, ("offload", k))
    # mixed precision: compute in param_dtype, reduce in reduce_dtype, grads in the
    # parameters' dtype
    X32, Y32 = X.float(), Y.float()
    ref = _mlp(tp.float32)
    ref_losses = _train(0, 1, X32, Y32, ref)
    seen = []
    m = _shard(_mlp(tp.float32), True, mp_policy=MixedPrecisionPolicy(
        param_dtype=tp.float64, reduce_dtype=tp.float64, output_dtype=tp.float32))
    m[2].register_forward_pre_hook(lambda mod, a: seen.append((mod.weight.dtype, a[0].dtype)))
    out = m(X32[:2])
    assert out.dtype == tp.float32 and seen == [(tp.float64, tp.float64)]
    out.sum().backward()
    assert all(p.grad.dtype == tp.float32 and p.dtype == tp.float32 for p in m.parameters())
    m = _shard(_mlp(tp.float32), True, mp_policy=MixedPrecisionPolicy(param_dtype=tp.float64))
    losses = _train(rank, world, X32, Y32, m)
    for a, b in zip(ref_losses, losses):
        assert abs(a - b) <= 1e-5, (ref_losses, losses)
    m = _shard(_mlp(tp.float32), True, mp_policy=MixedPrecisionPolicy(
        param_dtype=tp.bfloat16, reduce_dtype=tp.float32))
    losses = _train(rank, world, X32, Y32, m)
    for a, b in zip(ref_losses, losses):
        assert abs(a - b) <= 5e-2, (ref_losses, losses)
    # bad input
    with pytest.raises(ValueError, match="containers"):
        fully_shard(tp.nn.ModuleList([tp.nn.Linear(2, 2)]))
    with pytest.raises(ValueError, match="reshard_after_forward"):
        fully_shard(tp.nn.Linear(2, 2), reshard_after_forward="yes")
    with pytest.raises(AssertionError, match="already been applied"):
        fully_shard(m)
    with pytest.raises(IndexError, match="out of range"):
        distribute_tensor(X, init_device_mesh("cpu", (world,)), [Shard(2)])


def _world_checks(rank, world, port):
    _init(rank, world, port)
    _dtensor_checks(rank, world)
    _fsdp_checks(rank, world)
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
def test_dtensor_and_fsdp_match_single_process(world):
    mp.spawn(_world_checks, args=(world, _port()), nprocs=world)


# ---------------------------------------------------------------- checkpoints
def _values():
    tp.manual_seed(3)
    m = _mlp()
    sd = {k: v.detach().clone() for k, v in m.state_dict().items()}
    return sd, {"w": tp.randn(5, 3), "r": tp.randn(3), "plain": tp.arange(6.),
                "obj": {"step": 7, "names": ["a", "b"]}}


def _save(rank, world, port, path):
    import tensorplay.distributed.checkpoint as dcp
    from tensorplay.distributed.checkpoint.state_dict import get_model_state_dict
    from tensorplay.distributed.tensor import Replicate, Shard, distribute_tensor, init_device_mesh
    _init(rank, world, port)
    mesh = init_device_mesh("cpu", (world,))
    model_sd, extra = _values()
    m = _shard(_mlp(), True)
    sd = get_model_state_dict(m)
    for k, v in sd.items():
        with tp.no_grad():
            v.copy_(distribute_tensor(model_sd[k], mesh, [Shard(0)]))
    state = {"model": sd, "w": distribute_tensor(extra["w"], mesh, [Shard(0)]),
             "r": distribute_tensor(extra["r"], mesh, [Replicate()]), "plain": extra["plain"],
             "obj": extra["obj"]}
    dcp.save(state, checkpoint_id=path)
    # training state: two AdamW steps, model and optimizer (its moments are DTensors)
    X, Y = _batch()
    m = _shard(_mlp(), True)
    o = tp.optim.AdamW(m.parameters(), lr=0.05)
    _train(rank, world, X, Y, m, steps=2, optim=o)
    dcp.save({"model": m.state_dict(), "optim": o.state_dict()}, checkpoint_id=path + "_train")
    dist.destroy_process_group()


def _batch():
    tp.manual_seed(1)
    return tp.randn(12, 6, dtype=tp.float64), tp.randn(12, 3, dtype=tp.float64)


def _load(rank, world, port, path):
    import tensorplay.distributed.checkpoint as dcp
    from tensorplay.distributed.checkpoint.state_dict import (StateDictOptions,
                                                              get_model_state_dict,
                                                              get_optimizer_state_dict,
                                                              set_model_state_dict,
                                                              set_optimizer_state_dict)
    from tensorplay.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    _init(rank, world, port)
    mesh = init_device_mesh("cpu", (world,))
    model_sd, extra = _values()
    m = _shard(_mlp(), True)
    with tp.no_grad():
        for p in m.parameters():
            p.zero_()
    sd = get_model_state_dict(m)
    state = {"model": sd, "w": distribute_tensor(tp.zeros(5, 3), mesh, [Shard(1)]),
             "r": distribute_tensor(tp.zeros(3), mesh, [Shard(0)]), "plain": tp.zeros(6),
             "obj": {"step": 0, "names": None}}  # nested dicts are flattened: same keys
    dcp.load(state, checkpoint_id=path)
    set_model_state_dict(m, state["model"])
    full = get_model_state_dict(m, options=StateDictOptions(full_state_dict=True))
    for k, v in model_sd.items():
        assert tp.equal(full[k], v), k
    assert tp.equal(state["w"].full_tensor(), extra["w"])
    assert tp.equal(state["r"].full_tensor(), extra["r"])
    assert tp.equal(state["plain"], extra["plain"]) and state["obj"] == extra["obj"]
    # a full state dict loads into the sharded model
    with tp.no_grad():
        for p in m.parameters():
            p.zero_()
    set_model_state_dict(m, model_sd)
    for k, v in get_model_state_dict(m, options=StateDictOptions(full_state_dict=True)).items():
        assert tp.equal(v, model_sd[k]), k
    # bad input: every rank raises CheckpointException naming the failing ranks
    with pytest.raises(dcp.CheckpointException) as e:
        bad = {"w": tp.zeros(5, 3)} if rank == 0 else {"missing": tp.zeros(1)}
        dcp.load(bad, checkpoint_id=path)
    assert sorted(e.value.failures) == list(range(1, world))
    assert isinstance(e.value.failures[1][0], RuntimeError)
    assert "Missing key in checkpoint state_dict: missing" in str(e.value)
    with pytest.raises(dcp.CheckpointException) as e:
        dcp.load({"plain": tp.zeros(7)}, checkpoint_id=path)
    assert isinstance(e.value.failures[0][0], ValueError) and "Size mismatch" in str(e.value)
    # resume training saved on 2 ranks: one more step equals 3 steps of one process
    X, Y = _batch()
    m = _shard(_mlp(), True)
    o = tp.optim.AdamW(m.parameters(), lr=0.0)
    for p in m.parameters():
        p.grad = tp.zeros_like(p)
    o.step()  # creates the optimizer's state (lr 0: the parameters stay)
    state = {"model": m.state_dict(), "optim": o.state_dict()}
    dcp.load(state, checkpoint_id=path + "_train")
    m.load_state_dict(state["model"])
    o.load_state_dict(state["optim"])
    assert o.param_groups[0]["lr"] == 0.05
    _train(rank, world, X, Y, m, steps=1, optim=o)
    ref = _mlp()
    ref_o = tp.optim.AdamW(ref.parameters(), lr=0.05)
    _train(0, 1, X, Y, ref, steps=3, optim=ref_o)
    for (k, a), b in zip(ref.named_parameters(), m.parameters()):
        _close(b.full_tensor(), a, 1e-9, ("resumed", k))
    # optimizer state dicts keyed by parameter names: the gathered one is one process's;
    # one process's full state loads into a fresh sharded model and steps alike
    _train(0, 1, X, Y, ref, steps=1, optim=ref_o)
    _train(rank, world, X, Y, m, steps=1, optim=o)
    full = StateDictOptions(full_state_dict=True)
    osd = get_optimizer_state_dict(m, o, options=full)
    rsd = get_optimizer_state_dict(ref, ref_o)
    assert osd["param_groups"][0]["params"] == [k for k, _ in ref.named_parameters()]
    for name, entry in rsd["state"].items():
        for key in ("exp_avg", "exp_avg_sq"):
            _close(osd["state"][name][key], entry[key], 1e-9, (name, key))
    m2 = _shard(_mlp(), True)
    o2 = tp.optim.AdamW(m2.parameters(), lr=0.01)
    set_model_state_dict(m2, ref.state_dict())
    # copies: the state dict holds ref_o's own tensors, which its next step changes
    set_optimizer_state_dict(m2, o2, {"state": {n: {k: v.clone() for k, v in e.items()}
                                                for n, e in rsd["state"].items()},
                                      "param_groups": rsd["param_groups"]})
    assert o2.param_groups[0]["lr"] == 0.05
    _train(0, 1, X, Y, ref, steps=1, optim=ref_o)
    _train(rank, world, X, Y, m2, steps=1, optim=o2)
    for (k, a), b in zip(ref.named_parameters(), m2.parameters()):
        _close(b.full_tensor(), a, 1e-9, ("optimizer state loaded", k))
    dist.destroy_process_group()


def test_checkpoint_saved_on_2_ranks_loads_on_1_and_3(tmp_path):
    import tensorplay.distributed.checkpoint as dcp
    path = str(tmp_path / "ckpt")
    mp.spawn(_save, args=(2, _port(), path), nprocs=2)
    assert sorted(os.listdir(path)) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    mp.spawn(_load, args=(3, _port(), path), nprocs=3)
    # one process, no process group: plain tensors get the whole values
    model_sd, extra = _values()
    m = _mlp()
    with tp.no_grad():
        for p in m.parameters():
            p.zero_()
    state = {"model": m.state_dict(), "w": tp.zeros(5, 3), "r": tp.zeros(3), "plain": tp.zeros(6),
             "obj": {"step": None, "names": []}}
    dcp.load(state, checkpoint_id=path)
    for k, v in model_sd.items():
        assert tp.equal(m.state_dict()[k], v), k
    for k in ("w", "r", "plain"):
        assert tp.equal(state[k], extra[k]), k
    assert state["obj"] == extra["obj"]
    # and a single process saves a checkpoint that loads back
    dcp.save({"a": extra["w"], "b": [extra["r"], 1]}, checkpoint_id=str(tmp_path / "one"))
    back = {"a": tp.zeros(5, 3), "b": [tp.zeros(3), 0]}
    dcp.load(back, checkpoint_id=str(tmp_path / "one"))
    assert tp.equal(back["a"], extra["w"]) and tp.equal(back["b"][0], extra["r"]) and back["b"][1] == 1
    with pytest.raises(RuntimeError, match="checkpoint_id"):
        dcp.save({"a": extra["w"]})


def test_submodules_load_once_in_any_import_order():
    # a lazy package's submodule imported before the package ran: one copy of its classes
    code = """
import sys
import tensorplay.distributed as dist
import tensorplay.distributed.checkpoint as first  # before tensorplay.distributed ran
dist.is_available()
assert dist.checkpoint is first and sys.modules["tensorplay.distributed.checkpoint"] is first
import tensorplay.distributed.tensor.placement_types as pt
from tensorplay.distributed.checkpoint.state_dict import get_model_state_dict
import tensorplay.distributed.tensor as t, tensorplay.distributed.tensor._api as api
import tensorplay.distributed.checkpoint as dcp, tensorplay.distributed.fsdp as fsdp
assert t.Shard is pt.Shard is api.Shard
assert dcp.state_dict.get_model_state_dict is get_model_state_dict
assert fsdp.fully_shard.__module__ == 'tensorplay.distributed.fsdp._fully_shard'
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
