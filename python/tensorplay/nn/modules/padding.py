"""Padding layers: constant/zero, reflection, replication, circular; 1-3d."""
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module


def _pad_tuple(padding, n):
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"padding must be an int or a {2 * n}-tuple, got {padding}")
    return padding


def _pad_class(name, n, mode):
    class Pad(Module):
        def __init__(self, padding, value=None):
            super().__init__()
            self.padding = _pad_tuple(padding, n)
            if mode == "constant":
                self.value = 0.0 if value is None else value

        def forward(self, input):
            if mode == "constant":
                return F.pad(input, self.padding, "constant", self.value)
            return F.pad(input, self.padding, mode)

        def extra_repr(self):
            return f"{self.padding}" + (f", value={self.value}" if mode == "constant" else "")
    Pad.__name__ = Pad.__qualname__ = name
    return Pad


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant")
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant")
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant")
ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular")


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
