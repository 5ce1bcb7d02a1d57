"""tp.fft and stft (issue 32): the issue's rows, fft of 1M float32 and complex64, rfft2 of
1024^2 and stft of 1M samples (targets <= 1.0x PyTorch 2.13 CPU), plus the inverse
transforms, TensorPlay vs PyTorch in one process with the same thread count (ratio = tp time
/ torch time).

    python benchmarks/bench_fft.py [--quick] [--markdown] [--threads N]

Each case checks TensorPlay's result against PyTorch's before timing.
"""
import argparse
import warnings

import numpy as np
import torch

import tensorplay as tp
from common import print_table, run_checked


def pair(a):
    return tp.from_numpy(a), torch.from_numpy(a)


def cases():
    rng = np.random.default_rng(0)
    x, tx = pair(rng.standard_normal(1 << 20, dtype=np.float32))
    z, tz = pair((rng.standard_normal(1 << 20, dtype=np.float32)
                  + 1j * rng.standard_normal(1 << 20, dtype=np.float32)).astype(np.complex64))
    img, timg = pair(rng.standard_normal((1024, 1024), dtype=np.float32))
    spec, tspec = pair(np.fft.rfft(rng.standard_normal(1 << 20)).astype(np.complex64))
    sig, tsig = pair(rng.standard_normal(1 << 20, dtype=np.float32))
    w, tw = tp.hann_window(400), torch.hann_window(400)
    stft_kw = dict(n_fft=400, hop_length=160, return_complex=True)
    S, tS = tp.stft(sig, window=w, **stft_kw), torch.stft(tsig, window=tw, **stft_kw)
    view = tp.view_as_real
    tview = torch.view_as_real
    return [
        ("fft 1M float32", lambda: view(tp.fft.fft(x)), lambda: tview(torch.fft.fft(tx))),
        ("fft 1M complex64", lambda: view(tp.fft.fft(z)), lambda: tview(torch.fft.fft(tz))),
        ("ifft 1M complex64", lambda: view(tp.fft.ifft(z)), lambda: tview(torch.fft.ifft(tz))),
        ("rfft 1M float32", lambda: view(tp.fft.rfft(x)), lambda: tview(torch.fft.rfft(tx))),
        ("irfft 1M float32", lambda: tp.fft.irfft(spec), lambda: torch.fft.irfft(tspec)),
        ("rfft2 1024x1024 float32", lambda: view(tp.fft.rfft2(img)), lambda: tview(torch.fft.rfft2(timg))),
        ("stft 1M, n_fft 400, hop 160", lambda: view(tp.stft(sig, window=w, **stft_kw)),
         lambda: tview(torch.stft(tsig, window=tw, **stft_kw))),
        ("istft of that", lambda: tp.istft(S, 400, 160, window=w), lambda: torch.istft(tS, 400, 160, window=tw)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    tp.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    number, rounds = (3, 3) if args.quick else (10, 9)
    rows = run_checked(cases(), number, rounds, rtol=1e-3, atol=5e-2)
    print_table(rows, f"FFT, {args.threads} threads", args.markdown, width=30)


if __name__ == "__main__":
    main()
