"""tp.fx.passes: PassManager, DeadCodeElimination, CSE, ConstFold, ShapeProp (fake
tensors), Normalize, FusionGroups, each on graphs built to exercise it."""
import operator

import pytest

import tensorplay as tp
import tensorplay.fx
from tensorplay._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from tensorplay.fx.passes import (CSE, ConstFold, DeadCodeElimination, FusionGroups, Normalize,
                                  PassBase, PassManager, PassResult, ShapeProp, fusion_groups)


class _DropOneNegPair(PassBase):
    """Removes one neg(neg(x)) per call."""

    def call(self, gm):
        for n in gm.graph.nodes:
            if n.target is operator.neg and n.args[0].target is operator.neg:
                inner = n.args[0]
                n.replace_all_uses_with(inner.args[0])
                gm.graph.erase_node(n)
                gm.graph.erase_node(inner)
                return PassResult(gm, True)
        return PassResult(gm, False)


def _negs(x):
    return -(-(-(-(-(-x)))))


def test_pass_manager_once_and_to_fixed_point():
    gm = tp.fx.symbolic_trace(_negs)
    res = PassManager([_DropOneNegPair()])(gm)
    assert res.modified and sum(n.target is operator.neg for n in gm.graph.nodes) == 4
    gm = tp.fx.symbolic_trace(_negs)
    res = PassManager([_DropOneNegPair()], steps=None, run_checks_after_each_pass=True)(gm)
    assert res.modified and sum(n.target is operator.neg for n in gm.graph.nodes) == 0
    assert tp.equal(res.graph_module(tp.arange(3.0)), tp.arange(3.0))
    assert not PassManager([_DropOneNegPair()], steps=None)(res.graph_module).modified


def test_pass_manager_checks_the_graph_after_each_pass():
    def breaks_order(gm):
        nodes = list(gm.graph.nodes)
        nodes[1].prepend(nodes[2])  # a user moved before its input
        return PassResult(gm, True)
    gm = tp.fx.symbolic_trace(_negs)
    with pytest.raises(RuntimeError, match='after pass breaks_order.*used before it has been defined'):
        PassManager([breaks_order], run_checks_after_each_pass=True)(gm)
    with pytest.raises(RuntimeError, match='constraint'):
        PassManager([DeadCodeElimination()], constraints=[lambda m: False],
                    run_checks_after_each_pass=True)(tp.fx.symbolic_trace(_negs))


def test_dead_code_elimination_keeps_side_effects():
    def f(x):
        unused = x * 2  # noqa: F841
        y = x.clone()
        y.add_(1)  # in place: kept
        tp._assert(x.sum() > -1, 'ok')
        return y
    gm = tp.fx.symbolic_trace(f)
    assert DeadCodeElimination()(gm).modified
    kinds = [n.target if isinstance(n.target, str) else n.target.__name__ for n in gm.graph.nodes]
    assert 'mul' not in kinds and 'add_' in kinds and '_assert' in kinds
    assert tp.equal(gm(tp.ones(2)), tp.full((2,), 2.0))
    assert not DeadCodeElimination()(gm).modified


def test_cse_merges_pure_duplicates_only():
    def f(x):
        a = tp.relu(x) + tp.relu(x)
        b = x.sum(dim=0) * x.sum(dim=0)
        c = x.sum(dim=1)  # differs by an argument
        r = tp.rand_like(x) + tp.rand_like(x)  # random: never merged
        return a, b, c, r, x * 0.0, x * -0.0
    gm = tp.fx.symbolic_trace(f)
    assert CSE()(gm).modified
    names = [n.name for n in gm.graph.nodes]
    assert 'relu_1' not in names and 'sum_2' not in names and 'sum_3' in names
    assert 'rand_like_1' in names and 'mul_2' in names
    x = tp.randn(3, 4)
    out = gm(x)
    assert tp.equal(out[0], 2 * tp.relu(x)) and tp.allclose(out[1], x.sum(0) ** 2)


