"""nn.DataParallel on at most one device: without a GPU it calls the module; with one it
moves the module and the inputs to that GPU. Several devices are DistributedDataParallel's
job here (one process per GPU), so DataParallel over more than one raises."""
import itertools

import tensorplay as tp
from tensorplay.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_index(d):
    if isinstance(d, int):
        return d
    d = tp.device(d) if isinstance(d, str) else d
    return d.index if d.index is not None else tp.cuda.current_device()


def _to_device(value, device):
    if isinstance(value, tp.Tensor):
        return value.to(device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_to_device(v, device) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _to_device(v, device)) for k, v in value.items())
    return value


class DataParallel(Module):
    """Wraps ``module`` as PyTorch's nn.DataParallel does, for the cases one process serves:
    no GPU (calls go straight to ``module``) or one GPU in ``device_ids`` (the module moves
    there; tensor inputs are copied there on each call).

        >>> model = tp.nn.DataParallel(tp.nn.Linear(4, 2))
        >>> model(tp.randn(3, 4)).shape
        tensorplay.Size([3, 2])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not tp.cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(tp.cuda.device_count()))
        if len(device_ids) > 1:
            raise NotImplementedError("DataParallel over several GPUs: use "
                                      "DistributedDataParallel, one process per GPU")
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(self.device_ids[0] if output_device is None else output_device)
        self.src_device_obj = tp.device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them "
                                   f"on device: {t.device}")
        inputs = _to_device(inputs, self.src_device_obj)
        kwargs = _to_device(kwargs, self.src_device_obj)
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """``module(*inputs)`` evaluated as DataParallel would (the functional form)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
