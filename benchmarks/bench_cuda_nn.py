"""CUDA backend II on the GPU: layer_norm, rms_norm, softmax, cross entropy, fused attention
and a ResNet-50 stage's convolutions (cuDNN), TensorPlay vs PyTorch in one process.

Kernel times come from CUDA events around `reps` back-to-back calls (median of rounds);
bandwidth = bytes read + written / time, compared with the copy bandwidth PyTorch measures
on the same machine. Each case first checks TensorPlay's result against PyTorch's on the
same inputs (shared through DLPack).

    python benchmarks/bench_cuda_nn.py [--quick] [--markdown]
"""
import argparse
import os
import sys

import torch

import tensorplay as tp
import tensorplay.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cuda import check, gpu_time, print_rows, rows_on_timeout  # noqa: E402


def same_input(shape, dtype, seed=0, scale=1.0):
    t = (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale).to(getattr(torch, dtype)).cuda()
    return tp.from_dlpack(t), t


def conv_block_case(rows, n, reps, rounds):
    """The convolutions of a ResNet-50 stage-2 bottleneck (1x1 256->64, 3x3 64->64, 1x1 64->256
    at 56x56), channels last, bf16, forward + backward (input and weight gradients), with
    cuDNN's benchmark mode on in both libraries (the algorithm choice is what differs), through
    cuDNN's backend API (the default, Note [cuDNN backend API]); then the same through the
    legacy API (tp._C._cudnn_set_backend_api(False)), against the same torch time."""
    if not tp.backends.cudnn.is_available():
        rows.append(("conv block: this build has no cuDNN", float("nan"), float("nan"), "ms", ""))
        return
    tp.backends.cudnn.benchmark = torch.backends.cudnn.benchmark = True

    def cl_input(shape, seed, scale):
        t = (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale).to(torch.bfloat16)
        t = t.cuda().contiguous(memory_format=torch.channels_last)
        x = tp.from_dlpack(t)
        if not x.is_contiguous(memory_format=tp.channels_last):
            x = x.contiguous(memory_format=tp.channels_last)
        return x.requires_grad_(), t.requires_grad_()

    shapes, pads = [(64, 256, 1, 1), (64, 64, 3, 3), (256, 64, 1, 1)], (0, 1, 0)
    x, xt = cl_input((n, 256, 56, 56), 11, 1.0)
    ws = [cl_input(s, 12 + i, (2.0 / (s[1] * s[2] * s[3])) ** 0.5) for i, s in enumerate(shapes)]  # He init
    go, got = cl_input((n, 256, 56, 56), 15, 1.0)
    ins, ins_t = [x] + [w for w, _ in ws], [xt] + [wt for _, wt in ws]

    def block(f, leaves):
        a = leaves[0]
        for w, p in zip(leaves[1:], pads):
            a = f.conv2d(a, w, padding=p)
        return a

    def block_tp():
        return tp.autograd.grad(block(F, ins), ins, go.detach())

    def block_th():
        return torch.autograd.grad(block(torch.nn.functional, ins_t), ins_t, got.detach())

    def check_block(what):
        with tp.no_grad(), torch.no_grad():
            ref = block(torch.nn.functional, ins_t)
            check(what, block(F, ins), ref, rtol=3e-2, atol=3e-2 * float(ref.abs().max()))
        for name, a, b in zip(("input", "w1x1a", "w3x3", "w1x1b"), block_tp(), block_th()):
            check(f"{what} grad {name}", a, b, rtol=3e-2, atol=3e-2 * float(b.abs().max()))

    check_block("conv block")
    a = gpu_time(tp, block_tp, reps, rounds)
    b = gpu_time(torch, block_th, reps, rounds)
    flops = 3 * 2 * n * 56 * 56 * sum(s[0] * s[1] * s[2] * s[3] for s in shapes)  # backward: 2x forward
    rows.append((f"conv block fwd+bwd N={n} 56x56 bf16 NHWC", a, b, "ms",
                 f"{flops / a / 1e9:.0f} vs {flops / b / 1e9:.0f} TFLOP/s; target ratio <= 1"))

    # the same block through cuDNN's legacy calls (cuDNN 9 builds a plan on each of them)
    def legacy_api():
        check_block("conv block (legacy API)")
        return gpu_time(tp, block_tp, reps, rounds)

    switched_row(rows, f"conv block fwd+bwd N={n} 56x56 bf16 NHWC (legacy API)",
                 (tp._C._cudnn_backend_api, tp._C._cudnn_set_backend_api), False, legacy_api, b,
                 lambda a: f"{flops / a / 1e9:.0f} vs {flops / b / 1e9:.0f} TFLOP/s")