def test_const_fold_folds_parameter_only_subgraphs():
    class M(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = tp.nn.Parameter(tp.randn(4, 4))
            self.b = tp.nn.Parameter(tp.randn(4))

        def forward(self, x):
            return x @ (self.w.t() * 2) + self.b.exp()
    m = M()
    gm = tp.fx.symbolic_trace(m)
    x = tp.randn(3, 4)
    want = m(x)
    assert ConstFold()(gm).modified
    targets = [n.target for n in gm.graph.nodes if n.op == 'get_attr']
    assert targets == ['_fx_const_folded_attrs_0', '_fx_const_folded_attrs_1']
    assert all(n.op != 'call_method' for n in gm.graph.nodes)
    assert tp.allclose(gm(x), want)
    assert not ConstFold()(gm).modified


def test_shape_prop_runs_on_fake_tensors():
    model = tp.nn.Sequential(tp.nn.Linear(4096, 8192), tp.nn.ReLU(), tp.nn.Linear(8192, 10))
    gm = tp.fx.symbolic_trace(model)
    with FakeTensorMode() as mode:
        x = tp.empty(100_000, 4096)  # 1.6 GB if it were real
    out = ShapeProp(gm, fake_mode=mode).propagate(x)
    assert isinstance(out, FakeTensor) and tuple(out.shape) == (100_000, 10)
    metas = {n.name: n.meta['tensor_meta'] for n in gm.graph.nodes if n.op != 'output'}
    assert tuple(metas['_1'].shape) == (100_000, 8192) and metas['_1'].dtype == tp.float32
    assert all(isinstance(n.meta['val'], FakeTensor) for n in gm.graph.nodes)
    # real inputs are replaced by fake ones: nothing is computed
    small = tp.fx.symbolic_trace(tp.nn.Sequential(tp.nn.Linear(3, 5)))
    ShapeProp(small).propagate(tp.randn(2, 3))
    node = small.graph.find_nodes(op='call_module', target='0')[0]
    assert isinstance(node.meta['val'], FakeTensor) and node.meta['tensor_meta'].stride == (5, 1)
    assert 'f32[2, 5]' in small.print_readable(print_output=False)


def test_normalize_uses_schemas_and_signatures():
    g = tp.fx.Graph()
    x = g.placeholder('x')
    a = g.call_function(tp.ops.aten.add.Tensor, (x, x), {'alpha': 2})
    b = g.call_function(tp.nn.functional.softmax, (a, 0))
    c = g.call_function(operator.mul, (b, 3))
    g.output(c)
    gm = tp.fx.GraphModule(tp.nn.Module(), g)
    x_ = tp.randn(4)
    want = gm(x_)
    assert Normalize()(gm).modified
    assert a.args == () and a.kwargs == {'self': x, 'other': x, 'alpha': 2}
    assert b.args == () and b.kwargs == {'input': a, 'dim': 0}
    assert c.args == (b, 3)  # operators keep positions
    gm.recompile()
    assert tp.allclose(gm(x_), want)
    mm = tp.fx.symbolic_trace(tp.nn.Sequential(tp.nn.Linear(2, 2)))
    Normalize()(mm)
    assert mm.graph.find_nodes(op='call_module', target='0')[0].kwargs.keys() == {'input'}


def test_fusion_groups_pointwise_chains_without_cycles():
    def f(x, w):
        a = tp.relu(x) * 2 + 1        # one group: relu, mul, add
        b = a @ w                     # not pointwise
        c = tp.sigmoid(b) - a         # sub reads a, but a -> mm -> sigmoid -> sub: no merge
        return c.sum(), c.tanh()
    gm = tp.fx.symbolic_trace(f)
    groups = [[n.name for n in g] for g in fusion_groups(gm.graph)]
    assert groups == [['relu', 'mul', 'add'], ['sigmoid', 'sub', 'tanh']]
    p = FusionGroups()
    assert not p(gm).modified
    assert gm.graph.find_nodes(op='call_method', target='tanh')[0].meta['fusion_group'] == 1
    # shape arithmetic is not pointwise once ShapeProp says it yields ints
    def g(x):
        return x.view(x.size(0) * 2, -1).relu()
    gm = tp.fx.symbolic_trace(g)
    ShapeProp(gm).propagate(tp.randn(4, 6))
    assert fusion_groups(gm.graph) == []
