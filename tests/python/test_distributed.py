"""tp.distributed on CPU (Gloo): collectives against single-process references on 2 and 3
ranks, DDP against single-process training, stores, the launcher, a dying rank, bad arguments.
Ranks are processes started by tp.multiprocessing.spawn or by tensorplay.distributed.run."""
import os
import socket
import subprocess
import sys
import textwrap
import time
from datetime import timedelta

import pytest

import tensorplay as tp
import tensorplay.distributed as dist
import tensorplay.multiprocessing as mp

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="built without Gloo")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"]


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init(rank, world, port, timeout=30):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))


def _data(rank, dtype, n=7):
    # small values, exact in every dtype (sums and products of a few ranks included)
    base = tp.arange(n, dtype=tp.int64) % 3 + rank + 1
    return base.to(getattr(tp, dtype))


def _eq(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a, b)
    assert tp.equal(a, b), (what, a.tolist(), b.tolist())


def _collectives(rank, world, port):
    _init(rank, world, port)
    assert dist.is_initialized() and dist.get_rank() == rank and dist.get_world_size() == world
    everyone = [None] * world
    for dt in DTYPES:
        xs = [_data(r, dt) for r in range(world)]
        refs = {"SUM": xs[0].clone(), "PRODUCT": xs[0].clone(), "MIN": xs[0].clone(), "MAX": xs[0].clone()}
        for x in xs[1:]:
            refs["SUM"] = refs["SUM"] + x
            refs["PRODUCT"] = refs["PRODUCT"] * x
            refs["MIN"] = tp.minimum(refs["MIN"], x)
            refs["MAX"] = tp.maximum(refs["MAX"], x)
        for name, ref in refs.items():
            t = xs[rank].clone()
            dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
            _eq(t, ref.to(t.dtype), f"all_reduce {name} {dt}")
            # async, on a non-contiguous view
            m = tp.stack([xs[rank], xs[rank]], 1)
            w = dist.all_reduce(m[:, 1], op=getattr(dist.ReduceOp, name), async_op=True)
            w.wait()
            assert w.is_completed()
            _eq(m[:, 1], ref.to(m.dtype), f"async all_reduce {name} {dt}")
            _eq(m[:, 0], xs[rank], "the other column is untouched")
            t = xs[rank].clone()
            dist.reduce(t, dst=world - 1, op=getattr(dist.ReduceOp, name))
            _eq(t, ref.to(t.dtype) if rank == world - 1 else xs[rank], f"reduce {name} {dt}")
        if tp.empty(0, dtype=getattr(tp, dt)).is_floating_point():
            t = xs[rank].clone()
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            avg = sum(x.double() for x in xs) / world
            assert tp.allclose(t.double(), avg, rtol=1e-2), (dt, t, avg)
        # broadcast from every root
        for root in range(world):
            t = xs[rank].clone()
            dist.broadcast(t, src=root)
            _eq(t, xs[root], f"broadcast {dt} from {root}")
        # all_gather / into_tensor
        outs = [tp.zeros_like(xs[0]) for _ in range(world)]
        dist.all_gather(outs, xs[rank])
        for r in range(world):
            _eq(outs[r], xs[r], f"all_gather {dt}")
        out = tp.zeros(world * xs[0].numel(), dtype=xs[0].dtype)
        dist.all_gather_into_tensor(out, xs[rank])
        _eq(out, tp.cat(xs), f"all_gather_into_tensor {dt}")
        # reduce_scatter: rank r's block is the sum of every rank's r-th input
        ins = [_data(rank + 10 * r, dt, 3) if dt not in ("int8", "uint8") else _data(rank + r, dt, 3)
               for r in range(world)]
        out = tp.zeros(3, dtype=ins[0].dtype)
        dist.reduce_scatter(out, ins)
        blocks = [[_data(q + 10 * r, dt, 3) if dt not in ("int8", "uint8") else _data(q + r, dt, 3)
                   for r in range(world)] for q in range(world)]
        ref = blocks[0][rank]
        for q in range(1, world):
            ref = ref + blocks[q][rank]
        _eq(out, ref.to(out.dtype), f"reduce_scatter {dt}")
        out2 = tp.zeros(3, dtype=ins[0].dtype)
        dist.reduce_scatter_tensor(out2, tp.cat(ins))
        _eq(out2, ref.to(out.dtype), f"reduce_scatter_tensor {dt}")
        # gather / scatter
        root = world - 1
        gl = [tp.zeros_like(xs[0]) for _ in range(world)] if rank == root else None
        dist.gather(xs[rank], gl, dst=root)
        if rank == root:
            for r in range(world):
                _eq(gl[r], xs[r], f"gather {dt}")
        t = tp.zeros_like(xs[0])
        dist.scatter(t, [x * 1 for x in xs] if rank == 0 else None, src=0)
        _eq(t, xs[rank], f"scatter {dt}")
        # all_to_all_single: rank r sends block q to rank q
        inp = tp.cat([_data(rank * world + q, dt, 2) for q in range(world)])
        out = tp.zeros_like(inp)
        dist.all_to_all_single(out, inp)
        _eq(out, tp.cat([_data(q * world + rank, dt, 2) for q in range(world)]), f"all_to_all_single {dt}")
    # uneven all_to_all (lists): rank r sends r+q+1 elements to rank q
    ins = [tp.full((rank + q + 1,), float(rank * 10 + q)) for q in range(world)]
    outs = [tp.zeros(q + rank + 1) for q in range(world)]
    dist.all_to_all(outs, ins)
    for q in range(world):
        _eq(outs[q], tp.full((q + rank + 1,), float(q * 10 + rank)), "all_to_all uneven")
    # bool and bitwise ops
    b = tp.tensor([rank == 0, True, False])
    dist.all_reduce(b, op=dist.ReduceOp.MAX)
    _eq(b, tp.tensor([True, True, False]), "bool MAX")
    i = tp.tensor([1 << rank, 7], dtype=tp.int32)
    dist.all_reduce(i, op=dist.ReduceOp.BOR)
    _eq(i, tp.tensor([(1 << world) - 1, 7], dtype=tp.int32), "BOR")
    # point to point, a ring; batch_isend_irecv the other way
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = tp.zeros(4)
    ws = [dist.isend(tp.full((4,), float(rank)), nxt, tag=3), dist.irecv(got, prv, tag=3)]
    for w in ws:
        w.wait()
    _eq(got, tp.full((4,), float(prv)), "isend/irecv ring")
    got2 = tp.zeros(2, dtype=tp.int64)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tp.tensor([rank, 5]), prv),
                                    dist.P2POp(dist.irecv, got2, nxt)])
    for w in works:
        w.wait()
    _eq(got2, tp.tensor([nxt, 5]), "batch_isend_irecv")
    # recv from any source returns the sender
    if rank == 0:
        srcs = set()
        for _ in range(world - 1):
            v = tp.zeros(1, dtype=tp.int64)
            srcs.add((dist.recv(v, tag=9), int(v)))
        assert srcs == {(r, r * 7) for r in range(1, world)}, srcs
    else:
        dist.send(tp.tensor([rank * 7]), 0, tag=9)
    # objects
    dist.all_gather_object(everyone, {"rank": rank, "s": "x" * (rank * 100)})
    assert everyone == [{"rank": r, "s": "x" * (r * 100)} for r in range(world)]
    objs = [None, None] if rank else [("a", 1), {2: [3]}]
    dist.broadcast_object_list(objs, src=0)
    assert objs == [("a", 1), {2: [3]}]
    # a subgroup of ranks 0 and world-1
    g = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        t = tp.tensor([float(rank)])
        dist.all_reduce(t, group=g)
        _eq(t, tp.tensor([float(world - 1)]), "subgroup all_reduce")
        assert dist.get_world_size(g) == 2
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
    dist.monitored_barrier(timeout=timedelta(seconds=10))
    s = tp.utils.data.DistributedSampler(range(10), shuffle=False)
    idx = list(range(10))
    idx += idx[:(-10) % world]  # padded from the front, as PyTorch's sampler pads
    assert (s.num_replicas, s.rank) == (world, rank) and list(s) == idx[rank::world]
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()


