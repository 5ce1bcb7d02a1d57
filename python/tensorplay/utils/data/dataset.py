"""Datasets: the map-style and iterable-style bases, the tensor / stacking / concatenating /
chaining / subset wrappers, and random_split (same permutation as PyTorch for the same seed).
"""
import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, TypeVar

import tensorplay as tp

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]

_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys to samples: subclasses define ``__getitem__`` and usually ``__len__``.

    A subclass may also define ``__getitems__(indices)`` returning the list of samples of a
    whole batch; the DataLoader then calls it once per batch instead of ``__getitem__`` per
    sample. ``a + b`` is ``ConcatDataset([a, b])``.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy, so a dataset that should
    not repeat itself splits the stream with ``get_worker_info()``::

        def __iter__(self):
            info = tp.utils.data.get_worker_info()
            if info is None:
                return iter(range(self.n))
            return iter(range(info.id, self.n, info.num_workers))

    ``a + b`` is ``ChainDataset([a, b])``.
    """

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are ``tuple(t[i] for t in tensors)``; all tensors share their first size."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)

    def _default_collated(self, indices):
        """``default_collate([self[i] for i in indices])`` with one gather per tensor, or
        None where that could differ (see Note [Whole-batch fetch])."""
        cls = type(self)
        if (cls.__getitem__ is not TensorDataset.__getitem__ or hasattr(cls, "__getitems__")
                or not isinstance(indices, (list, tuple)) or not indices
                or any(type(i) is not int for i in indices)
                or any(not isinstance(t, tp.Tensor) or t.requires_grad for t in self.tensors)):
            return None
        try:
            index = tp.tensor(indices, dtype=tp.int64)
            return [t.index_select(0, index) for t in self.tensors]
        except IndexError:  # negative or out-of-range: the per-sample path says which
            return None


class StackDataset(Dataset):
    """Samples of several same-length datasets side by side: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])`` and ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both types "
                                 "are given.")
            parts = args
        elif kwargs:
            parts = list(kwargs.values())
        else:
            raise ValueError("At least one dataset should be passed")
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices):
        keyed = isinstance(self.datasets, dict)
        named = self.datasets.items() if keyed else enumerate(self.datasets)
        columns = {}
        for key, dataset in named:
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch."
                                     f" Expected {len(indices)}, got {len(items)}")
                columns[key] = items
            else:
                columns[key] = [dataset[idx] for idx in indices]
        if keyed:
            return [{k: column[j] for k, column in columns.items()} for j in range(len(indices))]
        return [tuple(column[j] for column in columns.values()) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        """Running totals of the datasets' lengths."""
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets):
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[dataset_idx - 1] if dataset_idx > 0 else 0
        return self.datasets[dataset_idx][idx - start]

    @property
    def cummulative_sizes(self):
        """Deprecated spelling of ``cumulative_sizes``."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """The streams of several iterable datasets one after the other, chained lazily."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def _members(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self):
        for d in self._members():
            yield from d

    def __len__(self):
        return sum(len(d) for d in self._members())


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    A subclass that overrides ``__getitem__`` must override ``__getitems__`` too (the
    DataLoader calls the latter).
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing "
                "Subset and overriding __getitem__, you must also override __getitems__ to "
                "ensure DataLoader works correctly with your custom logic. A simple "
                "implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = [self.indices[idx] for idx in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self):
        return len(self.indices)

    def _default_collated(self, indices):
        """The inner dataset's whole-batch fetch at the mapped indices (Note [Whole-batch
        fetch]), or None."""
        inner = getattr(self.dataset, "_default_collated", None)
        if (inner is None or type(self).__getitems__ is not Subset.__getitems__
                or not isinstance(indices, (list, tuple))):
            return None
        return inner([self.indices[idx] for idx in indices])


def random_split(dataset, lengths, generator=tp.default_generator):
    """Splits ``dataset`` into non-overlapping Subsets of the given ``lengths``, or of the
    given fractions of its length (summing to 1; the remainder goes one by one to the
    first splits). The order comes from ``randperm(len(dataset), generator=generator)``,
    so a seed gives PyTorch's split::

        a, b = random_split(range(10), [0.3, 0.7], generator=tp.Generator().manual_seed(0))
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = tp.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
