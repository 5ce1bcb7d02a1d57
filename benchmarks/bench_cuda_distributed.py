"""tp.distributed's NCCL group against PyTorch's in the same process, one GPU (world size 1):
all_reduce time per call (4 KB: the call's overhead; 64 MB: the transfer) and a DDP
training step of an MLP (forward, backward with bucketed all_reduce, SGD step).
Each side's results are checked before timing (one rank: all_reduce leaves values as they
are; DDP's parameters after the steps equal the plain module's).

    python benchmarks/bench_cuda_distributed.py [--iters 200]
"""
import argparse
import time


def _time(fn, sync, iters):
    for _ in range(5):
        fn()
    sync()
    best = float("inf")
    for _ in range(3):
        s = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - s) / iters)
    return best


def _mlp(m):
    return m.nn.Sequential(m.nn.Linear(512, 1024), m.nn.ReLU(), m.nn.Linear(1024, 1024), m.nn.ReLU(),
                           m.nn.Linear(1024, 10)).cuda()


def _ddp_step(m, dist, iters):
    m.manual_seed(0)
    plain, model = _mlp(m), _mlp(m)
    model.load_state_dict(plain.state_dict())
    ddp = m.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    x = m.randn(64, 512, device="cuda")
    y = m.randint(0, 10, (64,), device="cuda")
    opts = [m.optim.SGD(plain.parameters(), lr=0.01), m.optim.SGD(ddp.parameters(), lr=0.01)]

    def step(net, opt):
        opt.zero_grad(set_to_none=True)
        m.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    for _ in range(3):
        step(plain, opts[0])
        step(ddp, opts[1])
    m.cuda.synchronize()
    err = max(float((a - b).abs().max()) for a, b in zip(plain.parameters(), model.parameters()))
    assert err < 1e-5, f"DDP parameters differ from the plain module's by {err}"
    return _time(lambda: step(ddp, opts[1]), m.cuda.synchronize, iters)


def _side(name, iters):
    if name == "torch":
        import torch as m
        import torch.distributed as dist
    else:
        import tensorplay as m
        import tensorplay.distributed as dist
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    out = {}
    for label, n in (("all_reduce 4 KB", 1024), ("all_reduce 64 MB", 16 << 20)):
        t = m.arange(n, device="cuda").float()
        ref = t.clone()
        dist.all_reduce(t)
        m.cuda.synchronize()
        assert bool(m.equal(t, ref)), f"{name}: all_reduce changed the values"
        out[label] = _time(lambda: dist.all_reduce(t), m.cuda.synchronize,
                           iters if n < 1 << 20 else max(10, iters // 20))
    out["DDP MLP step"] = _ddp_step(m, dist, max(20, iters // 4))
    dist.destroy_process_group()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    import tensorplay as tp
    import tensorplay.distributed as tdist
    if not (tp.cuda.is_available() and tdist.is_nccl_available()):
        print("bench_cuda_distributed: no GPU or no NCCL")
        return
    from tensorplay.distributed import _nccl
    print(f"NCCL {'.'.join(map(str, _nccl.version()))}, {tp.cuda.get_device_name(0)}, world size 1")
    ours, theirs = _side("tensorplay", args.iters), _side("torch", args.iters)
    print(f"{'case':<18} {'tensorplay':>12} {'torch':>12} {'ratio':>7}")
    for k in ours:
        print(f"{k:<18} {ours[k] * 1e6:>10.1f}us {theirs[k] * 1e6:>10.1f}us {ours[k] / theirs[k]:>7.2f}")


if __name__ == "__main__":
    main()
