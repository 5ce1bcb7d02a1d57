"""vmap: BatchedTensor, vmap levels, the dispatch handler, randomness and the loop
fallback (Note [vmap as a wrapper subclass]); the batching rules are in _batch_rules.py.

Note [vmap as a wrapper subclass]
vmap(f)(x) calls f with BatchedTensors: wrapper subclasses whose metadata is one sample's
and whose ``_value`` holds the whole batch, batch dim first (always first: rules never
track where it is). Every op on one reaches ``BatchedTensor.__torch_dispatch__`` through
the Python key, which sits below Autograd: autograd records on the wrappers, so
``grad`` inside vmap differentiates per sample and the backward's ops reach the rules
too (per-sample gradients need nothing more). Each vmap call opens a level with a fresh,
increasing id; a BatchedTensor of one level may hold BatchedTensors of outer levels in its
value. An op unwraps only the innermost (highest) level among its arguments and calls
itself again on the values, which hands outer levels to their own turn (nested vmap).
The C++ Batched dispatch key stays unrouted: the Python key already gives every op to
the wrappers, autograd above them, at the cost of one Python call per op and level.

Note [vmap randomness]
Random factories (``tp.randn(3)``) take no batched argument, so the wrappers never see
them: while any vmap runs, one dispatch mode (``_VmapMode``) watches for random ops and
applies the innermost level's ``randomness``. Its handler only tests membership in a set
of handles and calls on; the rules' own calls run below it (a mode is off the stack while
it handles a call), so it costs one hop per op of the user's function. Ops that draw
elementwise over their one tensor argument (bernoulli, rand_like, normal_, ...) draw for
the whole batch in one call for 'different' (a shared argument expanded to the batch
first), and for one sample, copied to the others, for 'same' when they read only its
shape; other random ops draw sample by sample. An in-place draw into an unbatched tensor
cannot differ per sample (PyTorch's error), so composites that draw into a fresh tensor
(dropout's mask) draw out of place while ``in_vmap()``.

Note [Two places autograd records]
A gradient taken inside vmap (``vmap(grad(f))``) must see per-sample ops: autograd, above
the Python key, records on the wrappers. A gradient taken outside (``grad(vmap(f))``, the
outer vjp of ``jacrev(jacrev(f))``, or a closure over a tensor that requires grad) must see
the batched computation, where an unbatched input broadcast against the batch gets its
gradient summed over it: so the rules run with Autograd enabled again, in the grad mode
the vmap was called in (the wrapper-level autograd turned it off for the kernel, so the
op's own call site cannot be seen), and autograd also records on the values when they
(or unbatched arguments) require grad. One exception keeps per-sample gradients cheap:
once a grad transform runs inside the level (``vmap(grad(f))``, whose parameters are
unbatched tensors that require grad), values are recorded only if the vmap had an outside
consumer when it began (an input requiring grad, or an enclosing transform); a closure over
a tensor that requires grad, differentiated by plain autograd outside, is then not seen. vmap hands its
callers values, never wrappers, so an outer gradient only meets the value-level graph,
and a gradient inside only the wrapper-level one; where both exist each is right for its
consumer. With nothing requiring grad outside, the value-level check costs one branch.
"""
import functools
import threading
import warnings

from tensorplay import _C
from tensorplay._ops import Tag, ops
from tensorplay.autograd import forward_ad as _fwAD
from tensorplay.utils._pytree import tree_flatten, tree_unflatten
from tensorplay.nn.functional import activation as _activation
from tensorplay.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode

__all__ = ['vmap', 'BatchedTensor', 'is_batchedtensor']

Tensor = _C.Tensor
_make_wrapper = Tensor._make_wrapper_subclass
_set_excluded = _C._dispatch_tls_set_dispatch_key_excluded
_set_grad_enabled = _C._set_grad_enabled
_is_grad_enabled = _C.is_grad_enabled
_AUTOGRAD = _C.DispatchKey.Autograd


