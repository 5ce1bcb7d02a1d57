"""tensorplay.distributed.fsdp: fully_shard (PyTorch's FSDP2 API) on CPU over Gloo
(Note [FSDP parameter groups] in _fully_shard.py)."""
from ._fully_shard import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                           UnshardHandle, fully_shard)

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "CPUOffloadPolicy", "UnshardHandle"]
