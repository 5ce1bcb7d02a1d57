"""swap_in_optimizer_params_and_state (PyTorch 2.13's torch.optim): run an optimizer's API
against other parameter tensors and an ``optimizer.state_dict()``-shaped state for the length
of a ``with`` block (e.g. a step on fake tensors, to trace it), then put the live ones back."""
import contextlib
from collections import defaultdict

from tensorplay._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_WHO = "swap_in_optimizer_params_and_state"


def _check_state(state):
    """``state`` maps packed parameter ids (ints) to per-parameter state dicts."""
    if not isinstance(state, dict):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be a dict mapping packed "
                           f"parameter ids to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style state keyed by packed "
                           "parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_WHO} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _check_groups(optimizer, groups):
    if not isinstance(groups, list):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['param_groups'] to be a list of "
                           f"param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    return groups


def _check_group(idx, live, swapin):
    """The packed ids of one swap-in group, checked against the live group it replaces."""
    if not isinstance(swapin, dict):
        raise RuntimeError(f"{_WHO} requires each optimizer param group to be a dictionary.")
    ids = swapin.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style param_groups[*]['params'] "
                           "entries keyed by packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params "
                           "than the live optimizer param group.")
    swapin_only = [k for k in swapin if k not in live]
    live_only = [k for k in live if k not in swapin]
    if swapin_only or live_only:
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style param group keys to exactly "
                           f"match the live optimizer group keys for group {idx}. Keys only in "
                           f"swap-in: {swapin_only}. Keys only in live: {live_only}.")
    return ids


def _prepare(optimizer, swapin_parameters, swapin_optim_state):
    """(state by packed id, [(live group, swap-in group, swap-in params)]), after PyTorch's checks.
    The explicit parameters line up with the param groups by order."""
    if not optimizer.state:
        raise RuntimeError(f"{_WHO} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_WHO} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for idx, (live, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, live, swapin)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_WHO} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        infos.append((live, swapin, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be keyed only by packed "
                           f"parameter ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Inside the block, ``optimizer`` works on ``swapin_parameters`` (a dict of tensors in the
    order of its parameters, e.g. ``model.named_parameters()``) and on the state and group
    hyperparameters of ``swapin_optim_state`` (an ``optimizer.state_dict()``-shaped dict); on
    exit its own parameters, groups and state come back. In-place updates of the swapped-in
    state tensors reach the dict passed; anything else done to the state stays inside."""
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    # shallow copies restore each group's contents (its params list object included)
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, swapin, params in infos:
            live["params"] = params
            for key, value in swapin.items():
                if key != "params":
                    live[key] = value
            for p, pid in zip(params, swapin["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
