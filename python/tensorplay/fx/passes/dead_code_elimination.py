"""DeadCodeElimination: erases nodes whose results nothing reads and that have no side
effect (Node.is_impure)."""
from tensorplay.fx.passes.infra.pass_base import PassBase, PassResult

__all__ = ['DeadCodeElimination']


class DeadCodeElimination(PassBase):
    """``Graph.eliminate_dead_code`` as a pass; unused submodules are dropped too."""

    def call(self, gm):
        modified = gm.graph.eliminate_dead_code()
        if modified:
            gm.delete_all_unused_submodules()
        return PassResult(gm, modified)
