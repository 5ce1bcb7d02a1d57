"""tp.fx core: the same programs traced with torch.fx and tp.fx give the same graphs and
code; GraphModule, Interpreter and Transformer run them as eager does; graph edits."""
import copy
import math
import operator
import pickle
import re

import pytest
import torch
import torch.fx

import tensorplay as tp
import tensorplay.fx
from tensorplay.fx.proxy import TraceError


# ---- the same models, written once against either library

def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))
    return MLP()


def cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x))) + x

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.layers = nn.Sequential(Block(8), Block(8))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            x = F.max_pool2d(self.stem(x), 2)
            x = self.pool(self.layers(x))
            return self.head(lib.flatten(x, 1))
    return CNN()


def gpt_block(lib, d=16, heads=2, T=8):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.n_head = heads
            self.register_buffer('bias', lib.tril(lib.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, T_, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T_, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T_, C)
            return self.c_proj(y)

    class MLPBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * d, d)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = MLPBlock()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
    return Block()


def shared(lib):
    nn = lib.nn

    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.seq = nn.Sequential(self.lin, nn.Tanh())
            self.w = nn.Parameter(lib.ones(4))

        def forward(self, x):
            return self.lin(self.seq(x)) * self.w + self.w.sum()
    return Shared()


def method_heavy(x, y):
    z = x.t().contiguous().view(-1).unsqueeze(0)
    z = z.expand(3, -1).sum(dim=0, keepdim=True).mul(2).add_(1)
    w = y.reshape(2, -1).permute(1, 0).flatten().abs().clamp(min=0.5)
    return z.squeeze(0)[:4] - w[1::3].neg(), x.shape[0], x.size(1), x.dtype


def _fx(lib):
    return torch.fx if lib is torch else tp.fx


def _target_name(node):
    t = node.target
    if isinstance(t, str):
        return t
    return torch.fx.node._get_qualified_name(t) if not getattr(t, '__module__', '').startswith(
        'tensorplay') else tp.fx.node._get_qualified_name(t)


def _summary(gm):
    return [(n.name, n.op, _target_name(n).replace('tensorplay', 'torch')) for n in gm.graph.nodes]


MODELS = {'mlp': mlp, 'cnn': cnn, 'gpt_block': gpt_block, 'shared': shared}


@pytest.mark.parametrize('name', list(MODELS))
def test_same_graph_and_code_as_torch_fx(name):
    make = MODELS[name]
    theirs = torch.fx.symbolic_trace(make(torch))
    ours = tp.fx.symbolic_trace(make(tp))
    assert _summary(ours) == _summary(theirs)
    assert ours.code == theirs.code.replace('torch', 'tensorplay')
    assert str(ours.graph) == str(theirs.graph).replace('torch', 'tensorplay')
    assert type(ours).__name__ == type(theirs).__name__


def test_function_trace_matches_torch_fx():
    theirs = torch.fx.symbolic_trace(method_heavy)
    ours = tp.fx.symbolic_trace(method_heavy)
    assert _summary(ours) == _summary(theirs)
    assert ours.code == theirs.code.replace('torch', 'tensorplay')
    x, y = tp.randn(3, 4), tp.randn(4, 3)
    got, want = ours(x, y), method_heavy(x, y)
    assert tp.equal(got[0], want[0]) and got[1:] == want[1:]


def test_print_readable_matches_torch_fx():
    theirs = torch.fx.symbolic_trace(gpt_block(torch)).print_readable(print_output=False)
    ours = tp.fx.symbolic_trace(gpt_block(tp)).print_readable(print_output=False)
    assert ours == theirs.replace('torch', 'tensorplay')


@pytest.mark.parametrize('name', list(MODELS))
def test_graph_module_interpreter_transformer_equal_eager(name):
    tp.manual_seed(0)
    model = MODELS[name](tp).eval()
    x = tp.randn(2, 3, 8, 8) if name == 'cnn' else tp.randn(2, 8, 16) if name == 'gpt_block' \
        else tp.randn(3, 8) if name == 'mlp' else tp.randn(3, 4)
    want = model(x)
    gm = tp.fx.symbolic_trace(model)
    assert tp.allclose(gm(x), want)
    assert tp.allclose(tp.fx.Interpreter(gm).run(x), want)
    assert tp.allclose(tp.fx.Transformer(gm).transform()(x), want)
    assert tp.allclose(copy.deepcopy(gm)(x), want)
    assert tp.allclose(pickle.loads(pickle.dumps(gm))(x), want)


