"""tp.nn: modules, parameters, functional, init (PyTorch's torch.nn)."""
from tensorplay.nn.parameter import (Buffer, Parameter, UninitializedBuffer,
                                     UninitializedParameter)
from tensorplay.nn.modules import *  # noqa: F401,F403
from tensorplay.nn.modules import __dict__ as _modules_dict
from tensorplay.nn import functional, init, parallel, utils  # noqa: F401
from tensorplay.nn.parallel import DataParallel  # noqa: F401

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "functional",
           "init", "utils"] + [k for k, v in _modules_dict.items()
                               if isinstance(v, type) and not k.startswith("_")] + ["DataParallel"]