@pytest.mark.parametrize("world", [2, 3])
def test_collectives_match_single_process(world):
    mp.spawn(_collectives, args=(world, _port()), nprocs=world)


def _model():
    tp.manual_seed(0)
    return tp.nn.Sequential(tp.nn.Linear(6, 12), tp.nn.Tanh(), tp.nn.Linear(12, 12), tp.nn.Tanh(),
                            tp.nn.Linear(12, 3))


def _ddp(rank, world, port):
    _init(rank, world, port)
    tp.manual_seed(123)
    X, Y = tp.randn(12, 6), tp.randn(12, 3)
    ref = _model()
    m = _model()
    if rank:  # DDP broadcasts rank 0's parameters
        with tp.no_grad():
            for p in m.parameters():
                p.add_(float(rank))
    ddp = tp.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.0004)
    assert len(ddp._buckets) > 1
    o1 = tp.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    o2 = tp.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    n = 12 // world
    lo, hi = rank * n, (rank + 1) * n
    for step in range(4):
        o1.zero_grad()
        l1 = tp.nn.functional.mse_loss(ref(X), Y)
        l1.backward()
        o1.step()
        o2.zero_grad()
        if step == 2:  # accumulate half the local batch under no_sync, then the other half
            h = n // 2
            with ddp.no_sync():
                (tp.nn.functional.mse_loss(ddp(X[lo:lo + h]), Y[lo:lo + h]) * h / n).backward()
            (tp.nn.functional.mse_loss(ddp(X[lo + h:hi]), Y[lo + h:hi]) * (n - h) / n).backward()
        else:
            tp.nn.functional.mse_loss(ddp(X[lo:hi]), Y[lo:hi]).backward()
        o2.step()
    for a, b in zip(ref.parameters(), m.parameters()):
        assert tp.allclose(a, b, atol=1e-6, rtol=1e-5), (a - b).abs().max()
    # find_unused_parameters: a branch used on no rank this step
    class Two(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tp.nn.Linear(3, 3)
            self.b = tp.nn.Linear(3, 3)

        def forward(self, x, use_b):
            return self.b(x) if use_b else self.a(x)
    tp.manual_seed(0)
    two = Two()
    d2 = tp.nn.parallel.DistributedDataParallel(two, find_unused_parameters=True)
    d2(tp.ones(2, 3) * (rank + 1), False).sum().backward()
    assert tp.allclose(two.a.weight.grad, tp.full((3, 3), 2.0 * (1 + world) / 2))
    # SyncBatchNorm under DDP == BatchNorm on the whole batch in one process
    def bn_model():
        tp.manual_seed(5)
        return tp.nn.Sequential(tp.nn.Linear(6, 8), tp.nn.BatchNorm1d(8), tp.nn.Tanh(), tp.nn.Linear(8, 3))
    ref = bn_model()
    m = tp.nn.SyncBatchNorm.convert_sync_batchnorm(bn_model())
    assert isinstance(m[1], tp.nn.SyncBatchNorm)
    ddp = tp.nn.parallel.DistributedDataParallel(m)
    o1 = tp.optim.SGD(ref.parameters(), lr=0.2)
    o2 = tp.optim.SGD(ddp.parameters(), lr=0.2)
    for step in range(3):
        o1.zero_grad()
        tp.nn.functional.mse_loss(ref(X), Y).backward()
        o1.step()
        o2.zero_grad()
        tp.nn.functional.mse_loss(ddp(X[lo:hi]), Y[lo:hi]).backward()
        o2.step()
    for a, b in list(zip(ref.parameters(), m.parameters())) + list(zip(ref.buffers(), m.buffers())):
        assert tp.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-4), (a, b)
    dist.destroy_process_group()


