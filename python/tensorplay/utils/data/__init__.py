"""tensorplay.utils.data: datasets, samplers and the DataLoader, as torch.utils.data."""
from tensorplay.utils.data.dataloader import (DataLoader, _DatasetKind, default_collate,
                                              default_convert, get_worker_info)
from tensorplay.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,
                                           StackDataset, Subset, TensorDataset, random_split)
from tensorplay.utils.data.distributed import DistributedSampler
from tensorplay.utils.data.sampler import (BatchSampler, RandomSampler, Sampler,
                                           SequentialSampler, SubsetRandomSampler,
                                           WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "_DatasetKind", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
