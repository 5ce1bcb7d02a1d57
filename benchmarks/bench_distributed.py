"""all_reduce bus bandwidth on CPU, 2 processes: tensorplay (Gloo via tp.distributed) vs
PyTorch's Gloo group. Bus bandwidth = 2 (n-1)/n * bytes / time (as nccl-tests define it).

    PYTHONPATH=python python benchmarks/bench_distributed.py [--mb 64] [--iters 10] [--world 2] [--ddp]
"""
import argparse
import os
import socket
import sys
import time


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, lib, mb, iters, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
    if lib == "torch":
        import torch as m
        import torch.distributed as dist
    else:
        import tensorplay as m
        import tensorplay.distributed as dist
    dist.init_process_group("gloo")
    n = mb * 1024 * 1024 // 4
    t = m.ones(n, dtype=m.float32)
    for _ in range(2):
        dist.all_reduce(t)
    dist.barrier()
    times = []
    for _ in range(iters):
        dist.barrier()
        s = time.perf_counter()
        dist.all_reduce(t)
        times.append(time.perf_counter() - s)
    if rank == 0:
        times.sort()
        q.put((times[len(times) // 2], times[0]))
    dist.destroy_process_group()


def _ddp_worker(rank, world, port, lib, mb, iters, q):
    # a DDP training step of the main job's model (examples/train_digits.py), 32 images a rank
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from train_digits import build_model
    if lib == "torch":
        import torch as m
    else:
        import tensorplay as m
    m.set_num_threads(1)
    m.distributed.init_process_group("gloo")
    m.manual_seed(0)
    model = m.nn.parallel.DistributedDataParallel(build_model(m.nn))
    opt = m.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = m.rand(32, 1, 8, 8), m.randint(0, 10, (32,))
    times = []
    for i in range(iters + 5):
        s = time.perf_counter()
        opt.zero_grad()
        m.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if i >= 5:
            times.append(time.perf_counter() - s)
    if rank == 0:
        times.sort()
        q.put((times[len(times) // 2], times[0]))
    m.distributed.destroy_process_group()


def run(lib, world, mb, iters, target=_worker):
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    port = _port()
    ps = [ctx.Process(target=target, args=(r, world, port, lib, mb, iters, q)) for r in range(world)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
        if p.exitcode:
            sys.exit(f"{lib}: a rank failed ({p.exitcode})")
    med, best = q.get()
    nbytes = mb * 1024 * 1024
    bus = 2 * (world - 1) / world * nbytes / med / 1e9
    return med, best, bus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ddp", action="store_true", help="also time a DDP training step")
    a = ap.parse_args()
    res = {"tensorplay": [], "torch": []}
    for _ in range(a.rounds):  # alternate, to spread machine noise over both
        for lib in res:
            res[lib].append(run(lib, a.world, a.mb, a.iters))
    for lib, rs in res.items():
        med = sorted(r[0] for r in rs)[len(rs) // 2]
        bus = max(r[2] for r in rs)
        print(f"{lib:10s} all_reduce {a.mb} MB float32, {a.world} ranks: median {med * 1e3:.1f} ms, "
              f"best-round bus bandwidth {bus:.2f} GB/s")
    tpb = max(r[2] for r in res["tensorplay"])
    thb = max(r[2] for r in res["torch"])
    print(f"ratio tensorplay/torch bus bandwidth: {tpb / thb:.2f}x")
    if a.ddp:
        steps = {"tensorplay": [], "torch": []}
        for _ in range(a.rounds):
            for lib in steps:
                steps[lib].append(run(lib, a.world, a.mb, 100, _ddp_worker)[0])
        for lib, ts in steps.items():
            print(f"{lib:10s} DDP step (train_digits model, 32 images a rank, {a.world} ranks, "
                  f"1 thread each): median {min(ts) * 1e3:.2f} ms (best of {a.rounds} rounds' medians)")
        print(f"ratio tensorplay/torch DDP step: {min(steps['tensorplay']) / min(steps['torch']):.2f}x")


if __name__ == "__main__":
    main()
