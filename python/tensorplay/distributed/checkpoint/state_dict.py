"""Model and optimizer state dicts of sharded (FSDP) models: sharded (DTensor values, what
distributed checkpoints save) or full (plain tensors, gathered). Optimizer states are keyed
by parameter names (fully qualified), not positions, so they survive regrouping."""
import dataclasses

import tensorplay as tp

from ..tensor import DTensor
from ..tensor._api import _local_block

__all__ = ["StateDictOptions", "get_model_state_dict", "set_model_state_dict",
           "get_optimizer_state_dict", "set_optimizer_state_dict"]


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


def _named_parameters(model):
    """(name, parameter) with FSDP modules' sharded parameters whatever their state."""
    from ..fsdp import FSDPModule
    if isinstance(model, FSDPModule):
        return model._sharded_view(lambda: list(model.named_parameters()), (), {})
    return list(model.named_parameters())


def _optimizers(optimizers):
    return [optimizers] if isinstance(optimizers, tp.optim.Optimizer) else list(optimizers)


def _init_state(optim):
    """Creates an optimizer's state without moving its parameters: a step at lr 0 on zero
    gradients (PyTorch's way), so that a state dict can be loaded into it."""
    if optim.state:
        return
    made, lrs = [], []
    for group in optim.param_groups:
        lrs.append(group["lr"])
        group["lr"] = 0.0 if not isinstance(group["lr"], tp.Tensor) else tp.zeros_like(group["lr"])
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                p.grad = tp.zeros_like(p)
                made.append(p)
    try:
        optim.step()
    finally:
        for group, lr in zip(optim.param_groups, lrs):
            group["lr"] = lr
        for p in made:
            p.grad = None


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    """The optimizers' state dict with parameter names for keys: {"state": {name: {...}},
    "param_groups": [{..., "params": [names]}]}; DTensor states as they are or gathered
    (full_state_dict)."""
    import tensorplay.distributed as dist
    options = _options(options)
    if submodules is not None:
        raise NotImplementedError("get_optimizer_state_dict: submodules is not supported")
    name_of = {id(p): n for n, p in _named_parameters(model)}
    rank0_only = options.full_state_dict and options.cpu_offload and dist.is_initialized() \
        and dist.get_rank() != 0
    state, groups = {}, []
    for optim in _optimizers(optimizers):
        _init_state(optim)
        sd = optim.state_dict()
        params = [p for g in optim.param_groups for p in g["params"]]
        for idx, entry in sd["state"].items():
            name = name_of.get(id(params[idx]))
            if name is None:
                raise RuntimeError("get_optimizer_state_dict: the optimizer holds a parameter "
                                   "that is not the model's")
            if options.ignore_frozen_params and not params[idx].requires_grad:
                continue
            out = {}
            for k, v in entry.items():
                if isinstance(v, DTensor) and options.full_state_dict:
                    v = v.full_tensor().detach()
                if options.cpu_offload and isinstance(v, tp.Tensor) and not isinstance(v, DTensor):
                    v = v.cpu()
                out[k] = v
            state[name] = out
        for g in sd["param_groups"]:
            g = dict(g)
            g["params"] = [name_of[id(params[i])] for i in g["params"]]
            groups.append(g)
    if rank0_only:
        return {}
    return {"state": state, "param_groups": groups}


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    """Loads a state dict of get_optimizer_state_dict's form (sharded or full) into the
    optimizers: names are mapped back to parameters, full tensors cut into this rank's blocks
    of DTensor parameters."""
    _options(options)
    by_name = dict(_named_parameters(model))
    for optim in _optimizers(optimizers):
        params = [p for g in optim.param_groups for p in g["params"]]
        index = {id(p): i for i, p in enumerate(params)}
        mine = {id(p) for p in params}
        state = {}
        for name, entry in optim_state_dict["state"].items():
            p = by_name.get(name)
            if p is None:
                raise RuntimeError(f"set_optimizer_state_dict: no parameter named {name} in the model")
            if id(p) not in mine:
                continue
            out = {}
            for k, v in entry.items():
                if isinstance(p, DTensor) and isinstance(v, tp.Tensor) and \
                        not isinstance(v, DTensor) and tuple(v.shape) == tuple(p.shape) and v.dim():
                    v = DTensor(_local_block(v.detach().to(p.device), p._spec), p._spec)
                out[k] = v
            state[index[id(p)]] = out
        # the optimizer's own groups, in its order (load_state_dict pairs positions), with
        # the hyperparameters of the saved group holding their parameters
        name_of = {id(p): n for n, p in by_name.items()}
        saved_group = {n: g for g in optim_state_dict["param_groups"] for n in g["params"]}
        groups = []
        for cg in optim.param_groups:
            names = [name_of.get(id(p)) for p in cg["params"]]
            found = [saved_group[n] for n in names if n in saved_group]
            if not found:
                raise RuntimeError("set_optimizer_state_dict: a parameter group of the optimizer "
                                   "has no parameter in the state dict")
            g = dict(found[0])
            g["params"] = [index[id(p)] for p in cg["params"]]
            groups.append(g)
        optim.load_state_dict({"state": state, "param_groups": groups})
