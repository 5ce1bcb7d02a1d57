"""Tensor subclasses of the framework itself (fake tensors), as torch._subclasses."""
from tensorplay._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: F401