def test_ddp_matches_single_process_training():
    mp.spawn(_ddp, args=(2, _port()), nprocs=2)


def _dying(rank, world, port):
    _init(rank, world, port, timeout=5)
    t = tp.ones(4)
    dist.all_reduce(t)
    if rank == 1:
        os._exit(0)  # dies without a word (exit 0, so that spawn leaves rank 0 running)
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError):
        for _ in range(3):
            dist.all_reduce(t)
            time.sleep(0.2)
    assert time.monotonic() - start < 6


def test_dead_rank_makes_the_others_raise():
    mp.spawn(_dying, args=(2, _port()), nprocs=2)


def test_spawn_reports_the_failing_process():
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: boom"):
        mp.spawn(_boom, nprocs=2)


def _boom(i):
    if i == 1:
        raise ValueError("boom")


def _mismatch(rank, world, port):
    os.environ["TP_DISTRIBUTED_DEBUG"] = "DETAIL"
    _init(rank, world, port)
    dist.all_reduce(tp.ones(4))  # the same on every rank: passes
    with pytest.raises(RuntimeError, match="Detected mismatch between collectives") as e:
        dist.all_reduce(tp.ones(4 + rank))  # shapes differ
    assert "TensorShape=[[4]]" in str(e.value) and "TensorShape=[[5]]" in str(e.value)
    with pytest.raises(RuntimeError, match="OpType=ALLREDUCE.*OpType=BROADCAST|OpType=BROADCAST.*OpType=ALLREDUCE"):
        if rank == 0:
            dist.all_reduce(tp.ones(3))
        else:
            dist.broadcast(tp.ones(3), src=0)
    dist.destroy_process_group()


def test_detail_debug_mode_detects_mismatched_collectives():
    mp.spawn(_mismatch, args=(2, _port()), nprocs=2)


