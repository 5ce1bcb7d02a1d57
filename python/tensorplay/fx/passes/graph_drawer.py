"""Pictures of graphs: DOT text (nodes coloured by op kind, labelled with their target and
the shapes ShapeProp or fake-tensor capture recorded), rendered to SVG / PNG / PDF by
Graphviz; FxGraphDrawer is torch.fx's drawing API over the same text."""
import os
import shutil

__all__ = ['FxGraphDrawer', 'DotGraph', 'graph_to_dot']

_COLORS = {'placeholder': '#AED6F1', 'get_attr': '#F9E79F', 'call_function': '#ABEBC6',
           'call_method': '#D7BDE2', 'call_module': '#F5CBA7', 'output': '#D5D8DC'}

_NO_DOT = ("drawing a graph needs Graphviz's `dot` program, which is not on PATH. Install "
           'Graphviz (Debian/Ubuntu: `apt-get install graphviz`; Fedora: `dnf install '
           'graphviz`; macOS: `brew install graphviz`) and the Python package `graphviz` '
           '(`pip install graphviz`)')


def _quote(s):
    return '"' + str(s).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def _shape_text(node):
    from tensorplay.fx.passes.shape_prop import _short_type
    meta = node.meta.get('tensor_meta', node.meta.get('val'))
    if isinstance(meta, (list, tuple)) and type(meta).__name__ != 'TensorMetadata':
        parts = [_short_type(m) for m in meta]
        return ', '.join(p for p in parts if p) or None
    return _short_type(meta) if meta is not None else None


def _label(node):
    lines = [node.name, f'{node.op}: {node._pretty_print_target(node.target)}']
    shape = _shape_text(node)
    if shape:
        lines.append(shape)
    return '\n'.join(lines)


def graph_to_dot(graph, name='graph', ignore_getattr=False, ignore_parameters_and_buffers=False):
    """DOT text for ``graph``: one box per node (filled by op kind, labelled with name,
    op and target, and shapes when known), one edge per input."""
    skip = set()
    if ignore_getattr or ignore_parameters_and_buffers:
        skip = {n for n in graph.nodes if n.op == 'get_attr'}
    lines = [f'digraph {_quote(name)} {{', '  rankdir=TB;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];']
    for n in graph.nodes:
        if n in skip:
            continue
        lines.append(f'  {_quote(n.name)} [label={_quote(_label(n))}, '
                     f'fillcolor={_quote(_COLORS[n.op])}];')
    for n in graph.nodes:
        for i in n._input_nodes:
            if i not in skip and n not in skip:
                lines.append(f'  {_quote(i.name)} -> {_quote(n.name)};')
    lines.append('}')
    return '\n'.join(lines) + '\n'


class DotGraph:
    """A graph's DOT text (``to_string()``) that renders itself through Graphviz:
    ``create_svg()`` / ``create('png')`` return bytes, ``write(path)`` (format from the
    extension), ``write_svg`` / ``write_png`` / ``write_pdf``."""

    def __init__(self, source):
        self.source = source

    def to_string(self):
        return self.source

    def create(self, format='svg'):
        if shutil.which('dot') is None:
            raise RuntimeError(_NO_DOT)
        try:
            import graphviz
        except ImportError:
            raise RuntimeError(_NO_DOT) from None
        return graphviz.Source(self.source).pipe(format=format)

    def create_svg(self):
        return self.create('svg')

    def write(self, path, format=None):
        fmt = format or os.path.splitext(str(path))[1].lstrip('.').lower() or 'svg'
        if fmt not in ('svg', 'png', 'pdf', 'dot', 'gv'):
            raise ValueError(f"draw: unsupported format '{fmt}' (svg, png, pdf or dot)")
        data = self.source.encode() if fmt in ('dot', 'gv') else self.create(fmt)
        with open(path, 'wb') as f:
            f.write(data)

    def write_svg(self, path):
        self.write(path, 'svg')

    def write_png(self, path):
        self.write(path, 'png')

    def write_pdf(self, path):
        self.write(path, 'pdf')


class FxGraphDrawer:
    """torch.fx's drawer: ``FxGraphDrawer(gm, 'name').get_dot_graph().write_svg(path)``;
    ``get_submod_dot_graph(name)`` and ``get_all_dot_graphs()`` draw the GraphModules
    nested in ``gm`` too."""

    def __init__(self, graph_module, name, ignore_getattr=False,
                 ignore_parameters_and_buffers=False, skip_node_names_in_args=True,
                 parse_stack_trace=False, dot_graph_shape=None, normalize_args=False):
        from tensorplay.fx.graph_module import GraphModule
        self._name = name
        self._dot_graphs = {name: DotGraph(graph_to_dot(
            graph_module.graph, name, ignore_getattr, ignore_parameters_and_buffers))}
        for node in graph_module.graph.nodes:
            if node.op == 'call_module':
                sub = graph_module.get_submodule(node.target)
                if isinstance(sub, GraphModule):
                    key = f'{name}_{node.target}'
                    self._dot_graphs[key] = DotGraph(graph_to_dot(
                        sub.graph, key, ignore_getattr, ignore_parameters_and_buffers))

    def get_dot_graph(self, submod_name=None):
        return self.get_main_dot_graph() if submod_name is None else \
            self.get_submod_dot_graph(submod_name)

    def get_main_dot_graph(self):
        return self._dot_graphs[self._name]

    def get_submod_dot_graph(self, submod_name):
        return self._dot_graphs[f'{self._name}_{submod_name}']

    def get_all_dot_graphs(self):
        return dict(self._dot_graphs)
