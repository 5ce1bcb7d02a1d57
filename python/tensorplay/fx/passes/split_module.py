"""split_module: cuts a GraphModule into submodules ``submod_<id>`` by a partition id per
node, and returns a top-level GraphModule that calls them in dependency order."""
import inspect

from tensorplay.fx.graph import Graph
from tensorplay.fx.graph_module import GraphModule
from tensorplay.fx.node import map_arg

__all__ = ['split_module', 'Partition']


class Partition:
    """The nodes of one partition, the values it reads from outside (``inputs``) and those
    read after it (``outputs``), in order of first appearance."""

    def __init__(self, name):
        self.name = name
        self.submod_name = f'submod_{name}'
        self.node_names = []
        self.inputs = {}
        self.outputs = {}
        self.dependencies = {}
        self.dependents = {}
        self.graph = Graph()
        self.environment = {}
        self.targets = {}

    def __repr__(self):
        return (f'name: {self.name},\n nodes: {self.node_names},\n inputs: {list(self.inputs)},'
                f'\n outputs: {list(self.outputs)},\n partitions depended on: '
                f'{list(self.dependencies)},\n partition dependents: {list(self.dependents)}')


def split_module(m, root_m, split_callback, qualname_map=None, keep_original_order=False,
                 keep_original_node_name=False):
    """Splits ``m`` by ``split_callback(node) -> partition id`` (for every node other than
    placeholders and outputs). Each partition becomes a GraphModule ``submod_<id>`` taking
    the values it reads from elsewhere and returning those read later (one value, or a
    tuple); ``root_m`` supplies the submodules and attributes. ``qualname_map`` is filled
    with ``'submod_<id>.<target>' -> '<original target>'``. Partitions run in dependency
    order (the order of their first nodes with ``keep_original_order``)."""
    partitions = {}
    orig_nodes = {}
    node_partition = {}

    def record_use(defined, user_part):
        def_part = node_partition.get(defined.name)
        if def_part == user_part:
            return
        if def_part is not None:
            partitions[def_part].outputs.setdefault(defined.name)
            if user_part is not None:
                partitions[user_part].dependencies.setdefault(def_part)
                partitions[def_part].dependents.setdefault(user_part)
        if user_part is not None:
            partitions[user_part].inputs.setdefault(defined.name)

    for node in m.graph.nodes:
        orig_nodes[node.name] = node
        if node.op in ('placeholder', 'output', 'get_attr'):
            continue  # inputs and attributes stay in the top-level module
        pid = str(split_callback(node))
        part = partitions.get(pid)
        if part is None:
            part = partitions[pid] = Partition(pid)
        part.node_names.append(node.name)
        node_partition[node.name] = pid
    for node in m.graph.nodes:
        user_part = node_partition.get(node.name)
        for i in node._input_nodes:
            record_use(i, user_part)

    order = _partition_order(partitions, keep_original_order)

    from tensorplay.nn import Module
    for part in partitions.values():
        # a submodule read by get_attr is reached inside the partition; other attributes
        # and values arrive as inputs (placeholders first)
        env = part.environment
        kept = {}
        module_attrs = []
        for name in part.inputs:
            src = orig_nodes[name]
            if src.op == 'get_attr' and isinstance(_get_attr(root_m, src.target), Module):
                module_attrs.append(src)
            else:
                env[name] = part.graph.placeholder(name, type_expr=src.type)
                env[name].meta = dict(src.meta)
                kept[name] = None
        for src in module_attrs:
            env[src.name] = part.graph.get_attr(src.target)
            part.targets[src.target] = _get_attr(root_m, src.target)
        part.inputs = kept

    for node in m.graph.nodes:
        if node.op in ('placeholder', 'output', 'get_attr'):
            continue
        part = partitions[node_partition[node.name]]
        env = part.environment
        args = map_arg(node.args, lambda n: env[n.name])
        kwargs = map_arg(node.kwargs, lambda n: env[n.name])
        target = node.target
        if node.op == 'call_module':
            part.targets[target] = _get_attr(root_m, target)
            if qualname_map is not None:
                qualname_map[f'{part.submod_name}.{target}'] = target
        new = part.graph.create_node(node.op, target, args, kwargs,
                                     name=node.name if keep_original_node_name else None,
                                     type_expr=node.type)
        new.meta = dict(node.meta)
        env[node.name] = new

    base = Graph()
    base_env = {}
    for node in m.graph.nodes:
        if node.op == 'placeholder':
            default = node.args[0] if node.args else inspect.Signature.empty
            base_env[node.name] = base.placeholder(node.target, type_expr=node.type,
                                                   default_value=default)
            base_env[node.name].meta = dict(node.meta)
    base_mod = {}
    for node in m.graph.nodes:
        if node.op == 'get_attr':
            base_env[node.name] = base.get_attr(node.target)
            base_env[node.name].meta = dict(node.meta)
            base_mod[node.target] = _get_attr(root_m, node.target)
    for pid in order:
        part = partitions[pid]
        outs = tuple(part.environment[name] for name in part.outputs)
        part.graph.output(outs[0] if len(outs) == 1 else outs)
        base_mod[part.submod_name] = GraphModule(part.targets, part.graph)
        call = base.call_module(part.submod_name,
                                tuple(base_env[name] for name in part.inputs))
        if len(outs) > 1:
            from tensorplay.fx.proxy import Proxy
            proxies = Proxy(call)
            for i, name in enumerate(part.outputs):
                base_env[name] = proxies[i].node
        elif outs:
            base_env[next(iter(part.outputs))] = call
    out_node = next(n for n in m.graph.nodes if n.op == 'output')
    base.output(map_arg(out_node.args[0], lambda n: base_env[n.name]))
    return GraphModule(base_mod, base)


def _get_attr(root, target):
    attr = root
    for atom in target.split('.'):
        if not hasattr(attr, atom):
            raise AttributeError(f'split_module: {target} not found in root_m')
        attr = getattr(attr, atom)
    return attr


def _partition_order(partitions, keep_original_order):
    if keep_original_order:
        return list(partitions)
    pending = {pid: len(p.dependencies) for pid, p in partitions.items()}
    ready = [pid for pid in partitions if pending[pid] == 0]
    order = []
    while ready:
        pid = ready.pop(0)
        order.append(pid)
        for dep in partitions[pid].dependents:
            pending[dep] -= 1
            if pending[dep] == 0:
                ready.append(dep)
    if len(order) != len(partitions):
        raise RuntimeError('split_module: the partitions depend on each other in a cycle')
    return order
