"""Where the host time of a tiny CUDA op goes: each line times one variant (median
microseconds per call over rounds of 200 calls, no waiting on the GPU), so the
differences attribute the cost (binding + dispatch, iterator, allocation, launch).

    python scripts/profile_cuda_host.py
"""
import statistics
import time

import torch

import tensorplay as tp


def host_us(sync, fn, reps=200, rounds=40):
    fn()
    sync()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps * 1e6)
        sync()
    return statistics.median(times)


def main():
    u, ut = tp.ones(16, device="cuda"), torch.ones(16, device="cuda")
    o, ot = tp.empty(16, device="cuda"), torch.empty(16, device="cuda")
    c, ct = tp.ones(16), torch.ones(16)
    tsync, psync = tp.cuda.synchronize, torch.cuda.synchronize
    cases = [
        ("u + u", lambda: u + u, lambda: ut + ut, tsync, psync),
        ("add(u, u, out=o)", lambda: tp.add(u, u, out=o), lambda: torch.add(ut, ut, out=ot), tsync, psync),
        ("u.add_(u)", lambda: u.add_(u), lambda: ut.add_(ut), tsync, psync),
        ("u.mul_(1.0)", lambda: u.mul_(1.0), lambda: ut.mul_(1.0), tsync, psync),
        ("u.mul_(u)", lambda: u.mul_(u), lambda: ut.mul_(ut), tsync, psync),
        ("u * u", lambda: u * u, lambda: ut * ut, tsync, psync),
        ("u + 1.0", lambda: u + 1.0, lambda: ut + 1.0, tsync, psync),
        ("u.neg()", lambda: u.neg(), lambda: ut.neg(), tsync, psync),
        ("empty(16, cuda)", lambda: tp.empty(16, device="cuda"), lambda: torch.empty(16, device="cuda"), tsync, psync),
        ("empty_like(u)", lambda: tp.empty_like(u), lambda: torch.empty_like(ut), tsync, psync),
        ("u.view(4, 4)", lambda: u.view(4, 4), lambda: ut.view(4, 4), tsync, psync),
        ("cpu c + c", lambda: c + c, lambda: ct + ct, lambda: None, lambda: None),
        ("u.sum()", lambda: u.sum(), lambda: ut.sum(), tsync, psync),
        ("u.exp()", lambda: u.exp(), lambda: ut.exp(), tsync, psync),
        ("current_stream()", lambda: tp.cuda.current_stream(), lambda: torch.cuda.current_stream(), tsync, psync),
    ]
    print(f"{'case':<20} {'tp us':>8} {'torch us':>9} {'ratio':>6}")
    for name, f, g, s1, s2 in cases:
        a, b = host_us(s1, f), host_us(s2, g)
        print(f"{name:<20} {a:8.2f} {b:9.2f} {a / b:6.2f}")
    print("C++ steps (tp._C._cuda_host_probe), us per call:")
    for name, ns in sorted(tp._C._cuda_host_probe(100).items(), key=lambda kv: kv[1]):
        print(f"  {name:<20} {ns / 1000:8.3f}")


if __name__ == "__main__":
    main()
