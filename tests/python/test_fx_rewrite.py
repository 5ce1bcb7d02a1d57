"""tp.fx pattern rewriting and split_module, against torch.fx on the same programs."""
import pytest
import torch
import torch.fx
from torch.fx.passes.split_module import split_module as torch_split_module

import tensorplay as tp
import tensorplay.fx
from tensorplay.fx.passes.split_module import split_module
from tensorplay.fx.subgraph_rewriter import replace_pattern_with_filters


def _program(lib):
    def f(x, y):
        a = lib.relu(x + y)
        b = lib.relu(a + 1.0)
        c = lib.relu(b + y) * 2
        return c - a
    return f


def _pattern(lib):
    def pattern(u, v):
        return lib.relu(u + v)
    return pattern


def _replacement(lib):
    def replacement(u, v):
        return lib.clamp(lib.add(u, v), min=0.0)
    return replacement


def _names(gm):
    return [(n.name, n.op, str(n.target if isinstance(n.target, str) else n.target.__name__))
            for n in gm.graph.nodes]


def test_replace_pattern_matches_torch_fx():
    results = {}
    for lib, fx in ((torch, torch.fx), (tp, tp.fx)):
        gm = fx.symbolic_trace(_program(lib))
        matches = fx.replace_pattern(gm, _pattern(lib), _replacement(lib))
        results[lib] = (gm, matches)
    (tgm, tm), (ogm, om) = results[torch], results[tp]
    assert len(om) == len(tm) == 3
    assert [m.anchor.name for m in om] == [m.anchor.name for m in tm]
    assert _names(ogm) == _names(tgm)
    assert ogm.code == tgm.code.replace('torch', 'tensorplay')
    x, y = tp.randn(5), tp.randn(5)
    assert tp.allclose(ogm(x, y), _program(tp)(x, y))
    ogm.graph.lint()


def test_replace_pattern_keeps_inner_values_read_elsewhere():
    def f(x):
        s = x + 1
        return tp.relu(s), s  # s is read outside the pattern's output
    def pattern(x):
        return tp.relu(x + 1)
    def repl(x):
        return tp.sigmoid(x)
    gm = tp.fx.symbolic_trace(f)
    assert tp.fx.replace_pattern(gm, pattern, repl) == []
    assert 'relu' in gm.code


def test_replace_pattern_with_filters_and_literals():
    gm = tp.fx.symbolic_trace(_program(tp))
    # only matches whose second input is a graph input
    def second_input_is_y(m, g, p):
        return getattr(m.placeholder_nodes[1], 'op', None) == 'placeholder'
    res = replace_pattern_with_filters(gm, _pattern(tp), _replacement(tp),
                                       match_filters=[second_input_is_y])
    assert len(res) == 2 and all(r.replacements for r in res)
    assert sum(n.target is tp.relu for n in gm.graph.nodes) == 1

    def lit_program(x):
        return x * 2 + x * 3
    def lit_pattern(x):
        return x * 2
    def lit_repl(x):
        return x + x
    gm = tp.fx.symbolic_trace(lit_program)
    assert len(replace_pattern_with_filters(gm, lit_pattern, lit_repl)) == 1
    gm = tp.fx.symbolic_trace(lit_program)
    assert len(replace_pattern_with_filters(gm, lit_pattern, lit_repl, ignore_literals=True)) == 2


class _Net:
    @staticmethod
    def make(lib):
        nn = lib.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 4)
                self.l2 = nn.Linear(4, 4)
                self.p = nn.Parameter(lib.ones(4))

            def forward(self, x, y):
                a = self.l1(x) + self.p
                b = lib.relu(a)
                c = self.l2(b) + y
                return c * a, b
        return Net()


def _split(node):
    return 0 if node.name in ('l1', 'p', 'add') else 1 if node.name == 'relu' else 2


def test_split_module_matches_torch_fx():
    tmod = _Net.make(torch)
    omod = _Net.make(tp)
    tgm, ogm = torch.fx.symbolic_trace(tmod), tp.fx.symbolic_trace(omod)
    tq, oq = {}, {}
    tsplit = torch_split_module(tgm, tmod, _split, tq)
    osplit = split_module(ogm, omod, _split, oq)
    assert osplit.code == tsplit.code.replace('torch', 'tensorplay')
    for name in ('submod_0', 'submod_1', 'submod_2'):
        assert getattr(osplit, name).code == getattr(tsplit, name).code.replace('torch', 'tensorplay')
    assert oq == tq
    x, y = tp.randn(3, 4), tp.randn(3, 4)
    want = omod(x, y)
    got = osplit(x, y)
    assert tp.allclose(got[0], want[0]) and tp.allclose(got[1], want[1])
