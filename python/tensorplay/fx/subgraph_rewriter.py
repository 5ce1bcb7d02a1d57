"""Pattern rewriting: find every non-overlapping occurrence of a pattern graph in a
GraphModule's graph and splice in a replacement graph (``replace_pattern``)."""
import copy
from typing import NamedTuple

from tensorplay.fx.graph_module import GraphModule, _copy_attr
from tensorplay.fx.node import Node

__all__ = ['Match', 'ReplacedPatterns', 'replace_pattern', 'replace_pattern_with_filters',
           'SubgraphMatcher', 'InternalMatch']


class Match(NamedTuple):
    """One rewritten occurrence: ``anchor`` the pattern's node that produces its result,
    ``nodes_map`` from pattern nodes to the graph nodes (or values) they matched."""
    anchor: Node
    nodes_map: dict


class ReplacedPatterns(NamedTuple):
    """A Match plus the nodes the replacement added (``replace_pattern_with_filters``)."""
    anchor: Node
    nodes_map: dict
    replacements: list


class InternalMatch:
    """A match as filters see it: ``anchors`` (pattern outputs), ``nodes_map``,
    ``placeholder_nodes`` (graph values bound to the pattern's inputs, in order) and
    ``returning_nodes`` (graph nodes the pattern returns)."""

    def __init__(self, anchors, nodes_map, placeholder_nodes, returning_nodes):
        self.anchors = anchors
        self.nodes_map = nodes_map
        self.placeholder_nodes = placeholder_nodes
        self.returning_nodes = returning_nodes

    def __repr__(self):
        return f'InternalMatch(anchors={self.anchors}, returning_nodes={self.returning_nodes})'


def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in _flatten(e)]
    return [x]


class SubgraphMatcher:
    """Finds the occurrences of ``pattern`` (a Graph) in a graph: ops and targets equal,
    arguments matched position by position, each pattern input bound to one value, literal
    arguments equal (any literal with ``ignore_literals``); a match's inner nodes may not be
    read from outside it, and matches do not share nodes."""

    def __init__(self, pattern, ignore_literals=False):
        self.pattern = pattern
        self.ignore_literals = ignore_literals
        self.placeholders = [n for n in pattern.nodes if n.op == 'placeholder']
        out = [n for n in pattern.nodes if n.op == 'output']
        if len(out) != 1:
            raise ValueError('SubgraphMatcher: the pattern graph needs one output node')
        self.returning = [n for n in _flatten(out[0].args[0]) if isinstance(n, Node)]
        if not self.returning:
            raise ValueError('SubgraphMatcher: the pattern returns no node')

    def _match_value(self, pa, ga, state):
        if isinstance(pa, Node):
            if pa.op == 'placeholder':
                if pa in state:
                    return state[pa] is ga if isinstance(ga, Node) else state[pa] == ga
                state[pa] = ga
                return True
            return isinstance(ga, Node) and self._match_node(pa, ga, state)
        if isinstance(pa, (list, tuple)):
            return isinstance(ga, (list, tuple)) and len(pa) == len(ga) and \
                all(self._match_value(p, g, state) for p, g in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and \
                all(self._match_value(pa[k], ga[k], state) for k in pa)
        if isinstance(ga, Node):
            return False
        return self.ignore_literals or (type(pa) is type(ga) and pa == ga)

    def _match_node(self, pn, gn, state):
        if pn in state:
            return state[pn] is gn
        if pn.op != gn.op or gn in self._taken:
            return False
        if pn.op == 'get_attr':
            pass  # attributes are the pattern's constants: any get_attr stands for one
        elif pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or pn.kwargs.keys() != gn.kwargs.keys():
            return False
        state[pn] = gn
        return self._match_value(pn.args, gn.args, state) and \
            self._match_value(dict(pn.kwargs), dict(gn.kwargs), state)

    def match(self, graph):
        """The non-overlapping matches, in graph order of their anchors."""
        self._taken = set()
        matches = []
        anchor = self.returning[-1]
        for gn in graph.nodes:
            state = {}
            if not self._match_node(anchor, gn, state):
                continue
            if not self._match_rest(graph, state):
                continue
            inner = {p: g for p, g in state.items() if p.op != 'placeholder'}
            returning = [state[r] for r in self.returning]
            matched = set(inner.values())
            if any(u not in matched for g in matched if g not in returning for u in g.users):
                continue  # an inner value is read outside the match
            placeholders = [state.get(p) for p in self.placeholders]
            matches.append(InternalMatch(returning, state, placeholders, returning))
            self._taken |= matched
        return matches

    def _match_rest(self, graph, state):
        for r in self.returning[:-1]:
            if r in state:
                continue
            ok = False
            for gn in graph.nodes:
                trial = dict(state)
                if self._match_node(r, gn, trial):
                    state.update(trial)
                    ok = True
                    break
            if not ok:
                return False
        return True


def _as_graph(x):
    if isinstance(x, GraphModule):
        return x.graph, x
    from tensorplay.fx._symbolic_trace import symbolic_trace
    gm = symbolic_trace(x)
    return gm.graph, gm


def replace_pattern(gm, pattern, replacement):
    """Replaces each occurrence of ``pattern`` in ``gm`` with ``replacement`` (functions
    or GraphModules with the same inputs; they are traced) and recompiles ``gm``. Returns
    the Matches.

        def pattern(x, y):
            return tp.relu(x + y)
        def replacement(x, y):
            return tp.clamp(x + y, min=0)
        replace_pattern(gm, pattern, replacement)
    """
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map)
            for m in _replace(gm, pattern, replacement, None, False, None)]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None,
                                 ignore_literals=False, replacement_callback=None):
    """``replace_pattern`` where each match must pass every ``match_filters`` entry
    (``f(internal_match, original_graph, pattern_graph) -> bool``), literals may differ
    with ``ignore_literals``, and ``replacement_callback(match, original_graph,
    pattern_graph)`` may build each replacement graph. Returns ReplacedPatterns."""
    return _replace(gm, pattern, replacement, match_filters, ignore_literals,
                    replacement_callback)


