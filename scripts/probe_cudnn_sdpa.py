"""Runs one cuDNN SDPA forward and backward (Note [cuDNN attention]) on the GPU in a process of
its own, without PyTorch unless --with-torch: scripts/gpu_check.sh probes the path with it
before the benchmarks time it (and places a crash with cuda-gdb)."""
import importlib
import sys

if "--with-torch" in sys.argv:
    importlib.import_module("torch")  # its cuDNN loads first, as in the tests
import numpy as np
import tensorplay as tp
import tensorplay.nn.functional as F

print("cudnn", tp.backends.cudnn.version(), "frontend", tp._C._cudnn_sdpa_available(), flush=True)
tp._C._cudnn_set_sdpa(True)
rng = np.random.default_rng(0)
q, k, v = (tp.tensor(rng.standard_normal((2, 3, 256, 64)), dtype=tp.bfloat16, device="cuda", requires_grad=True)
           for _ in range(3))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
tp.cuda.synchronize()
print("forward ok, graphs", tp._C._cudnn_sdpa_graphs(), flush=True)
out.sum().backward()
tp.cuda.synchronize()
print("backward ok, graphs", tp._C._cudnn_sdpa_graphs(), float(q.grad.float().abs().sum()), flush=True)
