"""Interpreter runs a GraphModule node by node (one overridable method per op kind);
Transformer runs it on Proxies to build a new, rewritten GraphModule.
"""
import inspect

from tensorplay.fx.graph import Graph
from tensorplay.fx.graph_module import GraphModule
from tensorplay.fx.node import map_aggregate, map_arg
from tensorplay.fx.proxy import Proxy, TracerBase

__all__ = ['Interpreter', 'Transformer']


class Interpreter:
    """Runs ``module``'s graph one node at a time: ``run(*args)`` returns what the graph
    returns. Override ``placeholder`` / ``get_attr`` / ``call_function`` /
    ``call_method`` / ``call_module`` / ``output`` (or ``run_node``) to change how nodes
    run; ``garbage_collect_values`` frees each value after its last use.

        class NegateRelu(Interpreter):
            def call_function(self, target, args, kwargs):
                out = super().call_function(target, args, kwargs)
                return -out if target is tp.relu else out
    """

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = 'Interpreter'
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            seen = set()
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Runs the graph on ``args`` (``initial_env`` pre-sets node values)."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph._codegen.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f'While executing {node.format_node()}'
                    e.args = (f'{e.args[0]}\n\n{msg}' if e.args else msg,) + e.args[1:]
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, ()):
                    del self.env[to_delete]
            if node.op == 'output':
                out = self.env[node]
                return self.graph._codegen.process_outputs(out) if enable_io_processing else out
        return None

    def boxed_run(self, args_list):
        """``run`` taking its inputs as a list, which it empties."""
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == 'placeholder':
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Runs one node: fetches its arguments' values and calls the method for its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        """The next input (``*args`` placeholders take the rest; a default when none)."""
        if target.startswith('*'):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f'Expected positional argument for parameter {target}, but one '
                               'was not passed in!') from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        """The module's attribute at dotted path ``target``."""
        obj = self.module
        for i, atom in enumerate(target.split('.')):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """The values of ``n``'s args and kwargs (nodes replaced by what they computed)."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        env = self.env

        def load(a):
            try:
                return env[a]
            except KeyError:
                raise RuntimeError(f'Node {n} referenced nonexistent value {a}! Run Graph.lint() '
                                   'to diagnose such issues') from None
        return map_arg(args, load)


class _TransformerTracer(TracerBase):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        self.module_stack = {}

    def is_leaf_module(self, _, __):
        return True


class Transformer(Interpreter):
    """Builds a new GraphModule by running ``module``'s graph on Proxies: each op method
    returns the Proxy of the node it adds to the new graph, so overriding one (say
    ``call_function``) to call something else rewrites those nodes. ``transform()``
    returns the result.

        class ReluToGelu(Transformer):
            def call_function(self, target, args, kwargs):
                if target is tp.relu:
                    target = tp.nn.functional.gelu
                return super().call_function(target, args, kwargs)
    """

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        node = self.new_graph.placeholder(target, default_value=default)
        node.meta = dict(self._current.meta)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy('get_attr', target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy('call_module', target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy('call_function', target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy('call_method', target, args, kwargs)

    def run_node(self, n):
        self._current = n
        out = super().run_node(n)
        if isinstance(out, Proxy) and n.op != 'placeholder':
            for k, v in n.meta.items():
                out.node.meta.setdefault(k, v)
        return out

    def transform(self):
        """The rewritten GraphModule."""
        self.extra_traceback = False
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
