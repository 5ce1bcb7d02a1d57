"""DistributedSampler: each of ``num_replicas`` processes reads its own share of a dataset."""
import math

import tensorplay as tp
from tensorplay.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that replica ``rank`` of ``num_replicas`` reads: every
    ``num_replicas``-th index starting at ``rank`` of a (shuffled, with seed
    ``seed + epoch``) order, padded by repetition to a multiple of ``num_replicas`` or, with
    ``drop_last``, cut to one. Call ``set_epoch`` before each epoch to reshuffle::

        sampler = DistributedSampler(dataset, num_replicas=4, rank=1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for batch in DataLoader(dataset, sampler=sampler): ...

    ``num_replicas`` and ``rank`` default to the default process group's world size and rank
    (tensorplay.distributed.init_process_group).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            import tensorplay.distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = tp.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = tp.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            if padding > 0:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not "
                                 f"match num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch: with ``shuffle``, each epoch gives another order (seed + epoch)."""
        self.epoch = epoch