class _Level:
    __slots__ = ('id', 'batch_size', 'randomness', 'grad_enabled', 'outer_consumer',
                 'inner_grad')

    def __init__(self, id, batch_size, randomness):
        self.id = id
        self.batch_size = batch_size
        self.randomness = randomness
        self.grad_enabled = _C.is_grad_enabled()  # the vmap caller's (Note [Two places ...])
        self.outer_consumer = False  # an input requires grad or a transform encloses the vmap
        self.inner_grad = False  # a grad transform ran inside this level

    def records_values(self):
        """Whether autograd records on this level's values (Note [Two places autograd
        records])."""
        return self.grad_enabled and (self.outer_consumer or not self.inner_grad)


_ACTIVE = {}  # level id -> _Level of the vmap calls running now (any thread)
_activation._VMAP_ACTIVE = _ACTIVE  # dropout's cheap "is any vmap running" test


_state = threading.local()
_next_level = [0]
_fallback_warning = [False]  # PyTorch's default: the loop fallback is silent
_loop_log = [None]  # a list: each op handle the loop fallback runs is appended (tests, scripts)


def _levels():
    levels = getattr(_state, 'levels', None)
    if levels is None:
        levels = _state.levels = []
    return levels


def in_vmap():
    """Whether a vmap runs on this thread (composites that draw random numbers ask)."""
    return bool(getattr(_state, 'levels', None))


def _level_randomness(level):
    for lv in reversed(_levels()):
        if lv.id == level:
            return lv.randomness
    return 'error'


class BatchedTensor(Tensor):
    """One sample's view of a batch inside vmap; ``_value`` holds the batch (dim 0),
    ``_level`` the vmap call it belongs to."""

    __torch_function__ = _C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, value, level):
        return _wrap(value, level)

    def __repr__(self):
        return f'BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r})'

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        level = _innermost_level(args, kwargs)
        rule = _RULES.get(func)
        if rule is None:
            rule = _RULES[func] = _rule_for(func)
        # autograd records on the values too (Note [Two places autograd records])
        lv = _ACTIVE.get(level)
        if lv is None or not lv.records_values():
            return rule(func, level, args, kwargs or {})
        grad_mode = _is_grad_enabled()
        _set_excluded(_AUTOGRAD, False)
        _set_grad_enabled(True)
        try:
            return rule(func, level, args, kwargs or {})
        finally:
            _set_grad_enabled(grad_mode)
            _set_excluded(_AUTOGRAD, True)

    # reading data of a batched tensor is data-dependent: PyTorch's errors, not garbage
    def item(self):
        raise RuntimeError(_ITEM_MSG)

    def __bool__(self):
        raise RuntimeError(_CONTROL_FLOW_MSG)

    def __float__(self):
        raise RuntimeError(_ITEM_MSG)

    def __int__(self):
        raise RuntimeError(_ITEM_MSG)

    def __index__(self):
        raise RuntimeError(_ITEM_MSG)

    def tolist(self):
        raise RuntimeError(_ITEM_MSG)

    def numpy(self, *, force=False):
        raise RuntimeError(_ITEM_MSG)


_ITEM_MSG = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
             "calling .item() on a Tensor, please try to rewrite what you're doing with other "
             "operations. If error is occurring somewhere inside PyTorch internals, please file a "
             "bug report.")
_CONTROL_FLOW_MSG = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                     "control flow. We don't support that yet, please file an issue at "
                     "https://github.com/pytorch/pytorch/issues .")


def _wrap(value, level):
    """``value`` (batch dim first) as a BatchedTensor of ``level``."""
    shape, stride = value.shape, value.stride()
    r = _make_wrapper(BatchedTensor, shape[1:], strides=stride[1:],
                      storage_offset=value.storage_offset(), dtype=value.dtype,
                      device=value.device)
    d = r.__dict__
    d['_value'] = value
    d['_level'] = level
    return r


def is_batchedtensor(x):
    """Whether ``x`` is a BatchedTensor (of any vmap level)."""
    return isinstance(x, BatchedTensor)