def _replace(gm, pattern, replacement, match_filters, ignore_literals, replacement_callback):
    graph = gm.graph
    pattern_graph, _ = _as_graph(pattern)
    matcher = SubgraphMatcher(pattern_graph, ignore_literals=ignore_literals)
    matches = [m for m in matcher.match(graph)
               if all(f(m, graph, pattern_graph) for f in (match_filters or ()))]
    if replacement is None and replacement_callback is None:
        raise ValueError('replace_pattern: give a replacement or a replacement_callback')
    fixed = _as_graph(replacement) if replacement is not None else None
    results = []
    changed = {}
    for m in matches:
        if replacement_callback is not None:
            repl_graph, repl_mod = replacement_callback(m, graph, pattern_graph), None
            if isinstance(repl_graph, GraphModule):
                repl_graph, repl_mod = repl_graph.graph, repl_graph
        else:
            repl_graph, repl_mod = fixed
        repl_inputs = [n for n in repl_graph.nodes if n.op == 'placeholder']
        if len(repl_inputs) != len(m.placeholder_nodes):
            raise ValueError(f'replace_pattern: the pattern takes {len(m.placeholder_nodes)} '
                             f'inputs but the replacement takes {len(repl_inputs)}')
        # an input may be the output of a match already replaced: read its replacement
        val_map = {r: changed.get(v, v) if isinstance(v, Node) else v
                   for r, v in zip(repl_inputs, m.placeholder_nodes)}
        anchor = max(m.returning_nodes, key=lambda n: n._sort_key)
        before = set(graph.nodes)
        with graph.inserting_before(anchor):
            out = graph.graph_copy(repl_graph, val_map)
        added = [n for n in graph.nodes if n not in before]
        for n in added:
            if n.op in ('get_attr', 'call_module') and repl_mod is not None and \
                    not _has(gm, n.target):
                _copy_attr(repl_mod, gm, n.target)
        new_outs = _flatten(out) if isinstance(out, (list, tuple)) else [out]
        if len(new_outs) != len(m.returning_nodes):
            raise ValueError(f'replace_pattern: the pattern returns {len(m.returning_nodes)} '
                             f'values but the replacement returns {len(new_outs)}')
        for old, new in zip(m.returning_nodes, new_outs):
            old.replace_all_uses_with(new)
            changed[old] = new
        inner = [g for p, g in m.nodes_map.items() if p.op != 'placeholder']
        for g in sorted(inner, key=lambda n: n._sort_key, reverse=True):
            if not g.users:
                graph.erase_node(g)
        results.append(ReplacedPatterns(anchor=matcher.returning[-1], nodes_map=copy.copy(m.nodes_map),
                                        replacements=added))
    gm.recompile()
    return results


def _has(mod, path):
    for atom in path.split('.'):
        if not hasattr(mod, atom):
            return False
        mod = getattr(mod, atom)
    return True
