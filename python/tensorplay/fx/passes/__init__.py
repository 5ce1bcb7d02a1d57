"""Graph passes (PyTorch's ``torch.fx.passes``): PassManager / PassBase / PassResult, and
DeadCodeElimination, CSE, ConstFold, Normalize, ShapeProp (on fake tensors), FusionGroups,
split_module, graph pictures."""
from tensorplay.fx.passes.const_fold import ConstFold
from tensorplay.fx.passes.cse import CSE
from tensorplay.fx.passes.dead_code_elimination import DeadCodeElimination
from tensorplay.fx.passes.fusion import FusionGroups, fusion_groups
from tensorplay.fx.passes.infra import PassBase, PassManager, PassResult
from tensorplay.fx.passes.normalize import Normalize
from tensorplay.fx.passes.shape_prop import ShapeProp
from tensorplay.fx.passes.split_module import split_module

__all__ = ['PassManager', 'PassBase', 'PassResult', 'DeadCodeElimination', 'CSE', 'ConstFold',
           'Normalize', 'ShapeProp', 'FusionGroups', 'fusion_groups', 'split_module']