def _innermost_level(args, kwargs):
    level = -1
    for a in args:
        if isinstance(a, BatchedTensor):
            if a._level > level:
                level = a._level
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, BatchedTensor) and b._level > level:
                    level = b._level
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, BatchedTensor) and a._level > level:
                level = a._level
    return level


def _unwrap(x, level):
    """The batch (dim 0) of ``x`` at ``level``, or None when ``x`` is not batched there."""
    if isinstance(x, BatchedTensor) and x._level == level:
        return x._value
    return None


def _batch_size(args, kwargs, level):
    for a in list(args) + list(kwargs.values()):
        v = _unwrap(a, level)
        if v is not None:
            return v.shape[0]
        if isinstance(a, (list, tuple)):
            for b in a:
                v = _unwrap(b, level)
                if v is not None:
                    return v.shape[0]
    raise RuntimeError('vmap: internal error: no batched argument')


# ----------------------------------------------------------------------------- rules
# Filled by _batch_rules: op handle -> rule(func, level, args, kwargs). Handles without an
# entry get one from _rule_for on first use (category rule or the loop fallback).
_RULES = {}
_CATEGORY_RULES = []  # (predicate(func), rule), tried in order by _rule_for


def _rule_for(func):
    tags = func.tags
    if Tag.dynamic_output_shape in tags:
        return _dynamic_shape_rule
    if Tag.nondeterministic_seeded in tags:
        return _random_rule
    for pred, rule in _CATEGORY_RULES:
        if pred(func):
            return rule
    return loop_fallback


def _dynamic_shape_rule(func, level, args, kwargs):
    raise RuntimeError(f'vmap: We do not support batching operators that can output dynamic '
                       f'shape. Attempted to vmap over {func._schema.name}. Please file an issue '
                       f'at https://github.com/pytorch/pytorch/issues if you need this feature.')


def _mutated_args(func):
    """Indices of the schema arguments the op writes (``Tensor(a!)``), and their names."""
    out = getattr(func, '_vmap_mutated', None)
    if out is None:
        out = tuple((i, a.name) for i, a in enumerate(func._schema.arguments)
                    if a.alias_info is not None and a.alias_info.is_write)
        func._vmap_mutated = out
    return out


def _get_arg(func, args, kwargs, i, name):
    return args[i] if i < len(args) else kwargs.get(name)


def check_inplace(func, level, args, kwargs, name=None):
    """PyTorch's error when a written argument is not batched at ``level`` while another
    argument is (its per-sample result could not fit)."""
    for i, n in _mutated_args(func):
        t = _get_arg(func, args, kwargs, i, n)
        if isinstance(t, Tensor) and _unwrap(t, level) is None:
            op = name or func._schema.name.split('::')[-1]
            raise RuntimeError(
                f'vmap: {op}(self, *extra_args) is not possible because there exists a Tensor '
                f'`other` in extra_args that has more elements than `self`. This happened due to '
                f'`other` being vmapped over but `self` not being vmapped over in a vmap. Please '
                f'try to use out-of-place operators instead of {op}. If said operator is being '
                f'called inside the PyTorch framework, please file a bug report instead.')


def _split(x, level, size):
    """Per-sample pieces of an argument: a list for batched tensors (or lists holding
    some), None for arguments shared by every sample."""
    v = _unwrap(x, level)
    if v is not None:
        return v.unbind(0)
    if isinstance(x, (list, tuple)) and any(_unwrap(b, level) is not None for b in x):
        parts = [_split(b, level, size) for b in x]
        return [type(x)(b if p is None else p[i] for b, p in zip(x, parts)) for i in range(size)]
    return None


