"""Special functions and distributions, TensorPlay vs PyTorch in one process (ratio = tp
time / torch time): issue 32's lgamma/digamma over 16M float32 elements and Normal /
Categorical sampling and log_prob over 1M.

Each case is checked against PyTorch first: lgamma/digamma values (within 2 float32 ulp-ish
tolerances), samples bit for bit under the same seed (docs/architecture.md, tp.distributions;
generator states must match afterwards too), log_prob values close. Rounds are interleaved,
medians reported.

    python benchmarks/bench_special.py [--quick] [--markdown] [--threads N]
"""
import argparse

import numpy as np
import torch
import torch.distributions as td

import tensorplay as tp
import tensorplay.distributions as pd
from common import compare, print_table

N_SPECIAL = 16 * 1024 * 1024
N_DIST = 1_000_000


def special_cases(n):
    """(name, tp_fn, torch_fn): lgamma/digamma on positive inputs (their usual domain, as in
    Gamma/Poisson/Dirichlet log-densities) and on N(0, 5) inputs (half negative)."""
    g = torch.Generator().manual_seed(0)
    pos = torch.rand(n, generator=g) * 100
    mixed = torch.randn(n, generator=g) * 5
    out = []
    for label, x in (("(0, 100)", pos), ("N(0, 5)", mixed)):
        for dt in (torch.float32, torch.float64):
            xt = x.to(dt)
            xp = tp.from_numpy(xt.numpy().copy())
            suffix = "" if dt == torch.float32 else ", float64"
            for op in ("lgamma", "digamma"):
                out.append((f"{op}({n} in {label}{suffix})",
                            lambda op=op, xp=xp: getattr(tp, op)(xp),
                            lambda op=op, xt=xt: getattr(torch, op)(xt)))
    return out


def check_values(name, f_tp, f_th):
    """Finite results within a relative 2e-6 (float32) / 1e-9 (float64: digamma within 1e-5 of
    a negative pole is only that close) of PyTorch's, non-finite ones equal."""
    ours, ref = f_tp().numpy(), f_th().numpy()
    if ours.dtype != ref.dtype or ours.shape != ref.shape:
        raise SystemExit(f"{name}: dtype/shape differ from PyTorch's")
    fin = np.isfinite(ref)
    rtol = 2e-6 if ref.dtype == np.float32 else 1e-9
    bad = ~np.isclose(ours[fin], ref[fin], rtol=rtol, atol=rtol)
    if bad.any() or not np.array_equal(ours[~fin], ref[~fin], equal_nan=True):
        raise SystemExit(f"{name}: TensorPlay's values differ from PyTorch's")


def dist_cases(n):
    """(name, fn(lib, dists) -> tensor, seeded): the distribution calls, on parameters built
    once from the same numbers for both libraries."""
    g = torch.Generator().manual_seed(1)
    loc, scale = torch.randn(n, generator=g), torch.rand(n, generator=g) + 0.5
    x = torch.randn(n, generator=g)
    p10, p1000 = torch.rand(10, generator=g), torch.rand(1000, generator=g)
    pbatch = torch.rand(n // 10, 10, generator=g)
    logits = torch.randn(n // 1000, 1000, generator=g)
    v10 = torch.randint(0, 10, (n,), generator=g)
    v1000 = torch.randint(0, 1000, (n // 1000,), generator=g)
    params = {"loc": loc, "scale": scale, "x": x, "p10": p10, "p1000": p1000,
              "pbatch": pbatch, "logits": logits, "v10": v10, "v1000": v1000}
    mine = {k: tp.from_numpy(v.numpy().copy()) for k, v in params.items()}

    def lib_args(lib):
        return params if lib is torch else mine

    def D(lib):
        return td if lib is torch else pd

    def normal(lib):
        a = lib_args(lib)
        return D(lib).Normal(a["loc"], a["scale"])

    return [
        (f"Normal({n}) construct", lambda lib: normal(lib).loc, False),
        (f"Normal({n}).sample()", lambda lib: normal(lib).sample(), True),
        (f"Normal({n}).rsample()", lambda lib: normal(lib).rsample(), True),
        (f"Normal({n}).log_prob(x)", lambda lib: normal(lib).log_prob(lib_args(lib)["x"]), False),
        (f"Categorical(10).sample(({n},))",
         lambda lib: D(lib).Categorical(lib_args(lib)["p10"]).sample((n,)), True),
        (f"Categorical(1000).sample(({n},))",
         lambda lib: D(lib).Categorical(lib_args(lib)["p1000"]).sample((n,)), True),
        (f"Categorical(probs ({n // 10}, 10)).sample()",
         lambda lib: D(lib).Categorical(lib_args(lib)["pbatch"]).sample(), True),
        (f"Categorical(logits ({n // 1000}, 1000)).sample()",
         lambda lib: D(lib).Categorical(logits=lib_args(lib)["logits"]).sample(), True),
        (f"Categorical(10).log_prob({n} values)",
         lambda lib: D(lib).Categorical(lib_args(lib)["p10"]).log_prob(lib_args(lib)["v10"]), False),
        (f"Categorical(logits ({n // 1000}, 1000)).log_prob",
         lambda lib: D(lib).Categorical(logits=lib_args(lib)["logits"]).log_prob(lib_args(lib)["v1000"]),
         False),
    ]


def check_dist(name, fn, seeded):
    torch.manual_seed(3)
    tp.manual_seed(3)
    ref, ours = fn(torch).detach().numpy(), fn(tp).detach().numpy()
    if ref.dtype != ours.dtype or ref.shape != ours.shape:
        raise SystemExit(f"{name}: dtype/shape differ from PyTorch's")
    if seeded:
        if not np.array_equal(ref.view(np.uint8), ours.view(np.uint8)):
            raise SystemExit(f"{name}: TensorPlay's samples differ from PyTorch's")
        if not np.array_equal(torch.get_rng_state().numpy(), tp.get_rng_state().numpy()):
            raise SystemExit(f"{name}: generator states differ after the call")
    elif not np.allclose(ours, ref, rtol=1e-5, atol=1e-5):
        raise SystemExit(f"{name}: TensorPlay's values differ from PyTorch's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1M special-function elements, fewer rounds")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, help="threads for both libraries (default: theirs)")
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    rounds = 3 if args.quick else 7
    rows = []
    for name, f_tp, f_th in special_cases(N_SPECIAL // 16 if args.quick else N_SPECIAL):
        check_values(name, f_tp, f_th)
        a, b = compare(f_tp, f_th, number=1, rounds=rounds)
        rows.append((name, a * 1e3, b * 1e3))
    for name, fn, seeded in dist_cases(N_DIST):
        check_dist(name, fn, seeded)
        a, b = compare(lambda: fn(tp), lambda: fn(torch), number=3, rounds=rounds)
        rows.append((name, a * 1e3, b * 1e3))
    print_table(rows, f"special functions and distributions, {tp.get_num_threads()} threads "
                f"(torch {torch.get_num_threads()})", args.markdown, width=46)


if __name__ == "__main__":
    main()
