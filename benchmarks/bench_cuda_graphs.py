"""CUDA graphs against PyTorch's in the same process (issue 31's targets):
  1. replay of a captured chain of 20 small pointwise ops (replay + synchronize, and the
     launch alone over many replays);
  2. one-call replay: tp's ``stage_and_launch`` against PyTorch's ``copy_`` of each input
     plus ``replay()``;
  3. a captured MLP training step (forward, backward, AdamW(capturable=True)) replayed.
Each case checks its results first (replay = eager, both libraries; the training step's
losses also against the other library from the same initial weights).
    python benchmarks/bench_cuda_graphs.py [--repeat N]
"""
import argparse
import statistics
import time

import numpy as np
import torch

import tensorplay as tp


def median_us(fn, sync, inner, repeat):
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / inner * 1e6)
    return statistics.median(times)


def chain(lib, x):
    for _ in range(10):
        x = lib.sin(x * 1.001)
    return x


def capture(lib, fn, *args):
    g = lib.cuda.CUDAGraph()
    s = lib.cuda.Stream()
    s.wait_stream(lib.cuda.current_stream())
    with lib.cuda.stream(s):  # warm-up off the default stream, as PyTorch recommends
        for _ in range(3):
            fn(*args)
    lib.cuda.current_stream().wait_stream(s)
    with lib.cuda.graph(g):
        out = fn(*args)
    return g, out


def case_chain(repeat):
    x_np = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    rows = []
    res = {}
    for name, lib in (('tp', tp), ('torch', torch)):
        x = lib.tensor(x_np, device='cuda')
        g, y = capture(lib, lambda t: chain(lib, t), x)
        g.replay()
        lib.cuda.synchronize()
        assert np.allclose(y.cpu().numpy(), chain(lib, x).cpu().numpy(), rtol=1e-6, atol=1e-6)
        res[name] = y.cpu().numpy()
        sync = lib.cuda.synchronize
        res[name + '_lat'] = median_us(lambda: (g.replay(), sync()), lambda: None, 200, repeat)
        res[name + '_thr'] = median_us(g.replay, sync, 1000, repeat)
    assert np.allclose(res['tp'], res['torch'], rtol=1e-5, atol=1e-6)
    rows.append(('chain of 20 ops, 1024 elements: replay + synchronize', res['tp_lat'], res['torch_lat'], '<= 1.0'))
    rows.append(('chain of 20 ops: replay alone (1000 in a row)', res['tp_thr'], res['torch_thr'], ''))
    return rows


def case_stage(repeat):
    rng = np.random.default_rng(1)
    a_np, b_np = rng.standard_normal((2, 4096)).astype(np.float32)
    res = {}
    for name, lib in (('tp', tp), ('torch', torch)):
        a = lib.tensor(a_np, device='cuda')
        b = lib.tensor(b_np, device='cuda')
        g, y = capture(lib, lambda s, t: lib.relu(s * t) + s, a, b)
        na, nb = lib.tensor(b_np, device='cuda'), lib.tensor(a_np, device='cuda')
        if name == 'tp':
            def step():
                g.stage_and_launch([a, b], [na, nb])
        else:
            def step():
                a.copy_(na)
                b.copy_(nb)
                g.replay()
        step()
        lib.cuda.synchronize()
        expect = np.maximum(b_np * a_np, 0) + b_np
        assert np.allclose(y.cpu().numpy(), expect, rtol=1e-6, atol=1e-6)
        res[name] = median_us(step, lib.cuda.synchronize, 1000, repeat)
    return [('2 inputs staged + replay (tp: stage_and_launch; torch: copy_ x2 + replay)',
             res['tp'], res['torch'], '<= 0.7')]


def case_train(repeat, width=1024, batch=256, steps=5):
    rng = np.random.default_rng(2)
    ws = [rng.standard_normal((width, width)).astype(np.float32) / np.sqrt(width) for _ in range(3)]
    bs = [np.zeros(width, np.float32) for _ in range(3)]
    xs = rng.standard_normal((steps + 1, batch, width)).astype(np.float32)
    ys = rng.standard_normal((steps + 1, batch, width)).astype(np.float32)
    res, losses = {}, {}
    for name, lib in (('tp', tp), ('torch', torch)):
        layers = []
        for w, b in zip(ws, bs):
            lin = lib.nn.Linear(width, width).cuda()
            with lib.no_grad():
                lin.weight.copy_(lib.tensor(w, device='cuda'))
                lin.bias.copy_(lib.tensor(b, device='cuda'))
            layers += [lin, lib.nn.ReLU()]
        model = lib.nn.Sequential(*layers[:-1])
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
        sx = lib.tensor(xs[0], device='cuda')
        sy = lib.tensor(ys[0], device='cuda')

        def step():
            opt.zero_grad(set_to_none=True)
            loss = lib.nn.functional.mse_loss(model(sx), sy)
            loss.backward()
            opt.step()
            return loss
        s = lib.cuda.Stream()
        s.wait_stream(lib.cuda.current_stream())
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            with lib.cuda.stream(s):
                for _ in range(3):
                    step()
        lib.cuda.current_stream().wait_stream(s)
        g = lib.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with lib.cuda.graph(g):
            static_loss = lib.nn.functional.mse_loss(model(sx), sy)
            static_loss.backward()
            opt.step()
        seq = []
        for i in range(1, steps + 1):
            sx.copy_(lib.tensor(xs[i], device='cuda'))
            sy.copy_(lib.tensor(ys[i], device='cuda'))
            g.replay()
            seq.append(float(static_loss.item()))
        losses[name] = seq
        res[name] = median_us(g.replay, lib.cuda.synchronize, 20, repeat)
    assert np.allclose(losses['tp'], losses['torch'], rtol=1e-3), (losses['tp'], losses['torch'])
    return [(f'captured MLP step (3 Linear {width}, batch {batch}, AdamW capturable) replayed',
             res['tp'], res['torch'], '<= 1.0')]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--repeat', type=int, default=15)
    args = ap.parse_args()
    print(f'device: {torch.cuda.get_device_name()}, torch {torch.__version__}')
    rows = case_chain(args.repeat) + case_stage(args.repeat) + case_train(args.repeat)
    print(f'{"case":<78} {"tp us":>9} {"torch us":>9} {"ratio":>6}  target')
    for name, a, b, target in rows:
        print(f'{name:<78} {a:9.2f} {b:9.2f} {a / b:6.2f}  {target}')


if __name__ == '__main__':
    main()
