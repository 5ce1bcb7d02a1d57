"""PassBase: a graph pass as a callable object (``requires`` -> ``call`` -> ``ensures``)
returning a PassResult."""
from typing import NamedTuple

__all__ = ['PassBase', 'PassResult']


class PassResult(NamedTuple):
    """What a pass returns: the (possibly new) GraphModule and whether it changed it."""
    graph_module: object
    modified: bool


class PassBase:
    """Subclass and define ``call(graph_module) -> PassResult``; ``requires`` and
    ``ensures`` check pre- and post-conditions (both do nothing by default).

        class DropDropout(PassBase):
            def call(self, gm):
                ...
                return PassResult(gm, modified)
    """

    def __call__(self, graph_module):
        self.requires(graph_module)
        res = self.call(graph_module)
        if not isinstance(res, PassResult):
            raise TypeError(f'{type(self).__name__}.call must return a PassResult, got '
                            f'{type(res).__name__}')
        self.ensures(res.graph_module)
        return res

    def call(self, graph_module):
        raise NotImplementedError(f'{type(self).__name__} must define call(graph_module)')

    def requires(self, graph_module):
        pass

    def ensures(self, graph_module):
        pass
