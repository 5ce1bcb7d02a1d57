"""How a DTensor's global value is laid out over its mesh dimension."""

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """Base of Shard, Replicate and Partial."""

    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


class Shard(Placement):
    """Each rank holds one torch.chunk-style block along ``dim``: blocks of ceil(size/n)
    rows in rank order, so the last ranks may hold fewer rows or none."""

    __slots__ = ("dim",)

    def __init__(self, dim):
        if not isinstance(dim, int):
            raise TypeError(f"Shard(dim) takes an int, got {type(dim).__name__}")
        self.dim = dim

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"


class Replicate(Placement):
    """Every rank holds the whole value."""

    def is_replicate(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"


class Partial(Placement):
    """The global value is the reduction (``reduce_op``) of the ranks' local values."""

    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op="sum"):
        if reduce_op not in ("sum", "avg", "max", "min", "product"):
            raise ValueError(f"Partial: unsupported reduce_op {reduce_op!r}")
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return f"P({self.reduce_op})"
