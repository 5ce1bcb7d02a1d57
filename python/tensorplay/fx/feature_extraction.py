"""Feature extraction (torchvision's ``models.feature_extraction``): name every node of a
model's graph by module path, and build a module returning chosen intermediate values.

    train_nodes, eval_nodes = get_graph_node_names(model)
    body = create_feature_extractor(model, return_nodes={'layer2.0.add': 'mid', 'fc': 'out'})
    body(x)   # {'mid': ..., 'out': ...}
"""
import copy
import re
import warnings

from tensorplay.fx._symbolic_trace import Tracer
from tensorplay.fx.graph_module import GraphModule

__all__ = ['create_feature_extractor', 'get_graph_node_names', 'NodePathTracer',
           'DualGraphModule']


class NodePathTracer(Tracer):
    """A Tracer that also names each node by where it happens: a leaf module's call by its
    path (``layer1.0.conv1``), any other node by its module's path and its name
    (``layer1.0.add``); a name seen again gets ``_1``, ``_2`` ... (``layer1.0.relu_1``).
    ``node_to_qualname`` maps nodes to these names."""

    def __init__(self, *args, leaf_modules=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.leaf_modules = tuple(leaf_modules or ())
        self.current_module_qualname = ''
        self.node_to_qualname = {}

    def is_leaf_module(self, m, module_qualname):
        return isinstance(m, self.leaf_modules) or super().is_leaf_module(m, module_qualname)

    def call_module(self, m, forward, args, kwargs):
        old = self.current_module_qualname
        try:
            self.current_module_qualname = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualname = old

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        self.node_to_qualname[proxy.node] = self._node_qualname(proxy.node)
        return proxy

    def _node_qualname(self, node):
        qualname = self.current_module_qualname
        if node.op != 'call_module':
            # the node's own name without the graph-wide numeric suffix
            own = re.sub(r'_[0-9]+$', '', node.name) if re.match(r'.+_[0-9]+$', node.name) \
                else node.name
            qualname = f'{qualname}.{own}' if qualname else own
        pattern = re.compile(rf'{re.escape(qualname)}(_([0-9]+))?$')
        for seen in reversed(list(self.node_to_qualname.values())):
            m = pattern.match(seen)
            if m is not None:
                return f'{qualname}_{int(m.group(2)) + 1 if m.group(2) else 1}'
        return qualname


def _modes(model, mode):
    """Runs with ``model`` set to train (True) or eval (False), restored after."""
    class _Mode:
        def __enter__(self):
            self.was = model.training
            model.train(mode)

        def __exit__(self, *exc):
            model.train(self.was)
    return _Mode()


def _node_names(model, train, tracer_kwargs, concrete_args):
    with _modes(model, train):
        tracer = NodePathTracer(**(tracer_kwargs or {}))
        graph = tracer.trace(model, concrete_args=concrete_args)
    return graph, tracer


def get_graph_node_names(model, tracer_kwargs=None, suppress_diff_warning=False,
                         concrete_args=None):
    """The names of ``model``'s graph nodes in train mode and in eval mode (two lists; the
    output node excluded), as NodePathTracer names them. Warns when they differ."""
    names = []
    for train in (True, False):
        _, tracer = _node_names(model, train, tracer_kwargs, concrete_args)
        names.append([q for n, q in tracer.node_to_qualname.items() if n.op != 'output'])
    if names[0] != names[1] and not suppress_diff_warning:
        warnings.warn('NOTE: The nodes obtained by tracing the model in eval mode are a subsequence '
                      'of those obtained in train mode. When choosing nodes for feature '
                      'extraction, you may need to specify output nodes for train and eval mode '
                      'separately.')
    return names[0], names[1]


class DualGraphModule(GraphModule):
    """A GraphModule with one graph for training and one for evaluation: ``train()`` /
    ``eval()`` switch ``forward`` between them."""

    def __init__(self, root, train_graph, eval_graph, class_name='GraphModule'):
        super().__init__(root, eval_graph, class_name)
        for node in train_graph.nodes:  # the train graph may reach more of root
            if node.op in ('get_attr', 'call_module') and not _has(self, node.target):
                from tensorplay.fx.graph_module import _copy_attr
                _copy_attr(root, self, node.target)
        self.train_graph = train_graph
        self.eval_graph = eval_graph
        self.train(root.training)

    def train(self, mode=True):
        g = self.train_graph if mode else self.eval_graph
        if self._graph is not g:
            self.graph = g
        return super().train(mode)

    def __deepcopy__(self, memo):
        res = super().__deepcopy__(memo)
        res.train_graph = copy.deepcopy(self.train_graph, memo)
        res.eval_graph = copy.deepcopy(self.eval_graph, memo)
        res.train(self.training)
        return res


def _has(mod, path):
    for atom in path.split('.'):
        if not hasattr(mod, atom):
            return False
        mod = getattr(mod, atom)
    return True


def _normalize(nodes, arg):
    if nodes is None:
        return None
    if isinstance(nodes, str):
        nodes = [nodes]
    if isinstance(nodes, (list, tuple)):
        return {n: n for n in nodes}
    if isinstance(nodes, dict):
        return dict(nodes)
    raise TypeError(f'create_feature_extractor: {arg} must be a list or dict of node names, '
                    f'got {type(nodes).__name__}')


def create_feature_extractor(model, return_nodes=None, train_return_nodes=None,
                             eval_return_nodes=None, tracer_kwargs=None,
                             suppress_diff_warning=False, concrete_args=None):
    """A module returning ``{output_name: value}`` for chosen nodes of ``model``.

    ``return_nodes``: node names (as ``get_graph_node_names`` gives them) or module paths
    (the last node inside that module), a list or a dict to output names; or
    ``train_return_nodes`` and ``eval_return_nodes`` for modes whose graphs differ. The
    result keeps ``model``'s parameter and buffer names (its ``state_dict`` keys are
    ``model``'s, for the parts it uses). ValueError for unknown names."""
    if (train_return_nodes is None) != (eval_return_nodes is None):
        raise ValueError('If any of `train_return_nodes` and `eval_return_nodes` are specified, '
                         'then both should be specified')
    if return_nodes is None and train_return_nodes is None:
        raise ValueError('Either `return_nodes` or `train_return_nodes` and `eval_return_nodes` '
                         'together, should be specified')
    if return_nodes is not None and train_return_nodes is not None:
        raise ValueError('If `train_return_nodes` and `eval_return_nodes` are specified, then '
                         '`return_nodes` should not be specified')
    return_nodes = _normalize(return_nodes, 'return_nodes')
    per_mode = {True: _normalize(train_return_nodes, 'train_return_nodes') or return_nodes,
                False: _normalize(eval_return_nodes, 'eval_return_nodes') or return_nodes}
    graphs = {}
    for train in (True, False):
        graph, tracer = _node_names(model, train, tracer_kwargs, concrete_args)
        qualnames = {n: q for n, q in tracer.node_to_qualname.items() if n.op != 'output'}
        chosen = {}
        for query, out_name in per_mode[train].items():
            hits = [n for n, q in qualnames.items() if q == query or q.startswith(query + '.')]
            if not hits:
                raise ValueError(f"node: '{query}' is not present in model. Hint: use "
                                 '`get_graph_node_names` to make sure the `return_nodes` you '
                                 'specified are present. It may even be that you need to '
                                 'specify `train_return_nodes` and `eval_return_nodes` '
                                 'separately.')
            chosen[str(out_name)] = max(hits, key=lambda n: n._sort_key)
        graph.output(chosen)
        graph.owning_module = tracer.root  # is_impure looks call_module targets up there
        graph.eliminate_dead_code()
        graphs[train] = graph
    name = type(model).__name__
    return DualGraphModule(tracer.root, graphs[True], graphs[False], class_name=name)
