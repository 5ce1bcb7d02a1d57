"""Pass infrastructure: PassBase / PassResult and PassManager."""
from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult
from tensorplay.fx.passes.infra.pass_manager import PassManager

__all__ = ['PassBase', 'PassResult', 'PassManager']
