"""tensorplay.utils.data against torch.utils.data: datasets, samplers, collation, and the
DataLoader in one process and with worker processes (orders, batches, RNG states, errors)."""
import collections
import gc
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as T

import tensorplay as tp
import tensorplay.utils.data as P

LIBS = {"torch": (torch, T), "tp": (tp, P)}
Point = collections.namedtuple("Point", "x y")


def plain(obj):
    """obj with tensors as (dtype, values) and containers tagged by type, so results of the
    two libraries compare with ==."""
    if isinstance(obj, (tp.Tensor, torch.Tensor)):
        dtype = str(obj.dtype).split(".")[-1]
        values = obj.detach().float() if dtype == "bfloat16" else obj.detach()
        return ("tensor", dtype, tuple(obj.shape), values.numpy().tolist())
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    if isinstance(obj, collections.abc.Mapping):
        return (type(obj).__name__, [(k, plain(v)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple, collections.deque)):
        return (type(obj).__name__, [plain(v) for v in obj])
    return obj


def outcome(fn, *args, **kwargs):
    """plain(fn(...)), or the exception's type and message with library names unified."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = plain(fn(*args, **kwargs))
        return result, [unify(w.message) for w in caught]
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, unify(e)


def unify(message):
    return str(message).replace("tensorplay", "torch")


def both(fn):
    """fn(lib, data_module) for torch and for tensorplay; asserts equal outcomes."""
    ref, ours = (outcome(fn, *LIBS[name]) for name in ("torch", "tp"))
    assert ours == ref
    return ours


def rng_states_equal():
    return np.array_equal(tp.get_rng_state().numpy(), torch.get_rng_state().numpy())


def seed_both(seed):
    torch.manual_seed(seed)
    tp.manual_seed(seed)


def gen(lib, seed):
    g = lib.Generator()
    g.manual_seed(seed)
    return g


def tensor_dataset(lib, mod, n=23, features=3):
    x = np.arange(n * features, dtype=np.float32).reshape(n, features)
    return mod.TensorDataset(lib.from_numpy(x.copy()), lib.arange(n))


# ----------------------------------------------------------------------------- samplers

@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 7), (False, 30),
                                                     (True, None), (True, 70)])
@pytest.mark.parametrize("seeded", [True, False])
def test_random_sampler_matches_torch(replacement, num_samples, seeded):
    seed_both(11)
    both(lambda lib, mod: list(mod.RandomSampler(range(10), replacement, num_samples,
                                                 gen(lib, 5) if seeded else None)))
    assert rng_states_equal()


def test_samplers_match_torch():
    seed_both(3)
    both(lambda lib, mod: list(mod.SequentialSampler(range(5))))
    both(lambda lib, mod: list(mod.SubsetRandomSampler([4, 8, 15, 16, 23, 42])))
    both(lambda lib, mod: list(mod.SubsetRandomSampler(range(9), gen(lib, 1))))
    for replacement in (True, False):
        both(lambda lib, mod: list(mod.WeightedRandomSampler(
            [0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 5, replacement)))
        both(lambda lib, mod: list(mod.WeightedRandomSampler(
            lib.tensor([1.0, 2.0, 3.0]), 3, replacement, generator=gen(lib, 2))))
    assert rng_states_equal()
    for drop_last in (True, False):
        both(lambda lib, mod: (list(mod.BatchSampler(range(10), 3, drop_last)),
                               len(mod.BatchSampler(range(10), 3, drop_last))))
    assert len(P.RandomSampler(range(4), num_samples=9)) == 9
    assert P.Sampler[int].__origin__ is P.Sampler and P.Dataset[int].__origin__ is P.Dataset


@pytest.mark.parametrize("make", [
    lambda mod: mod.RandomSampler(range(3), replacement=1),
    lambda mod: mod.RandomSampler(range(3), num_samples=0),
    lambda mod: mod.RandomSampler([], num_samples=None),
    lambda mod: mod.WeightedRandomSampler([1.0, 2.0], 0),
    lambda mod: mod.WeightedRandomSampler([1.0, 2.0], True),
    lambda mod: mod.WeightedRandomSampler([1.0, 2.0], 2, replacement=0),
    lambda mod: mod.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda mod: mod.BatchSampler(range(3), 0, False),
    lambda mod: mod.BatchSampler(range(3), 2, None),
    lambda mod: mod.DistributedSampler(range(3), num_replicas=2, rank=2),
    lambda mod: mod.DistributedSampler(range(3), num_replicas=2, rank=-1),
])
def test_sampler_errors_match_torch(make):
    result = both(lambda lib, mod: make(mod))
    assert result[0] in ("TypeError", "ValueError", "RuntimeError")


@pytest.mark.parametrize("n,replicas", [(10, 3), (9, 3), (2, 4), (0, 2)])
@pytest.mark.parametrize("shuffle,drop_last", [(True, False), (False, False), (True, True)])
def test_distributed_sampler_matches_torch(n, replicas, shuffle, drop_last):
    def shares(lib, mod):
        out = []
        for rank in range(replicas):
            s = mod.DistributedSampler(range(n), num_replicas=replicas, rank=rank,
                                       shuffle=shuffle, seed=4, drop_last=drop_last)
            for epoch in range(2):
                s.set_epoch(epoch)
                out.append((list(s), len(s), s.total_size))
        return out
    both(shares)


def test_distributed_sampler_needs_replicas_and_rank():
    # without them it asks the default process group, as PyTorch's does
    import tensorplay.distributed as dist
    if dist.is_available():
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            P.DistributedSampler(range(4))
    else:
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            P.DistributedSampler(range(4))


# ----------------------------------------------------------------------------- datasets

def test_tensor_stack_concat_chain_subset_match_torch():
    def datasets(lib, mod):
        td = tensor_dataset(lib, mod, n=5)
        stack_t = mod.StackDataset(td, range(5))
        stack_d = mod.StackDataset(a=td, b=list("abcde"))
        concat = mod.ConcatDataset([range(3), range(10, 14)]) + range(20, 22)
        sub = mod.Subset(td, [4, 0, 2])
        return (len(td), td[3], td[lib.tensor([0, 2])], len(stack_t), stack_t[1], stack_d[2],
                stack_t.__getitems__([0, 3]), stack_d.__getitems__([1, 4]), len(concat),
                [concat[i] for i in range(-len(concat), len(concat))], concat.cumulative_sizes,
                len(sub), sub[1], sub[[0, 2]], sub.__getitems__([2, 1]),
                mod.Subset(stack_t, [1, 3]).__getitems__([0, 1]))
    both(datasets)


class _Stream:
    """An IterableDataset of range(start, stop) (whole or, in a worker, its share)."""

    def __init__(self, name, start, stop, shard=False, length=None):
        self.name, self.start, self.stop, self.shard, self.length = name, start, stop, shard, length

    def __iter__(self):
        info = LIBS[self.name][1].get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.stop))
        return iter(range(self.start + info.id, self.stop, info.num_workers))

    def __len__(self):
        if self.length is None:
            raise TypeError("no length")
        return self.length

    def __repr__(self):
        return f"Stream({self.start}, {self.stop})"


def stream(mod, *args, **kwargs):
    cls = type(f"Stream{mod is P}", (_Stream, mod.IterableDataset), {})
    return cls("tp" if mod is P else "torch", *args, **kwargs)


def test_chain_dataset_matches_torch():
    both(lambda lib, mod: (list(mod.ChainDataset([stream(mod, 0, 3), stream(mod, 5, 7)])),
                           len(mod.ChainDataset([stream(mod, 0, 3, length=3)] * 2)),
                           list(stream(mod, 0, 2) + stream(mod, 3, 4)),
                           type(stream(mod, 0, 2) + stream(mod, 3, 4)).__name__))


@pytest.mark.parametrize("make", [
    lambda lib, mod: mod.TensorDataset(lib.zeros(3), lib.zeros(4)),
    lambda lib, mod: mod.StackDataset(range(2), x=range(2)),
    lambda lib, mod: mod.StackDataset(),
    lambda lib, mod: mod.StackDataset(range(2), range(3)),
    lambda lib, mod: mod.StackDataset(x=range(2), y=range(3)),
    lambda lib, mod: mod.ConcatDataset([]),
    lambda lib, mod: mod.ConcatDataset([range(2), stream(mod, 0, 2)]),
    lambda lib, mod: mod.ConcatDataset([range(2)])[-3],
    lambda lib, mod: mod.ConcatDataset([range(2)])[2],
    lambda lib, mod: list(mod.ChainDataset([range(2)])),
    lambda lib, mod: len(mod.ChainDataset([range(2)])),
    lambda lib, mod: mod.Dataset()[0],
    lambda lib, mod: type("S", (mod.Subset,), {"__getitem__": lambda s, i: i})(range(3), [0]),
    lambda lib, mod: mod.random_split(range(10), [3, 3]),
    lambda lib, mod: mod.random_split(range(10), [1.5, -0.5]),
])
def test_dataset_errors_match_torch(make):
    assert both(make)[0] in ("AssertionError", "ValueError", "NotImplementedError",
                             "IndexError", "TypeError")


def test_concat_deprecated_spelling():
    with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
        assert P.ConcatDataset([range(2), range(3)]).cummulative_sizes == [2, 5]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34],
                                     [0.5, 0.5, 0.0], [1.0, 0.0]])
def test_random_split_matches_torch(lengths):
    seed_both(8)
    both(lambda lib, mod: [list(s) for s in mod.random_split(range(10), lengths)])
    assert rng_states_equal()
    both(lambda lib, mod: [list(s) for s in mod.random_split(range(10), lengths,
                                                              generator=gen(lib, 42))])


# ----------------------------------------------------------------------------- collation

def _collate_case(lib, case):
    t = lib.tensor
    return {
        "ints": [1, 2, 3], "floats": [1.5, 2.0], "bools": [True, False],
        "strs": ["a", "b"], "bytes": [b"a", b"b"], "tensors": [t([1.0, 2.0]), t([3.0, 4.0])],
        "int_tensors": [t(1), t(2)],
        "np": [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        "np_f32": [np.float32(1), np.float32(2)], "np_f64": [np.float64(1), np.float64(2.5)],
        "np_mixed": [np.int32(1), np.float32(2.5)], "np_bool": [np.bool_(True), np.bool_(False)],
        "dict": [{"a": 1, "b": t([1])}, {"a": 2, "b": t([2])}],
        "ordered": [collections.OrderedDict(a=1.0), collections.OrderedDict(a=2.0)],
        "namedtuple": [Point(1, 2.0), Point(3, 4.0)], "tuple": [(1, "a"), (2, "b")],
        "list": [[1, 2], [3, 4]], "deque": [collections.deque([1]), collections.deque([2])],
        "nested": [{"x": [(1, np.zeros(2))]}, {"x": [(2, np.ones(2))]}],
        "object": [object(), object()], "unequal": [[1, 2], [1]],
        "str_array": [np.array(["a"]), np.array(["b"])],
        "shape_mismatch": [t([1.0, 2.0]), t([1.0])], "empty": [],
    }[case]


@pytest.mark.parametrize("case", ["ints", "floats", "bools", "strs", "bytes", "tensors",
                                  "int_tensors", "np", "np_f32", "np_f64", "np_mixed", "np_bool",
                                  "dict", "ordered", "namedtuple", "tuple", "list", "deque",
                                  "nested", "object", "unequal", "str_array", "shape_mismatch",
                                  "empty"])
def test_default_collate_matches_torch(case):
    both(lambda lib, mod: mod.default_collate(_collate_case(lib, case)))


@pytest.mark.parametrize("value", [np.array([1.0, 2.0]), np.float64(3), np.int16(3), np.bool_(1),
                                   (np.zeros(1), "a"), Point(np.zeros(1), 1),
                                   {"a": np.ones(1)}, [np.ones(1)], "abc", np.str_("a"),
                                   np.array(["a"]), 3, collections.OrderedDict(a=np.ones(1)),
                                   collections.deque([np.int64(2)])])
def test_default_convert_matches_torch(value):
    both(lambda lib, mod: mod.default_convert(value))


def test_collate_with_custom_map():
    from tensorplay.utils.data._utils.collate import collate, default_collate_fn_map

    def as_sum(batch, *, collate_fn_map=None):
        return sum(batch)
    mapping = {**default_collate_fn_map, int: as_sum}
    assert collate([(1, 2.0), (3, 4.0)], collate_fn_map=mapping)[0] == 4
    assert collate([{"a": 1}, {"a": 2}], collate_fn_map={int: as_sum}) == {"a": 3}


# ----------------------------------------------------------------------------- DataLoader

@pytest.mark.parametrize("batch_size,shuffle,drop_last,seeded", [
    (4, False, False, False), (4, True, False, True), (4, True, True, False),
    (5, True, False, False), (None, True, False, True), (1, False, True, False)])
def test_loader_matches_torch(batch_size, shuffle, drop_last, seeded):
    seed_both(1)

    def epochs(lib, mod):
        g = gen(lib, 9) if seeded else None
        loader = mod.DataLoader(tensor_dataset(lib, mod), batch_size=batch_size, shuffle=shuffle,
                                drop_last=drop_last, generator=g)
        out = [len(loader)] + [list(loader) for _ in range(2)]
        return out + ([g.get_state().numpy().tolist()] if seeded else [])
    both(epochs)
    assert rng_states_equal()


def test_loader_samplers_and_collate_fn_match_torch():
    seed_both(2)
    both(lambda lib, mod: list(mod.DataLoader(range(10), batch_size=3,
                                              sampler=mod.RandomSampler(range(10)))))
    both(lambda lib, mod: list(mod.DataLoader(range(10), batch_sampler=[[1, 2], [9], [0, 3, 4]])))
    both(lambda lib, mod: list(mod.DataLoader([{"a": np.ones(2), "s": "x"}] * 3, batch_size=2)))
    both(lambda lib, mod: list(mod.DataLoader([np.float32(i) for i in range(3)], batch_size=None)))
    both(lambda lib, mod: list(mod.DataLoader(range(5), batch_size=2,
                                              collate_fn=lambda b: b[::-1])))
    assert rng_states_equal()


class _Doubled(P.TensorDataset):
    def __getitem__(self, index):
        return tuple(2 * t[index] for t in self.tensors)


def test_whole_batch_fetch_equals_per_sample_path():
    """Note [Whole-batch fetch]: same batches, dtypes and layout as the per-sample path."""
    x = tp.from_numpy(np.random.default_rng(0).standard_normal((20, 3, 2)).astype(np.float32))
    ds = P.TensorDataset(x.transpose(1, 2), tp.arange(20) % 3 == 0, tp.arange(20.0).half())
    per_sample = list(P.DataLoader(ds, batch_size=6, shuffle=True, generator=gen(tp, 3),
                                   collate_fn=lambda b: P.default_collate(b)))
    whole = list(P.DataLoader(ds, batch_size=6, shuffle=True, generator=gen(tp, 3)))
    assert plain(whole) == plain(per_sample)
    assert all(t.is_contiguous() for batch in whole for t in batch)
    assert ds._default_collated([1, 2]) is not None
    for indices in ([1, -2], [True, 0], [], [np.int64(1)]):
        assert ds._default_collated(indices) is None
    doubled = _Doubled(tp.arange(4))
    assert list(P.DataLoader(doubled, batch_size=4))[0][0].tolist() == [0, 2, 4, 6]
    sub = P.Subset(ds, list(range(19, -1, -1)))
    assert plain(list(P.DataLoader(sub, batch_size=7))) == \
        plain(list(P.DataLoader(sub, batch_size=7, collate_fn=lambda b: P.default_collate(b))))
    both(lambda lib, mod: list(mod.DataLoader(tensor_dataset(lib, mod, n=4), batch_size=2,
                                              sampler=[3, -1, 0, -4])))
    both(lambda lib, mod: list(mod.DataLoader(tensor_dataset(lib, mod, n=4), batch_size=2,
                                              sampler=[0, 4])))
    grad = tp.ones(4, 2, requires_grad=True)
    assert P.TensorDataset(grad)._default_collated([0, 1]) is None


@pytest.mark.parametrize("kwargs", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1), dict(persistent_workers=True),
    dict(shuffle=True, sampler=[0, 1]), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_sampler=[[0]], sampler=[0]), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="fork"), dict(num_workers=1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context=3), dict(batch_size=0), dict(drop_last=1),
])
def test_loader_option_errors_match_torch(kwargs):
    assert both(lambda lib, mod: mod.DataLoader(range(4), **kwargs))[0] in ("ValueError",
                                                                            "TypeError")


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]),
                                    dict(batch_sampler=[[0]])])
def test_iterable_dataset_option_errors_match_torch(kwargs):
    result = both(lambda lib, mod: mod.DataLoader(stream(mod, 0, 3), **kwargs))
    assert result[0] == "ValueError"


def test_loader_attributes_and_len():
    def attrs(lib, mod):
        loader = mod.DataLoader(range(10), batch_size=3, drop_last=True)
        out = [len(loader), loader.batch_size, loader.drop_last, loader.prefetch_factor,
               type(loader.sampler).__name__, type(loader.batch_sampler).__name__,
               loader.collate_fn.__name__, mod.DataLoader(range(10), batch_size=None).collate_fn
               .__name__, mod.DataLoader(range(3), num_workers=1).prefetch_factor]
        try:
            loader.batch_size = 4
        except ValueError as e:
            out.append(str(e))
        loader.num_workers = 0
        return out
    both(attrs)
    both(lambda lib, mod: iter(mod.DataLoader(range(3), timeout=1)))
    both(lambda lib, mod: mod.DataLoader(range(3), num_workers=10_000).num_workers)
    both(lambda lib, mod: next(iter(mod.DataLoader(range(3), pin_memory=True,
                                                   pin_memory_device="cpu"))))


def test_iterable_dataset_in_one_process_matches_torch():
    both(lambda lib, mod: list(mod.DataLoader(stream(mod, 0, 7), batch_size=3)))
    both(lambda lib, mod: list(mod.DataLoader(stream(mod, 0, 7), batch_size=3, drop_last=True)))
    both(lambda lib, mod: list(mod.DataLoader(stream(mod, 0, 3), batch_size=None)))

    def len_then_more(lib, mod):
        loader = mod.DataLoader(stream(mod, 0, 5, length=3), batch_size=None)
        return len(loader), list(loader)
    both(len_then_more)
    both(lambda lib, mod: len(mod.DataLoader(stream(mod, 0, 7, length=7), batch_size=2,
                                             drop_last=True)))


# ----------------------------------------------------------------------------- workers

class TwoArgsError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class Echo:
    """Sample i is (i, worker id); misbehaves at the sample `bad` as `how` says."""

    def __init__(self, name, n=12, bad=None, how=None):
        self.name, self.n, self.bad, self.how = name, n, bad, how

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "raise":
                raise ValueError(f"bad sample {i}")
            if self.how == "key":
                raise KeyError("missing")
            if self.how == "exit":
                os._exit(3)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "sleep":
                time.sleep(1.5)
            if self.how == "unpicklable":
                return lambda: i
            if self.how == "two_args":
                raise TwoArgsError(i, "two")
        info = LIBS[self.name][1].get_worker_info()
        return i, info.id


class Seeds(Echo):
    """Sample i records the worker's seeds and one draw of every generator it seeds."""

    def __getitem__(self, i):
        lib, mod = LIBS[self.name]
        info = mod.get_worker_info()
        return [i, info.id, info.num_workers, info.seed, lib.initial_seed(),
                int(np.random.randint(0, 2**31)), random.random(), lib.rand(()).item(),
                info.dataset.n]


def test_workers_give_torchs_batches_and_rng_states():
    seed_both(5)

    def load(lib, mod):
        g = gen(lib, 13)
        loader = mod.DataLoader(tensor_dataset(lib, mod, n=30), batch_size=4, shuffle=True,
                                num_workers=2, generator=g)
        return list(loader), g.get_state().numpy().tolist()
    both(load)
    assert rng_states_equal()
    both(lambda lib, mod: list(mod.DataLoader(Seeds("torch" if lib is torch else "tp", n=6),
                                              batch_size=None, num_workers=2)))
    assert rng_states_equal()


def test_worker_info_and_init_fn():
    assert P.get_worker_info() is None

    def init(worker_id):
        info = P.get_worker_info()
        info.dataset.n = 100 + worker_id  # this worker's copy only
    out = list(P.DataLoader(Seeds("tp", n=4), batch_size=None, num_workers=2,
                            worker_init_fn=init))
    assert [(o[1], o[2], o[-1]) for o in out] == [(0, 2, 100), (1, 2, 101), (0, 2, 100),
                                                  (1, 2, 101)]
    with pytest.raises(Exception) as e:
        next(iter(P.DataLoader(Seeds("tp", n=4), num_workers=1,
                               worker_init_fn=lambda i: P.get_worker_info().__setattr__("id", 3))))
    assert "Caught FrozenInstanceError in DataLoader worker process 0" in str(e.value)


def test_iterable_dataset_with_workers_matches_torch():
    def load(lib, mod, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return list(mod.DataLoader(stream(mod, 0, 11, shard=True), num_workers=3, **kwargs))
    both(lambda lib, mod: load(lib, mod, batch_size=2))
    both(lambda lib, mod: load(lib, mod, batch_size=2, drop_last=True))
    both(lambda lib, mod: load(lib, mod, batch_size=None, persistent_workers=True))

    def len_warns(lib, mod):
        loader = mod.DataLoader(stream(mod, 0, 3, length=3), batch_size=None, num_workers=2)
        return len(loader), list(loader)
    assert both(len_warns)[1]


def test_worker_exception_is_reraised_with_traceback():
    loader = P.DataLoader(Echo("tp", bad=5, how="raise"), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as e:
        list(loader)
    message = str(e.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\n"
                              "Original Traceback (most recent call last):\n")
    assert 'raise ValueError(f"bad sample {i}")' in message and "bad sample 5" in message
    with pytest.raises(KeyError) as e:
        list(P.DataLoader(Echo("tp", bad=1, how="key"), num_workers=1))
    assert repr(e.value.args[0]).startswith("Caught KeyError in DataLoader worker process 0.")
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(P.DataLoader(Echo("tp", bad=0, how="unpicklable"), batch_size=None, num_workers=1))
    with pytest.raises(RuntimeError, match="^Caught TwoArgsError in DataLoader worker process 0"):
        list(P.DataLoader(Echo("tp", bad=0, how="two_args"), num_workers=1))


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_dead_worker_raises(how):
    loader = P.DataLoader(Echo("tp", bad=3, how=how), batch_size=None, num_workers=2)
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    start = time.monotonic()
    dead = r"DataLoader worker \(pid\(s\) .*\) exited unexpectedly"
    with pytest.raises(RuntimeError, match=dead):
        list(it)
    assert time.monotonic() - start < 4
    assert not any(w.is_alive() for w in it._workers) and pids


def test_timeout_raises():
    loader = P.DataLoader(Echo("tp", bad=1, how="sleep"), batch_size=None, num_workers=1,
                          timeout=0.5)
    it = iter(loader)
    assert next(it) == [0, 0]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        next(it)
    assert time.monotonic() - start < 2.5
    del it


def test_persistent_workers_match_torch():
    seed_both(4)

    def epochs(lib, mod):
        g = gen(lib, 21)
        loader = mod.DataLoader(tensor_dataset(lib, mod, n=14), batch_size=3, shuffle=True,
                                num_workers=2, persistent_workers=True, generator=g)
        first = iter(loader)
        out = [next(first)]  # leave the first epoch unfinished
        pids = [w.pid for w in first._workers]
        out += [list(loader), list(loader)]
        assert [w.pid for w in loader._iterator._workers] == pids
        return out, g.get_state().numpy().tolist()
    both(epochs)
    assert rng_states_equal()


def test_abandoned_iterators_stop_their_workers():
    loader = P.DataLoader(tensor_dataset(tp, P, n=200), batch_size=2, num_workers=2,
                          prefetch_factor=4)
    it = iter(loader)
    next(it)
    workers = list(it._workers)
    del it
    gc.collect()
    assert not any(w.is_alive() for w in workers)
    for batch in loader:
        break
    start = time.monotonic()
    gc.collect()
    for i, batch in enumerate(P.DataLoader(Echo("tp"), num_workers=2, in_order=False)):
        if i == 2:
            break
    assert time.monotonic() - start < 3


def test_in_order_false_and_prefetch_deliver_everything():
    out = list(P.DataLoader(Echo("tp", n=20), batch_size=3, num_workers=2, in_order=False,
                            prefetch_factor=1))
    assert sorted(i for batch in out for i in batch[0].tolist()) == list(range(20))


def test_large_tasks_and_batches_do_not_deadlock():
    """Index lists larger than a pipe's buffer while results fill the result pipe."""
    def hung(signum, frame):
        raise TimeoutError("the DataLoader hangs")
    ds = P.TensorDataset(tp.zeros(100000, 16), tp.arange(100000))
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        batches = list(P.DataLoader(ds, batch_size=25000, num_workers=1))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [b[1][-1].item() for b in batches] == [24999, 49999, 74999, 99999]


def test_tensors_cross_process_boundaries_intact():
    rng = np.random.default_rng(1)
    values = rng.standard_normal((6, 4, 3)).astype(np.float32)
    base = tp.from_numpy(values)
    sample = {"t": base.transpose(1, 2), "bf": base.bfloat16(), "half": base.half(),
              "mask": base > 0, "empty": tp.zeros(0, 2), "scalar": tp.tensor(3, dtype=tp.int8),
              "leaf": tp.ones(2, requires_grad=True), "np": np.arange(3), "s": ["x", b"y"]}
    sample["again"] = sample["t"]
    [ours] = list(P.DataLoader([sample], batch_size=None, num_workers=1))
    assert plain(ours) == plain(P.default_convert(sample))
    assert ours["again"] is ours["t"] and ours["leaf"].requires_grad
    assert ours["bf"].dtype == tp.bfloat16
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        list(P.DataLoader([tp.ones(2, requires_grad=True) * 2], batch_size=None,
                          num_workers=1))


def test_spawn_context():
    ds = tensor_dataset(tp, P, n=10)
    loader = P.DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert plain(list(loader)) == plain(list(P.DataLoader(ds, batch_size=4)))
