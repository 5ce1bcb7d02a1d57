"""tp.func against torch.func (2.13, CPU, same process): per-sample gradients of a 3-layer
MLP with vmap(grad(loss)) (also against a Python loop in TensorPlay) and of a small CNN
(conv + max pool + linear), jacrev of a
100->100 tanh MLP, and an ensemble of 10 models with stack_module_state +
vmap(functional_call). Each case first checks TensorPlay's result against torch's.

    PYTHONPATH=python python benchmarks/bench_func.py [--repeat N]

Both libraries run one thread (the 2-core machine is shared; more threads only measure the
contention). Medians of N interleaved rounds.
"""
import argparse
import statistics
import time

import numpy as np
import torch

import tensorplay as tp


def median_us(fns, repeat):
    """Median time of each function in microseconds, the calls interleaved round by round
    so that load from other processes falls on all of them alike."""
    for fn in fns:
        fn()
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) * 1e6 for ts in times]


def _mlp(lib, sizes):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(lib.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(lib.nn.ReLU())
    return lib.nn.Sequential(*layers)


def _same_params(tp_model, torch_model):
    with torch.no_grad():
        for (_, p), (_, q) in zip(tp_model.named_parameters(), torch_model.named_parameters()):
            p.data = tp.tensor(q.detach().numpy().copy())


def _close(a, b, ctx, tol=1e-4):
    a = np.asarray(a.detach().numpy() if hasattr(a, 'detach') else a)
    b = b.detach().numpy()
    assert a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol), ctx


def per_sample_grads(repeat):
    torch.manual_seed(0)
    tm = _mlp(torch, [32, 64, 64, 10])
    m = _mlp(tp, [32, 64, 64, 10])
    _same_params(m, tm)
    xn, yn = np.random.default_rng(0).standard_normal((64, 32)).astype('float32'), \
        np.random.default_rng(1).integers(0, 10, 64)

    def make(lib, model):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))
        return params, loss

    tparams, tloss = make(torch, tm)
    params, loss = make(tp, m)
    x, y = tp.tensor(xn), tp.tensor(yn)
    tx, ty = torch.tensor(xn), torch.tensor(yn)
    ours = lambda: tp.func.vmap(tp.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    theirs = lambda: torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, tx, ty)
    loop = lambda: [tp.func.grad(loss)(params, x[i], y[i]) for i in range(64)]
    got, want, looped = ours(), theirs(), loop()
    for k in want:
        _close(got[k], want[k], f'per-sample grad {k}')
        _close(tp.stack([g[k] for g in looped]), want[k], f'loop grad {k}')
    t_ours, t_theirs, t_loop = median_us([ours, theirs, loop], repeat)
    return [('per-sample grads, MLP 32-64-64-10, batch 64', t_ours, t_theirs),
            ('  same, vs a Python loop of tp.func.grad', t_ours, t_loop, 'loop')]


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 4 * 4, 10))


def per_sample_grads_cnn(repeat):
    torch.manual_seed(5)
    tm, m = _cnn(torch), _cnn(tp)
    _same_params(m, tm)
    xn = np.random.default_rng(6).standard_normal((64, 1, 16, 16)).astype('float32')
    yn = np.random.default_rng(7).integers(0, 10, 64)

    def make(lib, model):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))
        return params, loss

    tparams, tloss = make(torch, tm)
    params, loss = make(tp, m)
    x, y, tx, ty = tp.tensor(xn), tp.tensor(yn), torch.tensor(xn), torch.tensor(yn)
    ours = lambda: tp.func.vmap(tp.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    theirs = lambda: torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, tx, ty)
    got, want = ours(), theirs()
    for k in want:
        _close(got[k], want[k], f'per-sample CNN grad {k}')
    return [('per-sample grads, CNN conv+pool x2+linear, batch 64', *median_us([ours, theirs],
                                                                               repeat))]


def jacrev_mlp(repeat):
    rng = np.random.default_rng(2)
    w1, w2 = (rng.standard_normal((100, 100)).astype('float32') * 0.1 for _ in range(2))
    xn = rng.standard_normal(100).astype('float32')

    def f(lib, a, b):
        return lambda x: lib.tanh(b @ lib.tanh(a @ x))
    ours = lambda: tp.func.jacrev(f(tp, tp.tensor(w1), tp.tensor(w2)))(tp.tensor(xn))
    tw1, tw2 = torch.tensor(w1), torch.tensor(w2)
    theirs = lambda: torch.func.jacrev(f(torch, tw1, tw2))(torch.tensor(xn))
    _close(ours(), theirs(), 'jacrev')
    return [('jacrev, tanh MLP 100->100->100', *median_us([ours, theirs], repeat))]


def ensemble(repeat):
    torch.manual_seed(3)
    tmodels = [_mlp(torch, [16, 32, 8]) for _ in range(10)]
    models = [_mlp(tp, [16, 32, 8]) for _ in range(10)]
    for m, tm in zip(models, tmodels):
        _same_params(m, tm)
    xn = np.random.default_rng(4).standard_normal((64, 16)).astype('float32')

    def make(lib, ms):
        params, buffers = lib.func.stack_module_state(ms)
        base = ms[0]

        def run(p, b, x):
            return lib.func.functional_call(base, (p, b), (x,))
        return lambda x: lib.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    ours, theirs = make(tp, models), make(torch, tmodels)
    x, tx = tp.tensor(xn), torch.tensor(xn)
    _close(ours(x), theirs(tx), 'ensemble')
    return [('ensemble of 10 MLPs 16-32-8, batch 64',
             *median_us([lambda: ours(x), lambda: theirs(tx)], repeat))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--repeat', type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tp.set_num_threads(1)
    rows = (per_sample_grads(args.repeat) + per_sample_grads_cnn(args.repeat)
            + jacrev_mlp(args.repeat) + ensemble(args.repeat))
    print(f'{"case":50s} {"tp us":>10s} {"ref us":>10s} {"ratio":>7s}')
    for row in rows:
        name, ours, ref = row[:3]
        what = 'tp loop' if len(row) > 3 else 'torch'
        print(f'{name:50s} {ours:10.0f} {ref:10.0f} {ours / ref:7.2f}  (vs {what})')


if __name__ == '__main__':
    main()