def switched_row(rows, name, switch, value, measure, torch_time, note):
    """A row for the path behind a switch ((getter, setter)) set to `value` for `measure` (which
    checks against torch, then returns the time), restored after. A failed check or a CUDA
    error becomes the row's note instead of ending the run (and the other rows)."""
    get, put = switch
    prev = get()
    put(value)
    try:
        a = measure()
        text = note(a)
    except (SystemExit, RuntimeError) as e:
        a, text = float("nan"), f"not timed: {str(e)[:90]}"
    finally:
        put(prev)
    rows.append((name, a, torch_time, "ms", text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true",
                    help="4096 rows instead of 32768 (cross entropy: 1024; attention: seq 1024; "
                         "conv block: batch 16)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--row-pipeline", action="store_true",
                    help="also time the register-row kernels the pipelined ones replaced (Note [Row pipeline]), "
                         "the warp-row ones (Note [Warp rows]) and the 256-thread half-type ones (Note [Lean half "
                         "rows])")
    ap.add_argument("--rows-only", action="store_true",
                    help="only the layer_norm / rms_norm / softmax rows (no cross entropy, attention or conv)")
    ap.add_argument("--attention-only", action="store_true",
                    help="only the attention rows (ours, and cuDNN's graphs where the build has them)")
    args = ap.parse_args()
    if os.environ.get("TP_BENCH_SKIP_CUDNN_SDPA"):  # scripts/gpu_check.sh: its cuDNN SDPA probe crashed
        tp._C._cudnn_set_sdpa(False)
    rows_n, ce_rows = (4096, 1024) if args.quick else (32768, 32768)
    n, vocab = 4096, 50257
    reps, rounds = (5, 5) if args.quick else (10, 7)
    rows = []  # (case, tp, torch, unit, note)
    rows_on_timeout("CUDA backend II", rows, args.markdown, 44)

    xt = torch.randn(rows_n * n, device="cuda")
    zt = torch.empty_like(xt)
    copy_ms = gpu_time(torch, lambda: zt.copy_(xt), reps, rounds)
    copy_bw = 2 * xt.numel() * 4 / 1e9 / (copy_ms / 1e3)
    xt = zt = None  # frees the device memory
    rows.append((f"torch copy_ {rows_n}x{n} f32 (ceiling)", copy_bw, copy_bw, "GB/s", ""))

    def add_bw(name, f_tp, f_th, nbytes):
        a = gpu_time(tp, f_tp, reps, rounds)
        b = gpu_time(torch, f_th, reps, rounds)
        bw_a, bw_b = nbytes / 1e9 / (a / 1e3), nbytes / 1e9 / (b / 1e3)
        rows.append((name, bw_a, bw_b, "GB/s", f"{bw_a / copy_bw:.2f} of copy"))

    def switched_bw(settings, name, f_tp, f_th, nbytes, tol):
        """A row of the kernels the defaults do not run, under tp.cuda._kernel_switches(**settings)
        (Note [Packed half rows]: packed_half_rows, 256 by default; Note [Narrow norm rows]:
        narrow_norm_rows, on; Note [Warp rows]: warp_rows, off; Note [Lean half rows]:
        lean_half_rows, on), checked against torch first; a failed check or a CUDA error becomes
        the row's note."""
        with tp.cuda._kernel_switches(**settings):
            try:
                check(name, f_tp(), f_th(), rtol=tol, atol=tol)
                add_bw(name, f_tp, f_th, nbytes)
            except (SystemExit, RuntimeError) as e:
                rows.append((name, float("nan"), float("nan"), "GB/s", f"not timed: {str(e)[:90]}"))

    # beside the defaults for bfloat16 rows of 4096 (Note [Packed half rows], 256 threads): the
    # packed kernels on 128 threads, and without them the pipelined rows (norms: narrow, on 128
    # threads; softmax: lean), the pipelined rows on 256 threads, the warp rows, the register rows
    register_rows = {"row_pipeline": False, "packed_half_rows": 0}
    norm_variants = {"packed 128": {"packed_half_rows": 128}, "pipelined": {"packed_half_rows": 0},
                     "256 threads": {"packed_half_rows": 0, "narrow_norm_rows": False},
                     "warp rows": {"packed_half_rows": 0, "warp_rows": True}}
    softmax_variants = {**norm_variants, "256 threads": {"packed_half_rows": 0, "lean_half_rows": False}}
    for dtype, tol in [] if args.attention_only else [("float32", 1e-4), ("bfloat16", 2e-2)]:
        size = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
        x, xt = same_input((rows_n, n), dtype, seed=1)
        w, wt = same_input((n,), dtype, seed=2)
        b, bt = same_input((n,), dtype, seed=3)
        g, gt = same_input((rows_n, n), dtype, seed=4)
        tag = f"{rows_n}x{n} {'f32' if dtype == 'float32' else 'bf16'}"

        check("layer_norm", F.layer_norm(x, (n,), w, b), torch.nn.functional.layer_norm(xt, (n,), wt, bt),
              rtol=tol, atol=tol)
        add_bw(f"layer_norm fwd {tag}", lambda: F.layer_norm(x, (n,), w, b),
               lambda: torch.nn.functional.layer_norm(xt, (n,), wt, bt), 2 * x.numel() * size)
        if args.row_pipeline:  # Note [Row pipeline]: the register-row kernel, measured beside
            switched_bw(register_rows, f"layer_norm fwd {tag} register rows", lambda: F.layer_norm(x, (n,), w, b),
                        lambda: torch.nn.functional.layer_norm(xt, (n,), wt, bt), 2 * x.numel() * size, tol)
            for variant, settings in norm_variants.items() if dtype == "bfloat16" else ():
                switched_bw(settings, f"layer_norm fwd {tag} {variant}", lambda: F.layer_norm(x, (n,), w, b),
                            lambda: torch.nn.functional.layer_norm(xt, (n,), wt, bt), 2 * x.numel() * size, tol)
                switched_bw(settings, f"rms_norm fwd {tag} {variant}", lambda: F.rms_norm(x, (n,), w),
                            lambda: torch.nn.functional.rms_norm(xt, (n,), wt), 2 * x.numel() * size, tol)

        _, m, r = tp.native_layer_norm(x, [n], w, b, 1e-5)
        _, mt, rt = torch.ops.aten.native_layer_norm(xt, [n], wt, bt, 1e-5)
        if [str(t.dtype).split(".")[-1] for t in (m, r)] != [str(t.dtype).split(".")[-1] for t in (mt, rt)]:
            raise SystemExit(f"native_layer_norm statistics: {m.dtype} / {r.dtype}, torch's {mt.dtype} / {rt.dtype}")
        mask = [True, True, True]
        ours = tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True)
        ref = torch.ops.aten.native_layer_norm_backward(gt, xt, [n], mt, rt, wt, bt, mask)
        check("layer_norm_backward grad_input", ours[0], ref[0], rtol=tol, atol=tol)
        check("layer_norm_backward grad_weight", ours[1], ref[1], rtol=5 * tol, atol=5 * tol * rows_n ** 0.5)
        add_bw(f"layer_norm bwd {tag}", lambda: tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True),
               lambda: torch.ops.aten.native_layer_norm_backward(gt, xt, [n], mt, rt, wt, bt, mask),
               3 * x.numel() * size)
        if args.row_pipeline:  # Note [Row pipeline]: the register-row kernel, measured beside
            with tp.cuda._kernel_switches(row_pipeline=False):
                ours = tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True)
                check("layer_norm_backward grad_input (register rows)", ours[0], ref[0], rtol=tol, atol=tol)
                check("layer_norm_backward grad_weight (register rows)", ours[1], ref[1], rtol=5 * tol,
                      atol=5 * tol * rows_n ** 0.5)
                add_bw(f"layer_norm bwd {tag} register rows",
                       lambda: tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True),
                       lambda: torch.ops.aten.native_layer_norm_backward(gt, xt, [n], mt, rt, wt, bt, mask),
                       3 * x.numel() * size)

        check("rms_norm", F.rms_norm(x, (n,), w), torch.nn.functional.rms_norm(xt, (n,), wt), rtol=tol, atol=tol)
        add_bw(f"rms_norm fwd {tag}", lambda: F.rms_norm(x, (n,), w),
               lambda: torch.nn.functional.rms_norm(xt, (n,), wt), 2 * x.numel() * size)
        _, r = tp._fused_rms_norm(x, [n], w, None)
        _, rt = torch._fused_rms_norm(xt, [n], wt, None)
        ours = tp._fused_rms_norm_backward(g, x, [n], r, w, True, True)
        ref = torch.ops.aten._fused_rms_norm_backward(gt, xt, [n], rt, wt, [True, True])
        check("rms_norm_backward grad_input", ours[0], ref[0], rtol=tol, atol=tol)
        check("rms_norm_backward grad_weight", ours[1], ref[1], rtol=5 * tol, atol=5 * tol * rows_n ** 0.5)
        add_bw(f"rms_norm bwd {tag}", lambda: tp._fused_rms_norm_backward(g, x, [n], r, w, True, True),
               lambda: torch.ops.aten._fused_rms_norm_backward(gt, xt, [n], rt, wt, [True, True]),
               3 * x.numel() * size)

        check("softmax", tp.softmax(x, -1), torch.softmax(xt, -1), rtol=tol, atol=tol)
        add_bw(f"softmax fwd {tag}", lambda: tp.softmax(x, -1), lambda: torch.softmax(xt, -1), 2 * x.numel() * size)
        if args.row_pipeline:  # Note [Row pipeline]: the register-row kernel, measured beside
            switched_bw(register_rows, f"softmax fwd {tag} register rows", lambda: tp.softmax(x, -1),
                        lambda: torch.softmax(xt, -1), 2 * x.numel() * size, tol)
            for variant, settings in softmax_variants.items() if dtype == "bfloat16" else ():
                switched_bw(settings, f"softmax fwd {tag} {variant}", lambda: tp.softmax(x, -1),
                            lambda: torch.softmax(xt, -1), 2 * x.numel() * size, tol)
        x = xt = g = gt = None  # frees the device memory
    if args.rows_only:
        print_rows("CUDA backend II (rows)", rows, args.markdown, 44)
        return

    if not args.attention_only:  # cross entropy
        x, xt = same_input((ce_rows, vocab), "bfloat16", seed=5, scale=3.0)
        tt = torch.randint(0, vocab, (ce_rows,), generator=torch.Generator().manual_seed(6)).cuda()
        tt[::7] = -100
        t = tp.from_dlpack(tt)
        xg, xgt = x.requires_grad_(), xt.requires_grad_()

        def ce_tp():
            return tp.autograd.grad(F.cross_entropy(xg, t), xg)[0]

        def ce_th():
            return torch.autograd.grad(torch.nn.functional.cross_entropy(xgt, tt), xgt)[0]

        check("cross_entropy", F.cross_entropy(xg, t).detach(), torch.nn.functional.cross_entropy(xgt, tt).detach(),
              rtol=2e-2, atol=2e-2)
        check("cross_entropy grad", ce_tp(), ce_th(), rtol=2e-2, atol=1e-4)
        a = gpu_time(tp, ce_tp, reps, rounds)
        b = gpu_time(torch, ce_th, reps, rounds)
        rows.append((f"cross_entropy fwd+bwd {ce_rows}x{vocab} bf16", a * 1e3, b * 1e3, "us", "target ratio <= 0.8"))

        x = xt = xg = xgt = None  # frees the device memory
    # fused attention (Note [Flash attention on mma.sync]): forward + backward, causal, bf16
    b_, h_, seq, hd = (8, 16, 1024 if args.quick else 4096, 128)
    (q, qt), (k, kt), (v, vt) = (same_input((b_, h_, seq, hd), "bfloat16", seed=s) for s in (7, 8, 9))
    go, got = same_input((b_, h_, seq, hd), "bfloat16", seed=10)
    ins, ins_t = [t.requires_grad_() for t in (q, k, v)], [t.requires_grad_() for t in (qt, kt, vt)]

    def sdpa_tp():
        return tp.autograd.grad(F.scaled_dot_product_attention(*ins, is_causal=True), ins, go)

    def sdpa_th():
        return torch.autograd.grad(torch.nn.functional.scaled_dot_product_attention(*ins_t, is_causal=True), ins_t, got)

    out = F.scaled_dot_product_attention(*ins, is_causal=True)
    if out.grad_fn.name() != "FlashAttentionBackward0":
        raise SystemExit("scaled_dot_product_attention: the fused kernel was not used")
    check("scaled_dot_product_attention", out.detach(),
          torch.nn.functional.scaled_dot_product_attention(*ins_t, is_causal=True).detach(), rtol=2e-2, atol=2e-2)
    for name, ours, theirs in zip(("query", "key", "value"), sdpa_tp(), sdpa_th()):
        check(f"scaled_dot_product_attention grad_{name}", ours, theirs, rtol=5e-2, atol=5e-2)
    a = gpu_time(tp, sdpa_tp, reps, rounds)
    b = gpu_time(torch, sdpa_th, reps, rounds)
    flops = 3.5 * 4 * b_ * h_ * seq * seq * hd / 2  # causal: half the scores; backward 2.5x forward
    rows.append((f"sdpa fwd+bwd {b_}x{h_}x{seq}x{hd} bf16 causal", a, b, "ms",
                 f"{flops / a / 1e9:.0f} vs {flops / b / 1e9:.0f} TFLOP/s"))
    if not args.attention_only:
        conv_block_case(rows, 16 if args.quick else 64, reps, rounds)

    # the same attention on the other fused path: our mma.sync kernels when cuDNN's SDPA graphs
    # are the default (Note [cuDNN attention]), the graphs when they are not
    def other_path():
        what = "cuDNN" if tp._C._cudnn_sdpa() else "mma"
        check(f"scaled_dot_product_attention ({what})", F.scaled_dot_product_attention(*ins, is_causal=True).detach(),
              torch.nn.functional.scaled_dot_product_attention(*ins_t, is_causal=True).detach(), rtol=2e-2, atol=2e-2)
        for name, ours, theirs in zip(("query", "key", "value"), sdpa_tp(), sdpa_th()):
            check(f"scaled_dot_product_attention grad_{name} ({what})", ours, theirs, rtol=5e-2, atol=5e-2)
        if tp._C._cudnn_sdpa() and tp._C._cudnn_sdpa_graphs() < 2:
            raise SystemExit("cuDNN declined the attention graphs")
        return gpu_time(tp, sdpa_tp, reps, rounds)

    if os.environ.get("TP_BENCH_SKIP_CUDNN_SDPA"):  # scripts/gpu_check.sh: its probe failed
        rows.append(("sdpa (cuDNN graphs): skipped, the probe failed", float("nan"), float("nan"), "ms", ""))
    elif tp._C._cudnn_sdpa_available():
        other = not tp._C._cudnn_sdpa()
        switched_row(rows, f"sdpa fwd+bwd {b_}x{h_}x{seq}x{hd} bf16 causal ({'cuDNN graphs' if other else 'mma kernels'})",
                     (tp._C._cudnn_sdpa, tp._C._cudnn_set_sdpa), other, other_path, b,
                     lambda a: f"{flops / a / 1e9:.0f} vs {flops / b / 1e9:.0f} TFLOP/s")
    else:
        rows.append(("sdpa (cuDNN graphs): this build has no cuDNN frontend", float("nan"), float("nan"), "ms", ""))
    q = qt = k = kt = v = vt = go = got = ins = ins_t = None  # frees the device memory

    print_rows("CUDA backend II", rows, args.markdown, 44)


if __name__ == "__main__":
    main()