def loop_fallback(func, level, args, kwargs):
    """Runs the op once per sample and stacks the results: right for every op, slow."""
    if _fallback_warning[0]:
        warnings.warn(f'There is a performance drop because we have not yet implemented the '
                      f'batching rule for {func._schema.name}. Please file us an issue on GitHub '
                      f'so that we can prioritize its implementation.', stacklevel=2)
    if _loop_log[0] is not None:
        _loop_log[0].append(func)
    mutated = _mutated_args(func)
    if mutated:
        check_inplace(func, level, args, kwargs)
    size = _batch_size(args, kwargs, level)
    a_parts = [_split(a, level, size) for a in args]
    k_parts = {k: _split(v, level, size) for k, v in kwargs.items()}
    results = []
    for i in range(size):
        a_i = [a if p is None else p[i] for a, p in zip(args, a_parts)]
        k_i = {k: v if k_parts[k] is None else k_parts[k][i] for k, v in kwargs.items()}
        results.append(func(*a_i, **k_i))
    if mutated:
        outs = [_get_arg(func, args, kwargs, i, n) for i, n in mutated]
        if isinstance(results[0], Tensor):
            return outs[0]
        if isinstance(results[0], (tuple, list)) and len(results[0]) == len(outs):
            return type(results[0])(outs)
    return _stack_results(results, level)


def _stack_results(results, level):
    first = results[0]
    if isinstance(first, Tensor):
        return _wrap(_stack(results), level)
    if isinstance(first, (tuple, list)):
        return same_type(first, [_stack_results([r[i] for r in results], level)
                                 for i in range(len(first))])
    if first is None:
        return None
    if any(r != first for r in results[1:]):
        raise RuntimeError(_CONTROL_FLOW_MSG)
    return first


def same_type(seq, items):
    """``items`` in a sequence of ``seq``'s type (namedtuples and return types included)."""
    t = type(seq)
    if t is list or t is tuple:
        return t(items)
    if hasattr(t, '_fields'):
        return t(*items)
    return t(items)


def _stack(tensors):
    return ops.aten.stack.default(tensors, 0)


# ------------------------------------------------------------------------ randomness
_RANDOM_OPS = None


def _random_ops():
    global _RANDOM_OPS, _ELEMENTWISE_RANDOM, _SHAPE_RANDOM
    if _RANDOM_OPS is None:
        _RANDOM_OPS = frozenset(
            getattr(p, o) for p in ops.aten._packets.values() for o in p.overloads()
            if Tag.nondeterministic_seeded in getattr(p, o).tags)
        handles = {_handle_of(n): shape_only
                   for n, shape_only in _ELEMENTWISE_RANDOM_NAMES.items()}
        handles.pop(None, None)
        _ELEMENTWISE_RANDOM = frozenset(handles)
        _SHAPE_RANDOM = frozenset(h for h, shape_only in handles.items() if shape_only)
    return _RANDOM_OPS


def _handle_of(qualname):
    name, overload = qualname.split('.')
    packet = getattr(ops.aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


# Random ops whose draws are elementwise over their one tensor argument, self: one call on a
# batch draws every sample's own numbers (randomness='different'). Those marked True read
# only self's shape, so one sample's draws serve every sample (randomness='same').
_ELEMENTWISE_RANDOM_NAMES = {
    'uniform_.default': True, 'normal_.default': True, 'bernoulli_.float': True,
    'exponential_.default': True, 'geometric_.default': True, 'log_normal_.default': True,
    'cauchy_.default': True, 'random_.default': True, 'random_.to': True,
    'random_.from': True, 'rand_like.default': True, 'randn_like.default': True,
    'randint_like.default': True, 'randint_like.low_dtype': True, 'bernoulli.p': True,
    'bernoulli.default': False, 'normal.Tensor_float': False, 'normal.float_Tensor': False,
    'poisson.default': False, 'native_dropout.default': False,
}
_ELEMENTWISE_RANDOM = _SHAPE_RANDOM = frozenset()


def _elementwise_random(func, args, kwargs):
    """The op's one tensor argument when the op draws elementwise over it, else None."""
    if func not in _ELEMENTWISE_RANDOM:
        return None
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
    return tensors[0] if len(tensors) == 1 else None


def _call_on(func, args, kwargs, x, value):
    return func(*[value if a is x else a for a in args],
                **{k: value if a is x else a for k, a in kwargs.items()})


_RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                     "use the 'same' or 'different' randomness flags on vmap or perform the "
                     "randomness operation out of vmap")


