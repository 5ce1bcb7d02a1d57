"""Op-level capture (make_fx / tp.graph.make_graph): graphs of tp.ops.aten overloads with
fake-tensor metadata, compared with torch's make_fx by op name."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

import tensorplay as tp
import tensorplay.graph
from tensorplay._ops import OpOverload
from tensorplay._subclasses.fake_tensor import FakeTensor
from tensorplay.fx.experimental.proxy_tensor import make_fx


def _pointwise(lib, x, y):
    return (lib.relu(x) + y * 2).exp().neg(), lib.sigmoid(x) * lib.tanh(y)


def _shapes(lib, x, y):
    return x.t().mm(y), x.transpose(0, 1).clone().abs(), y.view(2, 8).unsqueeze(0)


def _linear(lib, x, y):
    return lib.nn.functional.linear(x, y, y[0]).sum()


def _ops(gm):
    return [(n.op, n.target.overloadpacket.__name__ if n.op == 'call_function' else n.target)
            for n in gm.graph.nodes if n.op != 'output']


@pytest.mark.parametrize('fn', [_pointwise, _shapes, _linear])
def test_same_ops_as_torch_make_fx(fn):
    xt, yt = torch.randn(4, 4), torch.randn(4, 4)
    theirs = torch_make_fx(lambda x, y: fn(torch, x, y))(xt, yt)
    x, y = tp.tensor(xt.numpy()), tp.tensor(yt.numpy())
    ours = make_fx(lambda x, y: fn(tp, x, y))(x, y)
    assert _ops(ours) == _ops(theirs)
    assert [n.name for n in ours.graph.nodes] == [n.name for n in theirs.graph.nodes]
    want = fn(tp, x, y)
    got = ours(x, y)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple)
                    else (want,)):
        assert tp.allclose(g, w, atol=1e-6)


def test_every_node_has_fake_metadata_and_module_params_are_constants():
    model = tp.nn.Sequential(tp.nn.Linear(8, 16), tp.nn.GELU(), tp.nn.Linear(16, 2))
    gm = tp.graph.make_graph(model)(tp.randn(5, 8))
    for n in gm.graph.nodes:
        if n.op == 'call_function':
            assert isinstance(n.target, OpOverload) and n.target.namespace == 'aten'
        if n.op != 'output':
            assert isinstance(n.meta['val'], FakeTensor), n
    assert [n.target for n in gm.graph.nodes if n.op == 'get_attr'] == [
        '_param_constant0', '_param_constant1', '_param_constant2', '_param_constant3']
    out = [n for n in gm.graph.nodes if n.op == 'output'][0].args[0]
    assert tuple(out.meta['val'].shape) == (5, 2)
    x = tp.randn(5, 8)
    assert tp.allclose(gm(x), model(x), atol=1e-6)
    assert 'tensorplay.ops.aten.addmm.default' in gm.code


def test_fake_inputs_and_multi_output_ops():
    gm = make_fx(lambda x: x.max(dim=1), tracing_mode='fake')(tp.randn(3, 4))
    names = [n.name for n in gm.graph.nodes]
    assert names == ['x_1', 'max_1', 'getitem', 'getitem_1', 'output']
    vals, idx = gm(tp.tensor([[1.0, 3.0], [4.0, 2.0]]))
    assert vals.tolist() == [3.0, 4.0] and idx.tolist() == [1, 0]
    with pytest.raises(ValueError, match="tracing_mode must be"):
        make_fx(lambda x: x, tracing_mode='symbolic')
