"""tensorplay.distributed.tensor: DTensor over a 1-D DeviceMesh (Note [DTensor lite] in
_api.py), as far as FSDP and distributed checkpoints need it."""
from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, distribute_tensor, empty, full, ones, rand, randn, zeros
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "Shard", "Replicate", "Partial", "Placement",
           "DeviceMesh", "init_device_mesh", "ones", "empty", "full", "rand", "randn", "zeros"]