def _random_rule(func, level, args, kwargs):
    """A random op with a batched argument (``rand_like(x)``, dropout, ``bernoulli(p)``)."""
    randomness = _level_randomness(level)
    if randomness == 'error':
        raise RuntimeError(_RANDOMNESS_ERROR)
    x = _elementwise_random(func, args, kwargs)
    if randomness == 'different':
        if x is None:
            return loop_fallback(func, level, args, kwargs)
        out = _call_on(func, args, kwargs, x, x._value)
        if _mutated_args(func):
            return x
        return _wrap(out, level) if isinstance(out, Tensor) else \
            same_type(out, [_wrap(o, level) for o in out])
    if func in _SHAPE_RANDOM and x is not None and x._value.shape[0]:
        v = x._value  # 'same': one sample's draws, copied to every sample
        out = _call_on(func, args, kwargs, x, v[0])
        if _mutated_args(func):
            v[1:].copy_(v[0])
            return x
        return _wrap(out.expand(v.shape[0], *out.shape).clone(), level)
    # 'same': every sample draws from the same generator state
    from tensorplay import random as tprandom
    state = tprandom.get_rng_state()
    size = _batch_size(args, kwargs, level)
    a_parts = [_split(a, level, size) for a in args]
    k_parts = {k: _split(v, level, size) for k, v in kwargs.items()}
    if _loop_log[0] is not None:
        _loop_log[0].append(func)
    mutated = _mutated_args(func)
    if mutated:
        check_inplace(func, level, args, kwargs)
    results = []
    for i in range(size):
        tprandom.set_rng_state(state)
        a_i = [a if p is None else p[i] for a, p in zip(args, a_parts)]
        k_i = {k: v if k_parts[k] is None else k_parts[k][i] for k, v in kwargs.items()}
        results.append(func(*a_i, **k_i))
    if mutated:
        return _get_arg(func, args, kwargs, *mutated[0])
    return _stack_results(results, level)


