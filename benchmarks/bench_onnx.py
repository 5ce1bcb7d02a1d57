"""tp.onnx benchmark (issue 37): export time of nanoGPT's GPT, 12 layers
(tensorplay.testing.gpt; 4 heads, embedding 128, vocabulary 1024, block 128: narrow widths,
as export cost is per op, not per weight), with dynamic batch and sequence axes, written to a
file with external data, tp.onnx.export vs torch.onnx.export(..., dynamo=True) on the same
program in torch with the same weights, in one process (target: ratio <= 0.5).

    python benchmarks/bench_onnx.py [--quick]

Before timing, each export is run in ONNX Runtime at sizes other than the traced ones and
compared with its library's eager output (and ours with torch's eager output).
"""
import argparse
import logging
import os
import platform
import tempfile
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch

import tensorplay as tp
from tensorplay.testing.gpt import gpt2
from common import compare

CONFIG = dict(n_layer=12, n_head=4, n_embd=128, vocab_size=1024, block_size=128)
TRACE_SHAPE = (2, 16)
CHECK_SHAPES = [(3, 37), (1, 5)]


def models():
    ours, theirs = gpt2(tp, **CONFIG).eval(), gpt2(torch, **CONFIG).eval()
    state = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    return ours, theirs


def export_tp(model, path):
    tp.onnx.export(model, (tp.zeros(TRACE_SHAPE, dtype=tp.int64),), path, input_names=['idx'],
                   dynamic_axes={'idx': {0: 'batch', 1: 'seq'}})


def export_torch(model, path):
    batch, seq = torch.export.Dim('batch'), torch.export.Dim('seq', max=CONFIG['block_size'])
    torch.onnx.export(model, (torch.zeros(TRACE_SHAPE, dtype=torch.int64),), path,
                      input_names=['idx'], dynamo=True, dynamic_shapes=({0: batch, 1: seq},),
                      verbose=False)


def ort_run(path, idx):
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    return sess.run(None, {sess.get_inputs()[0].name: idx})[0]


def check(ours, theirs, folder):
    p_tp, p_torch = os.path.join(folder, 'tp.onnx'), os.path.join(folder, 'torch.onnx')
    t0 = time.perf_counter()
    export_tp(ours, p_tp)
    t1 = time.perf_counter()
    export_torch(theirs, p_torch)
    t2 = time.perf_counter()
    rng = np.random.default_rng(0)
    for shape in CHECK_SHAPES:
        idx = rng.integers(0, CONFIG['vocab_size'], shape, dtype=np.int64)
        with tp.no_grad():
            eager_tp = ours(tp.from_numpy(idx)).numpy()
        with torch.no_grad():
            eager_torch = theirs(torch.from_numpy(idx)).numpy()
        for name, path, ref in (('tp.onnx', p_tp, eager_tp), ('torch.onnx', p_torch, eager_torch)):
            got = ort_run(path, idx)
            if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-5, atol=1e-5):
                raise SystemExit(f'{name}: ONNX Runtime at {shape} differs from eager '
                                 f'(max {np.abs(got - ref).max():.3g})')
        if not np.allclose(eager_tp, eager_torch, rtol=1e-4, atol=1e-4):
            raise SystemExit('tensorplay and torch eager outputs differ')
    n_nodes = len(__import__('onnx').load(p_tp, load_external_data=False).graph.node)
    return n_nodes, t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args()
    rounds = 3 if args.quick else 7
    warnings.filterwarnings('ignore')
    logging.disable(logging.WARNING)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    ours, theirs = models()
    with tempfile.TemporaryDirectory() as folder:
        nodes, first_tp, first_torch = check(ours, theirs, folder)
        p_tp, p_torch = os.path.join(folder, 'a.onnx'), os.path.join(folder, 'b.onnx')
        t_tp, t_torch = compare(lambda: export_tp(ours, p_tp), lambda: export_torch(theirs, p_torch),
                                number=1, rounds=rounds)
    print(f'# bench_onnx: {platform.processor() or platform.machine()}, torch {torch.__version__}, '
          f'onnxruntime {ort.__version__}, median of {rounds} interleaved rounds')
    print(f'export GPT {CONFIG["n_layer"]} layers (embedding {CONFIG["n_embd"]}, dynamic batch '
          f'and seq; ours {nodes} ONNX nodes): tp.onnx {t_tp * 1e3:.0f} ms  torch.onnx(dynamo) '
          f'{t_torch * 1e3:.0f} ms  ratio {t_tp / t_torch:.3f} (target <= 0.5)')
    print(f'  first export in the process (imports, caches cold): tp.onnx {first_tp * 1e3:.0f} ms  '
          f'torch.onnx {first_torch * 1e3:.0f} ms  ratio {first_tp / first_torch:.3f}')


if __name__ == '__main__':
    main()
