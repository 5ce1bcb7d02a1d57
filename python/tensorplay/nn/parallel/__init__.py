from tensorplay.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
