"""tp.distributed over NCCL on one GPU (world size 1: the GPU machine lends one GPU; NCCL
refuses two ranks on one device). Each collective runs through NCCL on the current stream
and is checked against the single-rank result; async work orders later kernels after it;
DDP on CUDA trains as the plain module does; CPU tensors and unsupported ops raise."""
import pytest

import tensorplay as tp
import tensorplay.distributed as dist
import tensorplay.nn as nn

HAS_GPU = tp.cuda.is_available()
pytestmark = pytest.mark.skipif(not (HAS_GPU and dist.is_nccl_available()),
                                reason="no CUDA GPU or no NCCL library")


@pytest.fixture(scope="module")
def nccl():
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


DTYPES = [tp.float32, tp.float16, tp.bfloat16, tp.float64, tp.int32, tp.int64, tp.uint8]


def _sample(dtype, n=1000):
    x = tp.arange(n, device="cuda") % 7
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SUM", "PRODUCT", "MIN", "MAX", "AVG"])
def test_all_reduce(nccl, dtype, op):
    if op == "AVG" and not dtype.is_floating_point:
        pytest.skip("AVG takes floating tensors")
    x = _sample(dtype)
    ref = x.clone()
    dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
    assert tp.equal(x, ref)  # one rank: every reduction is the identity


def test_all_reduce_noncontiguous_and_bool(nccl):
    x = tp.randn(16, 8, device="cuda").t()
    ref = x.clone()
    dist.all_reduce(x)
    assert tp.equal(x, ref)
    b = tp.tensor([True, False, True], device="cuda")
    dist.all_reduce(b)
    assert b.tolist() == [True, False, True]


def test_broadcast_reduce_gather_scatter(nccl):
    x = tp.randn(33, device="cuda")
    ref = x.clone()
    dist.broadcast(x, src=0)
    assert tp.equal(x, ref)
    dist.reduce(x, dst=0)
    assert tp.equal(x, ref)
    out = [tp.empty_like(x)]
    dist.gather(x, out, dst=0)
    assert tp.equal(out[0], ref)
    y = tp.empty_like(x)
    dist.scatter(y, [x], src=0)
    assert tp.equal(y, ref)


def test_all_gather_reduce_scatter_all_to_all(nccl):
    x = tp.randn(4, 5, device="cuda")
    out = tp.empty(4, 5, device="cuda")
    dist.all_gather_into_tensor(out, x)
    assert tp.equal(out, x)
    outs = [tp.empty_like(x)]
    dist.all_gather(outs, x)
    assert tp.equal(outs[0], x)
    rs = tp.empty(4, 5, device="cuda")
    dist.reduce_scatter_tensor(rs, x)
    assert tp.equal(rs, x)
    a2a = tp.empty_like(x)
    dist.all_to_all_single(a2a, x)
    assert tp.equal(a2a, x)


def test_object_collectives(nccl):
    objs = [{"a": 1}, "two", 3.0]
    dist.broadcast_object_list(objs, src=0)
    assert objs == [{"a": 1}, "two", 3.0]
    gathered = [None]
    dist.all_gather_object(gathered, ("x", 7))
    assert gathered == [("x", 7)]


def test_async_work_orders_the_stream(nccl):
    side = tp.cuda.Stream()
    x = tp.ones(1 << 20, device="cuda")
    with tp.cuda.stream(side):
        y = x * 3  # produced on the side stream
        work = dist.all_reduce(y, async_op=True)
    work.wait()  # the current stream now waits for the side stream's all_reduce
    z = y + 1
    tp.cuda.synchronize()
    assert work.is_completed() and work.is_success()
    assert float(z.sum()) == 4.0 * (1 << 20)
    dist.barrier()


def test_new_group_and_backend(nccl):
    assert dist.get_backend() == "nccl"
    g = dist.new_group([0])
    x = tp.randn(10, device="cuda")
    ref = x.clone()
    dist.all_reduce(x, group=g)
    assert tp.equal(x, ref)


def test_errors(nccl):
    with pytest.raises(RuntimeError, match="device type cpu"):
        dist.all_reduce(tp.ones(3))
    with pytest.raises(RuntimeError, match="BAND"):
        dist.all_reduce(tp.ones(3, dtype=tp.int32, device="cuda"), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="int16"):
        dist.all_reduce(tp.ones(3, dtype=tp.int16, device="cuda"))


def _mlp_pair():
    """Two equal MLPs on the GPU: the plain reference and the one to wrap."""
    tp.manual_seed(0)
    ref = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
    model.load_state_dict(ref.state_dict())
    return ref, model


def _train_side_by_side(ref, wrapped, steps=3):
    """The same SGD steps on the same batches for the reference and the wrapped module."""
    o1 = tp.optim.SGD(ref.parameters(), lr=0.1)
    o2 = tp.optim.SGD(wrapped.parameters(), lr=0.1)
    for step in range(steps):
        x = tp.randn(8, 16, device="cuda")
        for m, o in ((ref, o1), (wrapped, o2)):
            o.zero_grad()
            m(x).square().mean().backward()
            o.step()


def test_ddp_on_cuda_matches_the_plain_module(nccl):
    ref, model = _mlp_pair()
    _train_side_by_side(ref, nn.parallel.DistributedDataParallel(model, device_ids=[0]))
    for a, b in zip(ref.parameters(), model.parameters()):
        assert tp.allclose(a, b, atol=1e-6)


def test_fsdp_on_cuda_matches_the_plain_module(nccl):
    from tensorplay.distributed.fsdp import fully_shard
    ref, model = _mlp_pair()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    _train_side_by_side(ref, model)
    for a, b in zip(ref.parameters(), model.parameters()):
        b = b.full_tensor() if hasattr(b, "full_tensor") else b
        assert b.device.type == "cuda" and tp.allclose(a, b, atol=1e-6)


def test_fsdp_cpu_offload_on_cuda_matches_the_plain_module(nccl):
    # CPUOffloadPolicy: the shards and their gradients stay on the CPU (pinned), are gathered
    # onto the GPU for forward and backward, and the optimizer steps them on the CPU
    from tensorplay.distributed.fsdp import CPUOffloadPolicy, fully_shard
    ref, model = _mlp_pair()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, offload_policy=CPUOffloadPolicy())
    fully_shard(model, offload_policy=CPUOffloadPolicy())
    for p in model.parameters():
        local = p.to_local() if hasattr(p, "to_local") else p
        assert local.device.type == "cpu" and local.is_pinned()
    _train_side_by_side(ref, model)
    for a, b in zip(ref.parameters(), model.parameters()):
        assert b.grad is not None and (b.grad.to_local() if hasattr(b.grad, "to_local") else b.grad).device.type == "cpu"
        b = b.full_tensor() if hasattr(b, "full_tensor") else b
        assert tp.allclose(a, b.to("cuda"), atol=1e-6)
