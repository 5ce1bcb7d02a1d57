"""LinearCrossEntropyOptions: how F.linear_cross_entropy may split the batch into chunks so
that the (batch, num_classes) logits are never held whole (PyTorch 2.13's options, same
fields, defaults, validation and call-time resolution)."""
import dataclasses

import tensorplay as tp

__all__ = ["LinearCrossEntropyOptions"]

# Note [linear_cross_entropy auto picks]: the "auto" acc_policy / chunking_method resolve per
# (device type, input dtype) to PyTorch's picks, else to ("compact", "aspect_ratio:2").
_AUTO = {("cuda", "bfloat16"): ("compact", "aspect_ratio:2"),
         ("cuda", "float16"): ("compact", "aspect_ratio:2"),
         ("cpu", "bfloat16"): ("accurate", "aspect_ratio"),
         ("cpu", "float16"): ("accurate", "aspect_ratio")}
_AUTO_OTHERWISE = ("compact", "aspect_ratio:2")
_POLICIES = ("auto", "accurate", "balanced", "compact")


def _aspect_factor(method):
    """N of "aspect_ratio[:N]", or None when method is not of that form."""
    name, sep, factor = method.partition(":")
    factor = factor if sep else "1"
    if name != "aspect_ratio" or not factor.isdigit() or int(factor) <= 0:
        return None
    return int(factor)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Chunking for F.linear_cross_entropy (options=None runs the plain linear + cross_entropy).

    allow_retain_graph: whether the scalar reductions may be backpropagated more than once.
    batch_chunk_size: rows per chunk (None: one chunk); not together with a chunking_method
    that gives another size. chunking_method: "auto", "aspect_ratio" or "aspect_ratio:N"
    (chunks whose logits are about as large as the input, N times smaller), or None.
    acc_policy: "auto", "accurate", "balanced" or "compact"; acc_dtype: the dtype the chunks
    accumulate in (None: float32 for float16 / bfloat16 inputs under "auto", else the input's)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method not in (None, "auto") and \
                (not isinstance(self.chunking_method, str) or _aspect_factor(self.chunking_method) is None):
            raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if size is not None and not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (tp.float16, tp.bfloat16, tp.float32,
                                                                 tp.float64):
            raise ValueError(f"acc_dtype must be one of {{None, tensorplay.float16, tensorplay.bfloat16, "
                             f"tensorplay.float32, tensorplay.float64}}, got {self.acc_dtype!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")

    def _resolve(self, num_batches, in_features, num_classes, dtype, device):
        """(chunk rows, acc_policy, acc_dtype) for one call."""
        dtype_name = str(dtype).split(".")[-1]
        policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None  # an explicit size wins over the automatic pick
        if "auto" in (policy, method):
            pick = _AUTO.get((device.type, dtype_name), _AUTO_OTHERWISE)
            policy = pick[0] if policy == "auto" else policy
            method = pick[1] if method == "auto" else method
        rows = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            # logits chunk (rows, classes) about the input's size: rows ~ batch / ceil(C / in)
            wide = -(-num_classes // max(in_features, 1))
            target = -(-num_batches // max(wide, 1))
            rows = min((1 << max(target - 1, 0).bit_length()) // _aspect_factor(method), num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != rows:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                                 f"('{method}') give different chunk sizes ({self.batch_chunk_size} "
                                 f"vs {rows}); pass only one.")
        acc = self.acc_dtype
        if acc is None:
            low = dtype in (tp.float16, tp.bfloat16)
            acc = tp.float32 if self.acc_policy == "auto" and low and device.type in ("cpu", "cuda") \
                else dtype
        return max(1, rows), policy, acc
