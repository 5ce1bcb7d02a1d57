"""nn kernel benchmark (issue 8), forward + backward of each case, TensorPlay vs PyTorch in
one process (ratio = tp time / torch time): conv2d 3x3 / 1x1 / depthwise 3x3 on
8x64x56x56, max_pool2d 3x3 stride 2, batch_norm (training) and group_norm on 8x64x56x56,
layer_norm and softmax on 1024x1024, activations, embedding_bag (sum, mean) of 4096 bags of
15-25 rows of a 100000x128 weight; the conv, pooling and norm cases again with channels-last
inputs and cotangents.

    python benchmarks/bench_nn_kernels.py [--quick] [--markdown] [--threads N]

Each case first checks the output and every gradient against PyTorch's (rtol=atol=1e-3),
and for channels-last cases that the output and input gradient have PyTorch's strides.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare, print_table


def _fwd_bwd(fn, inputs, cot):
    """A callable running fn forward and backward (the timed work); returns the output."""
    def run():
        for t in inputs:
            t.grad = None
        out = fn(*inputs)
        out.backward(cot)
        return out
    return run


def case(name, shapes, tp_fn, torch_fn, out_shape, rng, channels_last=False):
    """(name, tp step, torch step, check): `check` compares outputs and every gradient.
    channels_last: the first input and the cotangent are laid out channels last."""
    arrays = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    cot = rng.standard_normal(out_shape, dtype=np.float32)

    def tensors(lib):
        ts = [lib.from_numpy(a.copy()) for a in arrays]
        c = lib.from_numpy(cot.copy())
        if channels_last:
            ts[0], c = ts[0].contiguous(memory_format=lib.channels_last), c.contiguous(memory_format=lib.channels_last)
        return [t.requires_grad_() for t in ts], c
    (tp_in, tp_cot), (th_in, th_cot) = tensors(tp), tensors(torch)
    tp_step, th_step = _fwd_bwd(tp_fn, tp_in, tp_cot), _fwd_bwd(torch_fn, th_in, th_cot)

    def check():
        results = [(tp_step().detach(), th_step().detach())]
        results += [(a.grad, b.grad) for a, b in zip(tp_in, th_in)]
        for i, (ours, ref) in enumerate(results):
            if channels_last and i < 2 and tuple(ours.stride()) != tuple(ref.stride()):  # output, input gradient
                raise SystemExit(f"{name}: TensorPlay's strides {ours.stride()} differ from PyTorch's {ref.stride()}")
            ours, ref = np.asarray(ours.tolist()), ref.numpy()
            if ours.shape != ref.shape or not np.allclose(ours, ref, rtol=1e-3, atol=1e-3):
                raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
    return name, tp_step, th_step, check


def _bags(rng, num_bags, lo, hi, rows):
    """(indices, offsets) of num_bags bags of lo..hi random rows each, for both libraries."""
    lengths = rng.integers(lo, hi + 1, num_bags)
    idx = rng.integers(0, rows, int(lengths.sum()))
    offs = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return (tp.from_numpy(idx), tp.from_numpy(offs)), (torch.from_numpy(idx), torch.from_numpy(offs))


def cases():
    rng = np.random.default_rng(0)
    x = (8, 64, 56, 56)
    (pi, po), (ti, to) = _bags(rng, 4096, 15, 25, 100000)
    bags = [case(f"embedding_bag {m} 100000x128", [(100000, 128)],
                 lambda w, m=m: tp.nn.functional.embedding_bag(pi, w, po, mode=m),
                 lambda w, m=m: torch.nn.functional.embedding_bag(ti, w, to, mode=m), (4096, 128), rng)
            for m in ("sum", "mean")]
    return bags + [
        case("conv2d 3x3 8x64x56x56->64", [x, (64, 64, 3, 3), (64,)],
             lambda a, w, b: tp.conv2d(a, w, b, padding=1), lambda a, w, b: torch.conv2d(a, w, b, padding=1), x, rng),
        case("conv2d 1x1 8x64x56x56->64", [x, (64, 64, 1, 1), (64,)],
             lambda a, w, b: tp.conv2d(a, w, b), lambda a, w, b: torch.conv2d(a, w, b), x, rng),
        case("depthwise 3x3 8x64x56x56", [x, (64, 1, 3, 3), (64,)],
             lambda a, w, b: tp.conv2d(a, w, b, padding=1, groups=64),
             lambda a, w, b: torch.conv2d(a, w, b, padding=1, groups=64), x, rng),
        case("max_pool2d 3x3/2 8x64x56x56", [x], lambda a: tp.max_pool2d(a, 3, 2, 1),
             lambda a: torch.max_pool2d(a, 3, 2, 1), (8, 64, 28, 28), rng),
        case("batch_norm train 8x64x56x56", [x, (64,), (64,)],
             lambda a, w, b: tp.batch_norm(a, w, b, None, None, True, 0.1, 1e-5),
             lambda a, w, b: torch.batch_norm(a, w, b, None, None, True, 0.1, 1e-5, False), x, rng),
        case("layer_norm 1024x1024", [(1024, 1024), (1024,), (1024,)],
             lambda a, w, b: tp.layer_norm(a, [1024], w, b), lambda a, w, b: torch.layer_norm(a, [1024], w, b),
             (1024, 1024), rng),
        case("softmax 1024x1024", [(1024, 1024)], lambda a: tp.softmax(a, -1), lambda a: torch.softmax(a, -1),
             (1024, 1024), rng),
        case("gelu 8x64x56x56", [x], lambda a: tp.nn.functional.gelu(a),
             lambda a: torch.nn.functional.gelu(a), x, rng),
        case("gelu tanh 8x64x56x56", [x], lambda a: tp.nn.functional.gelu(a, approximate="tanh"),
             lambda a: torch.nn.functional.gelu(a, approximate="tanh"), x, rng),
        case("silu 8x64x56x56", [x], lambda a: tp.nn.functional.silu(a),
             lambda a: torch.nn.functional.silu(a), x, rng),
        case("group_norm 8 groups 8x64x56x56", [x, (64,), (64,)],
             lambda a, w, b: tp.group_norm(a, 8, w, b), lambda a, w, b: torch.group_norm(a, 8, w, b), x, rng),
    ] + channels_last_cases(rng)


def channels_last_cases(rng):
    """The conv, pooling and norm cases with channels-last input and cotangent."""
    x = (8, 64, 56, 56)
    F, TF = tp.nn.functional, torch.nn.functional
    return [case(f"{name} channels_last", shapes, lambda *a, f=fn: f(F, *a), lambda *a, f=fn: f(TF, *a), out, rng,
                 channels_last=True) for name, shapes, fn, out in [
        ("conv2d 3x3", [x, (64, 64, 3, 3), (64,)], lambda F, a, w, b: F.conv2d(a, w, b, padding=1), x),
        ("conv2d 1x1", [x, (64, 64, 1, 1), (64,)], lambda F, a, w, b: F.conv2d(a, w, b), x),
        ("depthwise 3x3", [x, (64, 1, 3, 3), (64,)], lambda F, a, w, b: F.conv2d(a, w, b, padding=1, groups=64), x),
        ("max_pool2d 3x3/2", [x], lambda F, a: F.max_pool2d(a, 3, 2, 1), (8, 64, 28, 28)),
        ("avg_pool2d 3x3/2", [x], lambda F, a: F.avg_pool2d(a, 3, 2, 1), (8, 64, 28, 28)),
        ("batch_norm train", [x, (64,), (64,)], lambda F, a, w, b: F.batch_norm(a, None, None, w, b, True), x),
        ("group_norm 8 groups", [x, (64,), (64,)], lambda F, a, w, b: F.group_norm(a, 8, w, b), x)]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="thread count of both libraries (default: theirs)")
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    number, rounds = (2, 3) if args.quick else (5, 7)
    rows = []
    for name, tp_step, th_step, check in cases():
        check()
        a, b = compare(tp_step, th_step, number, rounds)
        rows.append((name, a * 1e3, b * 1e3))
    print_table(rows, f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}, "
                f"torch {torch.__version__}", args.markdown, width=36)


if __name__ == "__main__":
    main()