def test_control_flow_raises_trace_error_with_user_line():
    def f(x):
        if x.sum() > 0:  # the line the error names
            return x
        return -x
    with pytest.raises(TraceError, match='cannot be used as inputs to control flow') as e:
        tp.fx.symbolic_trace(f)
    assert 'if x.sum() > 0:  # the line the error names' in str(e.value)
    assert 'test_fx.py' in str(e.value)
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(f)

    def g(x):
        return [y for y in x]
    with pytest.raises(TraceError, match='cannot be iterated'):
        tp.fx.symbolic_trace(g)


@pytest.mark.parametrize('concrete', [{'flag': True}, {'flag': True, 'y': None}])
def test_concrete_args_match_torch_fx(concrete):
    def f(x, flag=False, y=None):
        if flag:
            return x.relu()
        return x + 1
    theirs = torch.fx.symbolic_trace(f, concrete_args=concrete)
    ours = tp.fx.symbolic_trace(f, concrete_args=concrete)
    assert _summary(ours) == _summary(theirs)
    assert ours.code == theirs.code.replace('torch', 'tensorplay')
    x = tp.randn(4)
    assert tp.equal(ours(x, True), x.relu())
    with pytest.raises(AssertionError, match='flag has been specialized'):
        ours(x, False)


def test_varargs_match_torch_fx():
    def h(x, *args, **kw):
        return x + args[0] * kw['s']
    theirs = torch.fx.symbolic_trace(h)
    ours = tp.fx.symbolic_trace(h)
    assert ours.code == theirs.code.replace('torch', 'tensorplay')
    assert tp.equal(ours(tp.ones(2), tp.ones(2), s=3), tp.full((2,), 4.0))


def clamp_rows(x):
    return x[:2] if len(x) > 2 else x


