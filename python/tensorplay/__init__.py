"""TensorPlay: tensors, autograd and neural networks with PyTorch's API."""
from tensorplay import _C
