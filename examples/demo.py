"""A short tour of what TensorPlay does today (the README's first command runs it)."""
import numpy as np

import tensorplay as tp

print(f"tensorplay {tp.__version__} (git {tp.version.git_version[:7]}), "
      f"{tp.get_num_threads()} CPU threads")

x = tp.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
print("x =", x)
print("x * 2 + 1 =", x * 2 + 1)
print("sigmoid(x) =", tp.sigmoid(x))
print("broadcast x + [10, 20, 30] =", x + tp.tensor([10, 20, 30]))
print("int64 // 3 =", tp.arange(10) // 3)
print("where(x > 0, x, 0) =", tp.where(x > 0, x, 0.0))
print("bfloat16 cast:", x.to(tp.bfloat16))

a = np.linspace(0, 1, 5, dtype=np.float32)
t = tp.from_numpy(a)  # zero-copy
a[0] = 42.0
print("from_numpy shares memory:", t)
print("back to NumPy via DLPack:", np.from_dlpack(tp.exp(t)))
