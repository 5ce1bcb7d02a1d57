"""Graph capture and transformation (PyTorch's ``torch.fx``; also importable as
``tensorplay.graph``): symbolic tracing to a Graph of Nodes, GraphModule to run and edit it,
Interpreter / Transformer to walk it, passes, pattern rewriting and op-level capture.

    gm = tp.fx.symbolic_trace(model)
    for node in gm.graph.nodes:
        if node.op == 'call_function' and node.target is tp.relu:
            node.target = tp.nn.functional.gelu
    gm.recompile()
"""
import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys

import tensorplay as _tp
from tensorplay.fx.graph import CodeGen, Graph, PythonCode
from tensorplay.fx.graph_module import GraphModule
from tensorplay.fx.interpreter import Interpreter, Transformer
from tensorplay.fx.node import Node, has_side_effect, map_arg
from tensorplay.fx.proxy import Proxy
from tensorplay.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from tensorplay.fx import proxy  # noqa: F401  (tp.fx.proxy.TraceError)
from tensorplay.fx import subgraph_rewriter  # noqa: F401
from tensorplay.fx.subgraph_rewriter import replace_pattern

__all__ = ['symbolic_trace', 'Tracer', 'wrap', 'Graph', 'GraphModule', 'Interpreter',
           'Transformer', 'Node', 'Proxy', 'replace_pattern', 'has_side_effect', 'map_arg',
           'CodeGen', 'PythonCode', 'PH']

has_side_effect(_tp._assert)


class _GraphAlias(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Makes ``tensorplay.graph[.<sub>]`` the very modules ``tensorplay.fx[.<sub>]`` (the
    release's name and PyTorch's for one package; no second copy of any class)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith('tensorplay.graph.'):
            return _importlib_util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return _importlib.import_module('tensorplay.fx' + spec.name[len('tensorplay.graph'):])

    def exec_module(self, module):
        pass


_sys.modules['tensorplay.graph'] = _sys.modules[__name__]
_sys.meta_path.insert(0, _GraphAlias())


def make_graph(f, **kwargs):
    """The release's name for ``tensorplay.fx.experimental.proxy_tensor.make_fx``:
    ``make_graph(f)(*example_inputs)`` captures ``f`` as a graph of ``tp.ops.aten`` ops."""
    from tensorplay.fx.experimental.proxy_tensor import make_fx
    return make_fx(f, **kwargs)