def test_autowrap_functions_and_leaf_modules():
    def f(x):
        return clamp_rows(x) + 1
    for lib in (torch, tp):
        gm = _fx(lib).GraphModule(
            lib.nn.Module(), _fx(lib).Tracer(autowrap_functions=(clamp_rows,)).trace(f))
        targets = [n.target for n in gm.graph.nodes if n.op == 'call_function']
        assert targets[0] is clamp_rows
    assert tp.equal(gm(tp.ones(4, 2)), tp.full((2, 2), 2.0))

    class NoLeaves(tp.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False
    g = NoLeaves().trace(mlp(tp))
    ops = [(n.op, _target_name(n)) for n in g.nodes]
    assert ('call_module', 'fc1') not in ops
    assert ('get_attr', 'fc1.weight') in ops and \
        ('call_function', 'tensorplay.nn.functional.linear') in ops


def test_param_shapes_constant():
    class M(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = tp.nn.Parameter(tp.ones(3, 5))

        def forward(self, x):
            return x.view(-1, self.w.shape[0]) @ self.w
    g = tp.fx.Tracer(param_shapes_constant=True).trace(M())
    assert not any(n.target is getattr for n in g.nodes)
    g2 = tp.fx.Tracer().trace(M())
    assert any(n.target is getattr for n in g2.nodes)


def test_wrap_records_one_call():
    gm = tp.fx.symbolic_trace(_uses_wrapped)
    fn_nodes = [n for n in gm.graph.nodes if n.op == 'call_function']
    assert fn_nodes[0].target is _wrapped_helper and fn_nodes[0].meta.get('is_wrapped')
    assert re.search(r"tensorplay.fx._symbolic_trace.wrap\(\"\w*_wrapped_helper\"\)", gm.code)
    assert tp.equal(gm(tp.ones(3)), tp.full((3,), 4.0))


def _wrapped_helper(x, n):
    return x * n if n > 1 else x  # a Python branch: must not be traced into


tp.fx.wrap('_wrapped_helper')


def _uses_wrapped(x):
    return _wrapped_helper(x, 3) + 1


# ---- editing

def _small_graph():
    g = tp.fx.Graph()
    x = g.placeholder('x')
    a = g.call_function(tp.relu, (x,))
    b = g.call_method('mul', (a, 2))
    g.output(b)
    return g, x, a, b


def test_edits_and_clear_errors():
    g, x, a, b = _small_graph()
    with pytest.raises(RuntimeError, match='still had 1 users'):
        g.erase_node(a)
    other, *_ = _small_graph()
    with pytest.raises(RuntimeError, match='another graph'):
        with g.inserting_before(next(iter(other.nodes))):
            pass
    with pytest.raises(RuntimeError, match='cycle'):
        a.replace_all_uses_with(b)  # b reads a: b would read itself through a
    with g.inserting_after(a):
        n = g.call_function(tp.neg, (a,))
    # the usual rewrite: every user of a but the new node reads the new node
    assert a.replace_all_uses_with(n, delete_user_cb=lambda u: u is not n) == [b]
    g.lint()
    assert [m.name for m in g.nodes] == ['x', 'relu', 'neg', 'mul', 'output']
    assert b.args == (n, 2) and list(n.users) == [b]
    gm = tp.fx.GraphModule(tp.nn.Module(), g)
    assert tp.equal(gm(tp.tensor([-1.0, 2.0])), tp.tensor([0.0, -4.0]))
    # output() replaces the output
    g.output(n)
    assert len(g.find_nodes(op='output')) == 1 and g.find_nodes(op='output')[0].args == (n,)
    assert g.eliminate_dead_code()
    assert [m.name for m in g.nodes] == ['x', 'relu', 'neg', 'output']
    gm.recompile()
    assert tp.equal(gm(tp.tensor([-1.0, 2.0])), tp.tensor([0.0, -2.0]))


def test_replace_all_uses_with_propagate_meta_and_node_api():
    g, x, a, b = _small_graph()
    a.meta['tag'] = 1
    with g.inserting_before(a):
        c = g.call_function(tp.abs, (x,))
    assert c.next is a and a.prev is c
    a.replace_all_uses_with(c, propagate_meta=True)
    assert c.meta == {'tag': 1} and b.args[0] is c and not a.users
    with pytest.raises(RuntimeError, match='already has .meta'):
        a.replace_all_uses_with(c, propagate_meta=True)
    g.erase_node(a)
    assert c.format_node() == ('%abs_1 : [num_users=1] = call_function[target=tensorplay.abs]'
                               '(args = (%x,), kwargs = {})')
    assert g.find_nodes(op='call_function', target=tp.abs) == [c]
    assert g.find_nodes(op='call_function', target=tp.relu) == []
    with pytest.raises(TypeError, match='does not support mutation'):
        b.args[0].kwargs['k'] = 1
    b.update_arg(1, 5)
    b.update_kwarg('k', None)
    assert b.args == (c, 5) and b.kwargs == {'k': None}


def test_graph_copy_python_code_and_deepcopy():
    gm = tp.fx.symbolic_trace(mlp(tp))
    g2 = tp.fx.Graph()
    val_map = {}
    out = g2.graph_copy(gm.graph, val_map)
    g2.output(out)
    assert [n.name for n in g2.nodes] == [n.name for n in gm.graph.nodes]
    pc = gm.graph.python_code('self')
    assert pc.src == gm.code and 'tensorplay' in pc.globals
    g3 = copy.deepcopy(gm.graph)
    assert str(g3) == str(gm.graph) and next(iter(g3.nodes)) is not next(iter(gm.graph.nodes))
    gm.graph.lint()


def test_submodules_and_get_attr():
    gm = tp.fx.symbolic_trace(cnn(tp))
    paths = [n.target for n in gm.graph.nodes if n.op == 'call_module']
    assert paths[:3] == ['stem', 'layers.0.conv', 'layers.0.bn']
    assert gm.add_submodule('extra.deep', tp.nn.ReLU())
    assert isinstance(gm.extra.deep, tp.nn.ReLU)
    assert gm.delete_submodule('extra.deep') and not gm.delete_submodule('extra.deep')
    assert not gm.delete_submodule('nope.x')
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, 'extra')
    with gm.graph.inserting_before(next(iter(gm.graph.nodes)).next):
        with pytest.warns(UserWarning, match='no underlying reference'):
            gm.graph.get_attr('missing')
    with pytest.raises(RuntimeError, match='nonexistent attribute'):
        gm.graph.lint()


def test_shared_module_uses_first_path_and_keeps_state_dict():
    model = shared(tp)
    gm = tp.fx.symbolic_trace(model)
    assert [n.target for n in gm.graph.nodes if n.op == 'call_module'] == ['lin', 'seq.1', 'lin']
    assert gm.lin is model.lin and gm.w is model.w
    x = tp.randn(2, 4)
    assert tp.allclose(gm(x), model(x))


def test_stack_traces_and_tabular(capsys):
    tracer = tp.fx.Tracer()
    tracer.record_stack_traces = True
    g = tracer.trace(mlp(tp))
    fc1 = g.find_nodes(op='call_module', target='fc1')[0]
    assert 'test_fx.py' in fc1.stack_trace and 'self.fc1(x)' in fc1.stack_trace
    gm = tp.fx.GraphModule(tracer.root, g)
    assert '# File: ' in gm.print_readable(print_output=False)
    g.print_tabular()
    assert 'call_module' in capsys.readouterr().out


def test_interpreter_override_and_errors():
    gm = tp.fx.symbolic_trace(mlp(tp))

    class NegRelu(tp.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            out = super().call_function(target, args, kwargs)
            return -out if target is tp.relu else out
    x = tp.randn(2, 8)
    m = gm
    want = m.fc2(-tp.relu(m.fc1(x)))
    assert tp.allclose(NegRelu(gm).run(x), want)
    with pytest.raises(RuntimeError, match='Expected positional argument for parameter x'):
        tp.fx.Interpreter(gm).run()

    class ReluToSigmoid(tp.fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(tp.sigmoid if target is tp.relu else target, args, kwargs)
    new = ReluToSigmoid(gm).transform()
    assert tp.allclose(new(x), m.fc2(tp.sigmoid(m.fc1(x))))
    assert 'tensorplay.sigmoid' in new.code


def test_graph_alias_module():
    import tensorplay.graph
    from tensorplay.graph import symbolic_trace
    from tensorplay.graph.proxy import TraceError as TE
    assert tensorplay.graph is tp.fx and symbolic_trace is tp.fx.symbolic_trace and TE is TraceError
    assert tp.graph is tp.fx


def test_proxy_operators_record_calls():
    def f(x):
        return (-x + 1) * 2 / x, 3 - x, x ** 2, x[0], x.T
    theirs = torch.fx.symbolic_trace(f)
    ours = tp.fx.symbolic_trace(f)
    assert _summary(ours) == _summary(theirs)
    assert ours.code == theirs.code.replace('torch', 'tensorplay')
    assert operator.neg in [n.target for n in ours.graph.nodes]


def test_child_cache_follows_replacements():
    model = mlp(tp)
    gm = tp.fx.symbolic_trace(model)
    x = tp.randn(2, 8)
    new_fc2 = tp.nn.Linear(16, 4)
    gm.fc2 = new_fc2  # Module.__setattr__: the generated forward must see the new child
    assert tp.allclose(gm(x), new_fc2(tp.relu(model.fc1(x))))
    gm.add_module('fc1', tp.nn.Linear(8, 16))
    assert gm.fc1 is not model.fc1 and gm.fc1 is gm._modules['fc1']
    del gm.fc2
    with pytest.raises(AttributeError):
        gm(x)
    gm.recompile()
    assert gm.train is not None and callable(gm.train)  # children never shadow methods


def test_erasing_while_iterating():
    gm = tp.fx.symbolic_trace(lambda x: ((x + 1) * 2 - 3).relu())
    seen = []
    for n in gm.graph.nodes:
        seen.append(n.name)
        if n.name == 'add':  # erase the node after the current one, and the current one
            mul = n.next
            mul.replace_all_uses_with(n)
            gm.graph.erase_node(mul)
        if n.name == 'sub':
            n.replace_all_uses_with(n.args[0])
            gm.graph.erase_node(n)
    assert seen == ['x', 'add', 'sub', 'relu', 'output']
    gm.graph.lint()
    gm.recompile()
    assert tp.equal(gm(tp.tensor([-2.0, 1.0])), tp.tensor([0.0, 2.0]))
    with pytest.raises(ValueError, match='was erased'):
        next(iter(gm.graph.nodes)).append(mul)
