"""Matrix-product benchmark: float32 matmul at 256^3, 1024^3, (4096x4096)@(4096x64) and a
batch of 64 products of 128x128, plus bmm, a 3-D@2-D fold and an einsum, TensorPlay vs
PyTorch in one process with the same thread count (ratio = tp time / torch time).

    python benchmarks/bench_linalg.py [--quick] [--markdown] [--threads N]

Each case checks TensorPlay's result against PyTorch's before timing.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import print_table, run_checked


def cases():
    rng = np.random.default_rng(0)
    out = []
    for label, sa, sb, op in (
            ("matmul 256x256x256", (256, 256), (256, 256), "matmul"),
            ("matmul 1024x1024x1024", (1024, 1024), (1024, 1024), "matmul"),
            ("matmul (4096x4096)@(4096x64)", (4096, 4096), (4096, 64), "matmul"),
            ("matmul 64 x (128x128)@(128x128)", (64, 128, 128), (64, 128, 128), "matmul"),
            ("bmm 256 x (32x64)@(64x32)", (256, 32, 64), (256, 64, 32), "bmm"),
            ("matmul (32x128x256)@(256x256)", (32, 128, 256), (256, 256), "matmul")):
        a = rng.standard_normal(sa, dtype=np.float32)
        b = rng.standard_normal(sb, dtype=np.float32)
        x, y, tx, ty = tp.from_numpy(a), tp.from_numpy(b), torch.from_numpy(a), torch.from_numpy(b)
        out.append((label, (lambda x=x, y=y, op=op: getattr(tp, op)(x, y)),
                    (lambda tx=tx, ty=ty, op=op: getattr(torch, op)(tx, ty))))
    a = rng.standard_normal((16, 64, 32), dtype=np.float32)
    b = rng.standard_normal((16, 32, 48), dtype=np.float32)
    x, y, tx, ty = tp.from_numpy(a), tp.from_numpy(b), torch.from_numpy(a), torch.from_numpy(b)
    out.append(("einsum 'bij,bjk->bik' 16x64x32x48", lambda: tp.einsum('bij,bjk->bik', x, y),
                lambda: torch.einsum('bij,bjk->bik', tx, ty)))
    return out


def blas_corename():
    """The OpenBLAS kernel set in use (the library _C links, already loaded)."""
    import ctypes
    import os

    import scipy_openblas32
    lib = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so"))
    lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
    return lib.scipy_openblas_get_corename().decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    tp.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    number, rounds = (3, 3) if args.quick else (10, 9)
    rows = run_checked(cases(), number, rounds)
    print_table(rows, f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}, "
                f"torch {torch.__version__}, OpenBLAS core {blas_corename()}", args.markdown, 36)

if __name__ == "__main__":
    main()