class _VmapMode(TorchDispatchMode):
    """Applies the innermost vmap level's randomness to random ops that have no batched
    argument (Note [vmap randomness])."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _RANDOM_OPS and _innermost_level(args, kwargs) < 0:
            return _unbatched_random(func, args, kwargs)
        return func(*args, **kwargs)


def _unbatched_random(func, args, kwargs):
    levels = _levels()
    if any(lv.randomness == 'error' for lv in levels):
        raise RuntimeError(_RANDOMNESS_ERROR)
    different = [lv for lv in levels if lv.randomness == 'different']
    if _mutated_args(func):  # normal_, bernoulli_, ... writing an unbatched tensor
        if different:
            raise RuntimeError('vmap: Cannot ask for different inplace randomness on an unbatched '
                               'tensor. This will appear like same randomness. If this is '
                               'necessary for your usage, please file an issue with functorch.')
        return func(*args, **kwargs)
    if not different:
        return func(*args, **kwargs)
    sizes = [lv.batch_size for lv in different]
    n = _prod(sizes)
    x = _elementwise_random(func, args, kwargs)
    if x is not None:  # one call on the argument expanded to every sample
        out = _call_on(func, args, kwargs, x, x.expand(n, *x.shape))
        if isinstance(out, Tensor):
            return _wrap_levels(out, sizes, different)
        return same_type(out, [_wrap_levels(o, sizes, different) for o in out])
    # a factory: one draw per sample of every 'different' level
    out = [func(*args, **kwargs) for _ in range(n)]
    return _wrap_levels(_stack(out), sizes, different)


def _wrap_levels(value, sizes, levels):
    """``value`` (the samples of ``levels``, flattened into dim 0) batched at each level."""
    value = value.reshape(*sizes, *value.shape[1:])
    for lv in levels:  # outermost first: each wrap drops the leading dim from the metadata
        value = _wrap(value, lv.id)
    return value


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


_MODE = _VmapMode()


# ------------------------------------------------------------------------------ vmap
def _name(func):
    return getattr(func, '__name__', repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness='error', *, chunk_size=None):
    """``func`` mapped over a dim of its inputs (PyTorch's ``torch.func.vmap``).

    ``in_dims``: an int (every input) or a pytree matching the positional arguments, with
    an int or None (not mapped) per tensor; ``out_dims`` likewise for the outputs.
    ``randomness``: 'error' (random ops raise), 'different' (each sample draws its own) or
    'same' (every sample draws the same). ``chunk_size`` maps that many samples at a time.

        >>> x = tp.randn(64, 5)
        >>> tp.vmap(tp.dot)(x, x).shape          # 64 dot products
        tensorplay.Size([64])
    """
    if randomness not in ('error', 'different', 'same'):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f'vmap: chunk_size should be None or greater than 0. (got {chunk_size})')

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return wrapped


def _flat_in_dims(func, in_dims, args):
    """The in_dim of each leaf of ``args`` (PyTorch's checks and messages)."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f'vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to '
                         f'be int or a (potentially nested) tuple matching the structure of '
                         f'inputs, got: {type(in_dims)}.')
    if len(args) == 0:
        raise ValueError(f'vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, '
                         f'or you are trying to vmap over a function with no inputs. The latter '
                         f'is unsupported.')
    flat_args, args_spec = tree_flatten(args)
    if isinstance(in_dims, int):
        return flat_args, args_spec, [in_dims] * len(flat_args)
    dims_spec_src = in_dims
    flat_dims = _broadcast_prefix(dims_spec_src, args)
    if flat_dims is None:
        _, dims_spec = tree_flatten(in_dims)
        raise ValueError(f'vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not '
                         f'compatible with the structure of `inputs`. in_dims has structure '
                         f'{dims_spec} but inputs has structure {args_spec}.')
    return flat_args, args_spec, flat_dims


def _broadcast_prefix(prefix, tree):
    """The leaves of ``prefix`` repeated over the subtrees of ``tree`` they stand for, or
    None when ``prefix`` is not a prefix of ``tree``'s structure."""
    out = []

    def go(p, t):
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_flatten(t)[0]))
            return True
        if isinstance(p, (tuple, list)):
            if not isinstance(t, (tuple, list)) or len(p) != len(t):
                return False
            return all(go(a, b) for a, b in zip(p, t))
        if isinstance(p, dict):
            if not isinstance(t, dict) or set(p) != set(t):
                return False
            return all(go(p[k], t[k]) for k in t)
        out.append(p)  # a bad leaf: reported by the caller with the offending value
        return len(tree_flatten(t)[0]) == 1
    return out if go(prefix, tree) else None


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _name(func)
    flat_args, args_spec, flat_dims = _flat_in_dims(func, in_dims, args)
    sizes = []
    for x, d in zip(flat_args, flat_dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f'vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for '
                             f'an input but in_dim must be either an integer dimension or None.')
        if not isinstance(x, Tensor):
            raise ValueError(f'vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for '
                             f'an input but the input is of type {type(x)}. We cannot vmap over '
                             f'non-Tensor arguments, please use None as the respective in_dim')
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f'vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for '
                             f'some input, but that input is a Tensor of dimensionality {n} so '
                             f'expected in_dim to satisfy -{n} <= in_dim < {n}.')
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError('vmap: Expected at least one Tensor to vmap over')
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f'vmap: Expected all tensors to have the same size in the mapped '
                         f'dimension, got sizes {sizes} for the mapped dimension')
    batch_size = sizes[0]
    if chunk_size is None or chunk_size >= batch_size:
        return _vmap_once(func, flat_args, flat_dims, args_spec, kwargs, batch_size, out_dims,
                          randomness, name)
    # chunks: map each slice of the batch, then join the outputs along their out_dims
    pieces = []
    for start in range(0, batch_size, chunk_size):
        n = min(chunk_size, batch_size - start)
        chunk_args = [x if d is None else x.narrow(d, start, n) for x, d in zip(flat_args, flat_dims)]
        pieces.append(_vmap_once(func, chunk_args, flat_dims, args_spec, kwargs, n, out_dims,
                                 randomness, name))
    flat0, spec = tree_flatten(pieces[0])
    flat_out_dims = _flat_out_dims(out_dims, pieces[0], spec, name)
    joined = []
    for i, d in enumerate(flat_out_dims):
        parts = [tree_flatten(p)[0][i] for p in pieces]
        joined.append(parts[0] if d is None else ops.aten.cat.default(parts, d))
    return tree_unflatten(joined, spec)


