"""Model state dicts of sharded (FSDP) models: sharded (DTensor values, what
distributed checkpoints save) or full (plain tensors, gathered)."""
import dataclasses

import tensorplay as tp

from ..tensor import DTensor
from ..tensor._api import _local_block

__all__ = ["StateDictOptions", "get_model_state_dict", "set_model_state_dict"]


@dataclasses.dataclass
class StateDictOptions:
    """full_state_dict: plain full tensors instead of DTensors; cpu_offload: values on the
    CPU (with full_state_dict, only rank 0 keeps them); ignore_frozen_params: leave out
    parameters that do not require grad; strict: set_model_state_dict's key check."""
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _options(options):
    if options is None:
        return StateDictOptions()
    if not isinstance(options, StateDictOptions):
        raise TypeError(f"options must be a StateDictOptions, got {type(options).__name__}")
    if options.broadcast_from_rank0:
        raise NotImplementedError("broadcast_from_rank0 is not supported by tensorplay's "
                                  "distributed state dicts; load the full state dict on every rank")
    return options


def get_model_state_dict(model, *, submodules=None, options=None):
    """``model``'s state dict: DTensors as they are, or (full_state_dict) gathered."""
    import tensorplay.distributed as dist
    options = _options(options)
    sd = model.state_dict()
    if submodules is not None:
        keep = set()
        for name, m in model.named_modules():
            if m in set(submodules):
                keep.update(f"{name}.{k}" if name else k for k in m.state_dict())
        sd = type(sd)((k, v) for k, v in sd.items() if k in keep)
    if options.ignore_frozen_params:
        frozen = {k for k, p in model.named_parameters() if not p.requires_grad}
        sd = type(sd)((k, v) for k, v in sd.items() if k not in frozen)
    if options.full_state_dict:
        rank0_only = options.cpu_offload and dist.is_initialized() and dist.get_rank() != 0
        out = type(sd)()
        for k, v in sd.items():
            if isinstance(v, DTensor):
                v = v.full_tensor().detach()
            if not rank0_only:
                out[k] = v.cpu() if options.cpu_offload and isinstance(v, tp.Tensor) else v
        return out
    if options.cpu_offload:
        for k, v in sd.items():
            if isinstance(v, DTensor):
                continue
            if isinstance(v, tp.Tensor):
                sd[k] = v.cpu()
    return sd


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Loads a sharded or full state dict into ``model`` (full values are cut into this
    rank's blocks of the model's DTensors). Returns load_state_dict's missing and
    unexpected keys."""
    options = _options(options)
    current = model.state_dict()
    converted = type(model_state_dict)()
    for k, v in model_state_dict.items():
        cur = current.get(k)
        if isinstance(cur, DTensor) and isinstance(v, tp.Tensor) and not isinstance(v, DTensor):
            if tuple(v.shape) != tuple(cur.shape):
                raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n\t"
                                   f"size mismatch for {k}: copying a param with shape {v.shape} "
                                   f"from checkpoint, the shape in current model is {cur.shape}.")
            v = DTensor(_local_block(v.detach().to(cur.device), cur._spec), cur._spec)
        converted[k] = v
    return model.load_state_dict(converted, strict=options.strict)