def test_launcher_four_ranks_on_two_nodes(tmp_path):
    # two launchers (--nnodes 2, --node-rank 0/1) of 2 workers each: one world of 4
    script = tmp_path / "job4.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import tensorplay as tp, tensorplay.distributed as dist
        dist.init_process_group("gloo")
        t = tp.ones(2) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        sys.stdout.write(f"ok {os.environ['RANK']} {os.environ['LOCAL_RANK']} "
                         f"{os.environ['GROUP_RANK']} {dist.get_world_size()} {t.tolist()}\\n")
        dist.destroy_process_group()
    """))
    port = str(_port())
    procs = [subprocess.Popen([sys.executable, "-m", "tensorplay.distributed.run", "--nnodes", "2",
                               "--node-rank", str(node), "--nproc-per-node", "2", "--master-addr",
                               "127.0.0.1", "--master-port", port, str(script)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for node in (0, 1)]
    outs = [p.communicate(timeout=90) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    lines = sorted(line for o in outs for line in o[0].splitlines() if line.startswith("ok"))
    assert lines == ["ok 0 0 0 4 [10.0, 10.0]", "ok 1 1 0 4 [10.0, 10.0]",
                     "ok 2 0 1 4 [10.0, 10.0]", "ok 3 1 1 4 [10.0, 10.0]"]


def test_launcher_sets_torchrun_env_and_reports_failures(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import tensorplay as tp, tensorplay.distributed as dist
        dist.init_process_group("gloo")
        t = tp.ones(2) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        sys.stdout.write(" ".join(["ok", os.environ["RANK"], os.environ["LOCAL_RANK"],
                                   os.environ["WORLD_SIZE"], str(t.tolist())]) + "\\n")  # one write
        if len(sys.argv) > 1 and dist.get_rank() == 1:
            raise KeyError("rank one failed")
        dist.destroy_process_group()
    """))
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "tensorplay.distributed.run", "--nproc-per-node", "2",
           "--master-port", str(_port()), str(script)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("ok")) == [
        "ok 0 0 2 [3.0, 3.0]", "ok 1 1 2 [3.0, 3.0]"]
    cmd[6] = str(_port())
    r = subprocess.run(cmd + ["fail"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "rank: 1 (local_rank: 1) failed with exit code 1" in r.stderr
    assert "KeyError: 'rank one failed'" in r.stderr


@pytest.mark.parametrize("kind", ["tcp", "file", "hash"])
def test_store(kind, tmp_path):
    if kind == "tcp":
        s = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=5))
        c = dist.TCPStore("127.0.0.1", s.port, is_master=False, timeout=timedelta(seconds=5))
    elif kind == "file":
        s = c = dist.FileStore(str(tmp_path / "store"), 1)
    else:
        s = c = dist.HashStore()
    s.set("k", "v")
    assert c.get("k") == b"v"
    assert c.add("n", 2) == 2 and s.add("n", 3) == 5 and c.get("n") == b"5"
    assert s.compare_set("k", "v", "w") == b"w" and c.get("k") == b"w"
    assert s.compare_set("k", "v", "z") == b"w"
    assert s.compare_set("new", "", "x") == b"x"
    assert c.check(["k", "new"]) and not c.check(["nope"])
    c.wait(["k"])
    c.set_timeout(timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError, match="timeout"):
        c.get("missing")
    with pytest.raises(RuntimeError):
        c.wait(["missing"], timedelta(seconds=0.1))
    assert s.delete_key("new") and not s.delete_key("new")
    assert c.num_keys() >= 2
    p = dist.PrefixStore("pre", c)
    p.set("a", b"1")
    assert c.get("pre/a") == b"1"


def test_bad_arguments():
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match="NCCL"):
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    with pytest.raises(ValueError, match="MASTER_ADDR|RANK|WORLD_SIZE"):
        env = {k: os.environ.pop(k) for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if k in os.environ}
        try:
            dist.init_process_group("gloo")
        finally:
            os.environ.update(env)
    # a world of one in this process
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
        with pytest.raises(RuntimeError, match="BAND"):
            dist.all_reduce(tp.ones(2), op=dist.ReduceOp.BAND)
        with pytest.raises(ValueError, match="Invalid rank|not part"):
            dist.broadcast(tp.ones(2), src=3)
        with pytest.raises(TypeError, match="Tensor"):
            dist.all_reduce([1, 2])
        with pytest.raises(ValueError, match="tensor_list"):
            dist.all_gather([tp.ones(2)] * 2, tp.ones(2))
        t = tp.arange(4.0)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    finally:
        dist.destroy_process_group()


def _file_init(rank, world, path):
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    t = tp.tensor([rank + 1.0])
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    assert t.tolist() == [2.0]
    dist.destroy_process_group()


def test_file_init_method(tmp_path):
    mp.spawn(_file_init, args=(2, str(tmp_path / "rdzv")), nprocs=2)