def _flat_out_dims(out_dims, outputs, spec, name):
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * spec.num_leaves
    flat = _broadcast_prefix(out_dims, outputs)
    if flat is None:
        _, dims_spec = tree_flatten(out_dims)
        raise ValueError(f'vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not '
                         f'compatible with the structure of `outputs`. out_dims has structure '
                         f'{dims_spec} but outputs has structure {spec}.')
    return flat


def _enter_level(batch_size, randomness):
    levels = _levels()
    _next_level[0] += 1
    lv = _Level(_next_level[0], batch_size, randomness)
    if not levels:
        _random_ops()
        _push_mode(_MODE)
        _hook_apply(+1)
    levels.append(lv)
    _ACTIVE[lv.id] = lv
    return lv


def _exit_level():
    levels = _levels()
    del _ACTIVE[levels.pop().id]
    if not levels:
        _pop_mode()
        _hook_apply(-1)


def _vmap_once(func, flat_args, flat_dims, args_spec, kwargs, batch_size, out_dims, randomness,
               name):
    lv = _enter_level(batch_size, randomness)
    lv.outer_consumer = _transform_depth() > 0 or any(
        isinstance(x, Tensor) and x.requires_grad for x in flat_args)
    try:
        batched = [x if d is None else _add_batch_dim(x, d, lv.id)
                   for x, d in zip(flat_args, flat_dims)]
        outputs = func(*tree_unflatten(batched, args_spec), **kwargs)
    finally:
        _exit_level()
    flat_out, out_spec = tree_flatten(outputs)
    flat_out_dims = _flat_out_dims(out_dims, outputs, out_spec, name)
    results = []
    for out, d in zip(flat_out, flat_out_dims):
        if d is None:
            if isinstance(out, BatchedTensor) and out._level == lv.id:
                raise ValueError(f'vmap({name}, ...): `{name}` can not return a BatchedTensor when '
                                 f'out_dim is None')
            results.append(out)
            continue
        if not isinstance(out, Tensor):
            raise ValueError(f'vmap({name}, ...): `{name}` must only return Tensors, got type '
                             f'{type(out)}. Did you mean to set out_dims= to None for output?')
        results.append(_remove_batch_dim(out, lv.id, batch_size, d))
    return tree_unflatten(results, out_spec)


def _transform_depth():
    from ._eager_transforms import _depth
    return _depth()


def _add_batch_dim(x, d, level):
    return _wrap(x.movedim(d, 0) if d != 0 else x, level)


def _remove_batch_dim(out, level, batch_size, d):
    value = _unlift(out, level, batch_size)
    if _fwAD._current_level >= 0:  # a tangent recorded on the wrapper goes with the value
        tangent = _fwAD.unpack_dual(out).tangent
        if tangent is not None:
            value = _fwAD.make_dual(value, _unlift(tangent, level, batch_size))
    n = value.dim()
    if not -n <= d < n:
        raise IndexError(f'Dimension out of range (expected to be in range of [{-n}, {n - 1}], '
                         f'but got {d})')
    return value.movedim(0, d) if d != 0 else value


def _unlift(t, level, size):
    """``t`` without ``level``: its batch becomes logical dim 0 (expanded to ``size`` when
    ``t`` is not batched there); levels above ``level`` stay outermost."""
    if isinstance(t, BatchedTensor):
        if t._level == level:
            return t._value
        if t._level > level:
            return _wrap(_unlift(t._value, level, size).movedim(0, 1), t._level)
    return t.unsqueeze(0).expand(size, *t.shape)


# ------------------------------------------------------------ custom rules: Functions, ops
def _function_module():
    from tensorplay.autograd import function
    return function


def _function_class():
    return _function_module().Function


