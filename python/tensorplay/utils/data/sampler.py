"""Samplers: iterables of dataset indices (or of index batches); the random ones draw exactly
what PyTorch's draw (docs/random.md), so a seed gives PyTorch's order."""
import itertools
from typing import Generic, TypeVar

import tensorplay as tp

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class Sampler(Generic[_T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (indices, or lists of indices
    for a batch sampler) and, where they can, ``__len__``."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices (repeated and cut to ``num_samples``), or with
    ``replacement=True`` ``num_samples`` independent uniform draws.

    Without a ``generator`` each iteration seeds a fresh generator from one int64 draw of
    the default generator, as PyTorch does.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        """How many indices one iteration yields (default: the dataset's length)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            seed = int(tp.empty((), dtype=tp.int64).random_().item())
            generator = tp.Generator()
            generator.manual_seed(seed)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from tp.randint(high=n, size=(32,), dtype=tp.int64,
                                      generator=generator).tolist()
            yield from tp.randint(high=n, size=(self.num_samples % 32,), dtype=tp.int64,
                                  generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from tp.randperm(n, generator=generator).tolist()
            yield from tp.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (``randperm(len(indices))``)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in tp.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices into ``weights`` drawn with probabilities proportional to the
    weights (``multinomial``), with or without replacement::

        list(WeightedRandomSampler([0.1, 0.9, 0.4], 4, generator=tp.Generator().manual_seed(0)))
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = tp.as_tensor(weights, dtype=tp.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = tp.multinomial(self.weights, self.num_samples, self.replacement,
                               generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``)::

        list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))  # [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        if self.drop_last:
            yield from (list(batch) for batch in zip(*[indices] * self.batch_size))
            return
        batch = list(itertools.islice(indices, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
