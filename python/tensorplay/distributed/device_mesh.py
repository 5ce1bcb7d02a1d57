"""DeviceMesh: the ranks a DTensor is laid out over (one dimension here; Note [DTensor lite]
in tensor/_api.py)."""
import tensorplay as tp

__all__ = ["init_device_mesh", "DeviceMesh"]


class DeviceMesh:
    """A 1-D arrangement of global ranks on ``device_type``, with the process group that
    connects them. Every rank of the world constructs it (a sub-mesh makes a new group)."""

    def __init__(self, device_type, mesh, *, mesh_dim_names=None, _init_backend=True):
        import tensorplay.distributed as dist
        if not isinstance(device_type, str):
            raise TypeError(f"device_type must be a str, got {type(device_type).__name__}")
        ranks = mesh.tolist() if isinstance(mesh, tp.Tensor) else list(mesh)
        if ranks and isinstance(ranks[0], list):
            raise NotImplementedError("tensorplay's DeviceMesh has one dimension; "
                                      f"got a mesh of {len(ranks)} rows")
        if len(set(ranks)) != len(ranks):
            raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found {ranks}")
        if mesh_dim_names is not None and len(tuple(mesh_dim_names)) != 1:
            raise RuntimeError(f"mesh_dim_names {tuple(mesh_dim_names)} should have the same "
                               f"length as the mesh's dimensions (1)")
        self.device_type = device_type
        self.mesh = tp.tensor(ranks, dtype=tp.int64)
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
        self._ranks = ranks
        if not dist.is_initialized():
            raise RuntimeError("DeviceMesh needs an initialized default process group "
                               "(call init_process_group first)")
        world = dist.get_world_size()
        if any(not 0 <= r < world for r in ranks):
            raise RuntimeError(f"DeviceMesh ranks {ranks} are not all ranks of the world of "
                               f"size {world}")
        if sorted(ranks) == list(range(world)) and ranks == sorted(ranks):
            self._group = dist.group.WORLD
        else:
            self._group = dist.new_group(ranks)
        me = dist.get_rank()
        self._coordinate = [ranks.index(me)] if me in ranks else None

    # ---- PyTorch's accessors ----
    @property
    def ndim(self):
        return 1

    @property
    def shape(self):
        return (len(self._ranks),)

    def size(self, mesh_dim=None):
        if mesh_dim not in (None, 0, -1):
            raise IndexError(f"mesh dimension {mesh_dim} out of range for a 1-D DeviceMesh")
        return len(self._ranks)

    def get_group(self, mesh_dim=None):
        if mesh_dim not in (None, 0, -1) and not (self.mesh_dim_names and
                                                  mesh_dim in self.mesh_dim_names):
            raise IndexError(f"mesh dimension {mesh_dim} out of range for a 1-D DeviceMesh")
        return self._group

    def get_all_groups(self):
        return [self._group]

    def get_local_rank(self, mesh_dim=None):
        if self._coordinate is None:
            raise RuntimeError("this rank is not part of the DeviceMesh")
        return self._coordinate[0]

    def get_rank(self):
        import tensorplay.distributed as dist
        return dist.get_rank()

    def get_coordinate(self):
        return None if self._coordinate is None else list(self._coordinate)

    def __getitem__(self, name):
        if self.mesh_dim_names and name in self.mesh_dim_names:
            return self
        raise KeyError(f"Invalid mesh_dim_name {name!r}; the mesh's names are {self.mesh_dim_names}")

    def __deepcopy__(self, memo):
        return self  # its process group cannot be copied; copies of DTensors share the mesh

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and (other is self or (
            other.device_type == self.device_type and other._ranks == self._ranks))

    def __hash__(self):
        return hash((self.device_type, tuple(self._ranks)))

    def __repr__(self):
        names = f", mesh_dim_names={self.mesh_dim_names}" if self.mesh_dim_names else ""
        return f"DeviceMesh('{self.device_type}', {self._ranks}{names})"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A DeviceMesh over the whole world, ranks in order; ``mesh_shape`` has one entry here."""
    import tensorplay.distributed as dist
    mesh_shape = tuple(mesh_shape)
    if mesh_dim_names is not None and len(tuple(mesh_dim_names)) != len(mesh_shape):
        raise RuntimeError("mesh_shape and mesh_dim_names should have same length! "
                           f"Found len(mesh_dim_names): {len(tuple(mesh_dim_names))} and "
                           f"len(mesh_shape):{len(mesh_shape)}.")
    if device_type.startswith("cuda") and not tp.cuda.is_available():
        raise RuntimeError("init_device_mesh: device_type 'cuda' needs CUDA; tensorplay.distributed "
                           "runs on CPU (Gloo)")
    if len(mesh_shape) != 1:
        raise NotImplementedError(f"tensorplay's DeviceMesh has one dimension; got mesh_shape "
                                  f"{mesh_shape}")
    if not dist.is_initialized():
        raise RuntimeError("init_device_mesh needs an initialized default process group "
                           "(call init_process_group first)")
    n = mesh_shape[0]
    world = dist.get_world_size()
    if n != world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but found "
                           f"{n} ranks!" if n > world else
                           f"mesh_shape {mesh_shape} does not cover the world of size {world}")
    return DeviceMesh(device_type, list(range(n)), mesh_dim_names=mesh_dim_names)
