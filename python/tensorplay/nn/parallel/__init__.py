from tensorplay.nn.parallel.data_parallel import DataParallel, data_parallel
from tensorplay.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