class VmapInfo:
    """What a user vmap rule learns about the vmap: ``batch_size`` and ``randomness``."""
    __slots__ = ('batch_size', 'randomness')

    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness

    def __repr__(self):
        return f'VmapInfo(batch_size={self.batch_size}, randomness={self.randomness!r})'


# Note [autograd.Function under vmap]: while a vmap runs, Function.apply hands its calls to
# this function (the C++ apply's hook; outside vmap the hook is unset: one null test). generate_vmap_rule=True applies the
# Function to the BatchedTensors (forward, setup_context and backward batch op by op); a
# ``vmap`` staticmethod gives a derived Function whose forward calls it on the unwrapped
# batches, so autograd still records the user's backward, which then runs batched.
_hooked = [0]  # threads with a vmap running
_hook_lock = threading.Lock()


def _hook_apply(delta):
    """Function.apply goes through _function_apply_in_vmap while any thread runs a vmap."""
    with _hook_lock:
        _hooked[0] += delta
        _C._set_function_apply_hook(_function_apply_in_vmap if _hooked[0] else None)


def _function_apply_in_vmap(cls, *args, **kwargs):
    if _innermost_level(args, kwargs) < 0:
        return _C._function_apply_direct(cls, *args, **kwargs)
    if not cls._tp_setup_context_style:
        raise RuntimeError('In order to use an autograd.Function with functorch transforms '
                           '(vmap, grad, jvp, jacrev, ...), it must override the setup_context '
                           'staticmethod. For more details, please see '
                           'https://pytorch.org/docs/main/notes/extending.func.html')
    if cls.generate_vmap_rule:
        return _C._function_apply_direct(cls, *args, **kwargs)
    if cls.vmap is _function_class().vmap:
        raise RuntimeError(f'You tried to vmap over {cls.__name__}, but it does not have vmap '
                           f'support. Please override and implement the vmap staticmethod or set '
                           f'generate_vmap_rule=True. For more details, please see '
                           f'https://pytorch.org/docs/main/notes/extending.func.html')
    return _C._function_apply_direct(_with_user_vmap(cls), *args, **kwargs)


_USER_VMAP_FUNCTIONS = {}


def _with_user_vmap(cls):
    derived = _USER_VMAP_FUNCTIONS.get(cls)
    if derived is None:
        def forward(*args):
            return call_user_rule(cls.vmap, args, {})
        derived = type(cls.__name__, (cls,), {'forward': staticmethod(forward),
                                               '__module__': cls.__module__})
        _USER_VMAP_FUNCTIONS[cls] = derived
    return derived


def call_user_rule(fn, args, kwargs):
    """Calls a user's vmap rule ``fn(info, in_dims, *batches, **kwargs)`` at the innermost
    level of ``args`` and wraps its ``(outputs, out_dims)`` back into that level."""
    level = _innermost_level(args, kwargs)
    size = _batch_size(args, kwargs, level)
    values = [(_unwrap(a, level), a) for a in args]
    in_dims = tuple(None if v is None else 0 for v, _ in values)
    out, out_dims = fn(VmapInfo(size, _level_randomness(level)), in_dims,
                       *[a if v is None else v for v, a in values], **kwargs)
    flat, spec = tree_flatten(out)
    dims = [out_dims] * len(flat) if isinstance(out_dims, int) or out_dims is None \
        else tree_flatten(out_dims)[0]
    if len(dims) != len(flat):
        raise ValueError(f'vmap: the rule returned {len(flat)} outputs but {len(dims)} out_dims')
    wrapped = []
    for o, d in zip(flat, dims):
        if not isinstance(o, Tensor):
            wrapped.append(o)
        elif d is None:
            wrapped.append(_wrap(o.unsqueeze(0).expand(size, *o.shape), level))
        else:
            wrapped.append(_wrap(o.movedim(d, 0) if d else o, level))
    return tree_unflatten(wrapped, spec)


def register_vmap_rule(handle, fn):
    """Makes ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)`` the batching
    rule of the op ``handle`` (custom ops' ``register_vmap``)."""
    _RULES[handle] = lambda func, level, args, kwargs: call_user_rule(fn, args, kwargs)
