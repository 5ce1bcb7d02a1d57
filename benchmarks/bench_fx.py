"""tp.fx benchmarks (issue 30), TensorPlay vs PyTorch in one process:

1. symbolic_trace + recompile of nanoGPT's GPT (12 layers; tensorplay.testing.gpt, narrow
   widths since tracing cost does not depend on them), tp.fx vs torch.fx
   (target: ratio <= 0.5);
2. GraphModule forward on a traced MLP minus the eager module's forward, per call
   (target: <= 2 us added).

    python benchmarks/bench_fx.py [--quick]

Both parts first check that the traced module computes what the eager one does, and that
the two libraries' graphs have the same node names.
"""
import argparse
import platform
import statistics
import time

import torch
import torch.fx

import tensorplay as tp
import tensorplay.fx
from tensorplay.fx.graph_module import _compiled
from tensorplay.testing.gpt import gpt2
from common import compare


def gpt(lib):
    return gpt2(lib, n_layer=12, n_head=4, n_embd=64, vocab_size=512, block_size=64)


def trace_and_recompile(fx, model, cold=True):
    if fx is tp.fx and cold:  # no code object kept from an earlier round (Note [Compiled code])
        _compiled.clear()
    gm = fx.symbolic_trace(model, concrete_args={'targets': None})
    gm.recompile()
    return gm


def check_gpt(tp_model, torch_model):
    ours, theirs = trace_and_recompile(tp.fx, tp_model), trace_and_recompile(torch.fx, torch_model)
    if [n.name for n in ours.graph.nodes] != [n.name for n in theirs.graph.nodes]:
        raise SystemExit('GPT: tp.fx node names differ from torch.fx')
    idx = tp.randint(0, 512, (2, 16))
    if not tp.allclose(ours(idx), tp_model(idx), atol=1e-5):
        raise SystemExit('GPT: traced module differs from eager')
    return len(ours.graph.nodes)


class _NoCache(dict):
    def __setitem__(self, key, value):
        pass


def mlp():
    return tp.nn.Sequential(tp.nn.Linear(16, 32), tp.nn.ReLU(), tp.nn.Linear(32, 16), tp.nn.GELU(),
                            tp.nn.Linear(16, 4))


def forward_overhead(number, rounds):
    """Median microseconds per call: (traced forward, eager forward), rounds interleaved."""
    model = mlp()
    gm = tp.fx.symbolic_trace(model)
    x = tp.randn(2, 16)
    if not tp.equal(gm(x), model(x)):
        raise SystemExit('MLP: traced module differs from eager')
    t_gm, t_eager = [], []
    for _ in range(rounds):
        for fn, out in ((gm, t_gm), (model, t_eager)):
            t0 = time.perf_counter()
            for _ in range(number):
                fn(x)
            out.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(t_gm), statistics.median(t_eager)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args()
    rounds = 5 if args.quick else 11
    print(f'# bench_fx: {platform.processor() or platform.machine()}, torch {torch.__version__}, '
          f'median of {rounds} interleaved rounds')
    tp_model, torch_model = gpt(tp), gpt(torch)
    nodes = check_gpt(tp_model, torch_model)
    ours, theirs = compare(lambda: trace_and_recompile(tp.fx, tp_model),
                           lambda: trace_and_recompile(torch.fx, torch_model),
                           number=2 if args.quick else 5, rounds=rounds)
    print(f'symbolic_trace + recompile, GPT 12 layers ({nodes} nodes): tp.fx {ours * 1e3:.2f} ms  '
          f'torch.fx {theirs * 1e3:.2f} ms  ratio {ours / theirs:.2f} (target <= 0.5)')
    # the same with every compile() done (the code cache off): what a graph seen for the first
    # time in each of the two steps costs
    import tensorplay.fx.graph_module as gm_module
    saved, gm_module._compiled = gm_module._compiled, _NoCache()
    try:
        ours_nc, theirs_nc = compare(lambda: trace_and_recompile(tp.fx, tp_model, cold=False),
                                     lambda: trace_and_recompile(torch.fx, torch_model),
                                     number=2 if args.quick else 5, rounds=rounds)
    finally:
        gm_module._compiled = saved
    print(f'  with no code cache (two compiles, as torch.fx): tp.fx {ours_nc * 1e3:.2f} ms  '
          f'torch.fx {theirs_nc * 1e3:.2f} ms  ratio {ours_nc / theirs_nc:.2f}')
    gm_us, eager_us = forward_overhead(2000 if args.quick else 10000, rounds)
    print(f'traced MLP forward: GraphModule {gm_us:.2f} us  eager {eager_us:.2f} us  '
          f'added {gm_us - eager_us:+.2f} us per call (target <= 2 us)')


if __name__ == '__main__':
    main()
