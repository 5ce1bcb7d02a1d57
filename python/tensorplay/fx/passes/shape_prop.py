"""ShapeProp: runs a GraphModule on fake tensors and records each node's shape, dtype and
strides (``node.meta['tensor_meta']``, and the fake value in ``node.meta['val']``)."""
from typing import NamedTuple

import tensorplay
from tensorplay.fx.interpreter import Interpreter
from tensorplay.fx.node import map_aggregate

__all__ = ['TensorMetadata', 'ShapeProp']

dtype_abbrs = {
    tensorplay.bool: 'b8', tensorplay.uint8: 'u8', tensorplay.int8: 'i8', tensorplay.int16: 'i16',
    tensorplay.int32: 'i32', tensorplay.int64: 'i64', tensorplay.float16: 'f16',
    tensorplay.bfloat16: 'bf16', tensorplay.float32: 'f32', tensorplay.float64: 'f64',
}


class TensorMetadata(NamedTuple):
    """What ShapeProp records about a tensor value."""
    shape: tuple
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t):
    memory_format = None
    for fmt in (tensorplay.contiguous_format, tensorplay.channels_last,
                tensorplay.channels_last_3d):
        if t.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(tensorplay.Size(t.shape), t.dtype, t.requires_grad, tuple(t.stride()),
                          memory_format, False, {})


def _short_type(meta, include_stride=False, include_device=False):
    """``f32[3, 4]`` for a tensor (or TensorMetadata); None for anything else."""
    if isinstance(meta, tensorplay.Tensor):
        s = f"{dtype_abbrs.get(meta.dtype, str(meta.dtype))}[{', '.join(str(d) for d in meta.shape)}]"
        if include_stride:
            s += f"[{', '.join(str(d) for d in meta.stride())}]"
        if include_device:
            s += str(meta.device)
        return s
    if isinstance(meta, TensorMetadata):
        s = f"{dtype_abbrs.get(meta.dtype, str(meta.dtype))}[{', '.join(str(d) for d in meta.shape)}]"
        if include_stride:
            s += f"[{', '.join(str(d) for d in meta.stride)}]"
        return s
    return None


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*example_inputs)`` runs ``gm`` under a FakeTensorMode
    (no data is computed or allocated: real inputs and parameters are replaced by fake
    tensors with their metadata) and stores on each node ``meta['val']`` (the fake
    result), ``meta['tensor_meta']`` (TensorMetadata, or a structure of them for tuple
    results) and ``meta['type']``.

        ShapeProp(gm).propagate(tp.randn(8, 16))
        gm.graph.find_nodes(op='call_module', target='fc')[0].meta['tensor_meta'].shape
    """

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        from tensorplay._subclasses.fake_tensor import FakeTensorMode
        self.fake_mode = fake_mode if fake_mode is not None else \
            FakeTensorMode(allow_non_fake_inputs=True)

    def run_node(self, n):
        with self.fake_mode:
            result = super().run_node(n)
        found = [False]

        def extract(obj):
            if isinstance(obj, tensorplay.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta['tensor_meta'] = meta
        n.meta['val'] = result
        n.meta['type'] = type(result)
        return result

    def fetch_attr(self, target):
        attr = super().fetch_attr(target)
        if isinstance(attr, tensorplay.Tensor):
            return self.fake_mode.from_tensor(attr)
        return attr

    def propagate(self, *args):
        """Runs the graph on fake versions of ``args``; returns the (fake) output."""
        fake = [self.fake_mode.from_tensor(a) if isinstance(a, tensorplay.Tensor) else a
                for a in args]
        # the module's real parameters meet fake tensors in its leaf modules: the mode makes
        # fake twins of them (metadata only) for the length of the run
        mode = self.fake_mode
        old, mode.allow_non_fake_inputs = mode.allow_non_fake_inputs, True
        try:
            return super().run(*fake)
        finally:
            mode.allow_non_fake_inputs = old
