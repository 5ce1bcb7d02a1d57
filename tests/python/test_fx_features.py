"""tp.fx feature extraction (torchvision's semantics) and graph pictures."""
import shutil

import pytest

import tensorplay as tp
import tensorplay.fx
from tensorplay.fx.feature_extraction import create_feature_extractor, get_graph_node_names
from tensorplay.fx.passes import ShapeProp, split_module
from tensorplay.fx.passes.graph_drawer import FxGraphDrawer

nn = tp.nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out)) + x
        return self.relu(out)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(Block(4), Block(4))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.layer1(self.relu(self.bn1(self.conv1(x))))
        x = tp.flatten(self.avgpool(x), 1)
        if self.training:  # train and eval graphs differ
            x = x * 2
        return self.fc(x)


BLOCK = ['conv1', 'bn1', 'relu', 'conv2', 'bn2', 'add', 'relu_1']
EVAL_NAMES = (['x', 'conv1', 'bn1', 'relu'] + [f'layer1.{i}.{n}' for i in (0, 1) for n in BLOCK]
              + ['avgpool', 'flatten', 'fc'])


def test_get_graph_node_names_train_and_eval():
    model = Net()
    with pytest.warns(UserWarning, match='train mode'):
        train, eval_ = get_graph_node_names(model)
    assert eval_ == EVAL_NAMES
    assert train == EVAL_NAMES[:-1] + ['mul', 'fc']
    assert model.training  # the mode is restored


def test_create_feature_extractor_outputs_and_state_dict():
    tp.manual_seed(0)
    model = Net().eval()
    x = tp.randn(2, 3, 8, 8)
    body = create_feature_extractor(model, return_nodes={'layer1.0.add': 'mid', 'layer1': 'l1',
                                                         'fc': 'out'})
    body.eval()
    out = body(x)
    assert list(out) == ['mid', 'l1', 'out']
    stem = model.relu(model.bn1(model.conv1(x)))
    b0 = model.layer1[0]
    mid = b0.bn2(b0.conv2(b0.relu(b0.bn1(b0.conv1(stem))))) + stem
    assert tp.allclose(out['mid'], mid, atol=1e-6)
    assert tp.allclose(out['l1'], model.layer1(stem), atol=1e-6)
    assert tp.allclose(out['out'], model(x), atol=1e-6)
    sd, ref = body.state_dict(), model.state_dict()
    assert set(sd) == set(ref)
    assert all(tp.equal(sd[k], ref[k]) for k in sd)
    partial = create_feature_extractor(model, return_nodes=['layer1.0.relu'])
    assert set(partial.state_dict()) == {k for k in ref if k.startswith(('conv1', 'bn1', 'layer1.0.conv1', 'layer1.0.bn1'))}


def test_separate_train_and_eval_return_nodes():
    model = Net()
    body = create_feature_extractor(model, train_return_nodes=['mul'], eval_return_nodes=['flatten'],
                                    suppress_diff_warning=True)
    x = tp.randn(2, 3, 8, 8)
    assert list(body.train()(x)) == ['mul']
    assert list(body.eval()(x)) == ['flatten']
    with pytest.raises(ValueError, match="node: 'mul' is not present in model"):
        create_feature_extractor(model, return_nodes=['mul'])
    with pytest.raises(ValueError, match='should be specified'):
        create_feature_extractor(model)
    with pytest.raises(ValueError, match='both should be specified'):
        create_feature_extractor(model, train_return_nodes=['fc'])


def _traced():
    gm = tp.fx.symbolic_trace(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
    ShapeProp(gm).propagate(tp.randn(2, 8))
    return gm


def test_to_dot_colours_ops_and_labels_shapes():
    dot = _traced().graph.to_dot()
    assert dot.startswith('digraph "graph" {')
    assert '"input_1" [label="input_1\\nplaceholder: input\\nf32[2, 8]", fillcolor="#AED6F1"];' in dot
    assert '"_1" [label="_1\\ncall_module: 1\\nf32[2, 16]", fillcolor="#F5CBA7"];' in dot
    assert '"_0" -> "_1";' in dot and dot.count('->') == 4


@pytest.mark.skipif(shutil.which('dot') is None, reason="needs Graphviz's dot (apt-get install graphviz)")
def test_draw_writes_svg_png_pdf(tmp_path):
    gm = _traced()
    gm.graph.draw(tmp_path / 'g.svg')
    assert (tmp_path / 'g.svg').read_text().lstrip().startswith(('<?xml', '<svg'))
    gm.graph.draw(tmp_path / 'g.png')
    assert (tmp_path / 'g.png').read_bytes()[:4] == b'\x89PNG'
    gm.graph.draw(tmp_path / 'g.pdf')
    assert (tmp_path / 'g.pdf').read_bytes()[:4] == b'%PDF'
    split = split_module(gm, gm, lambda n: 0 if n.name == '_0' else 1)
    drawer = FxGraphDrawer(split, 'split')
    assert set(drawer.get_all_dot_graphs()) == {'split', 'split_submod_0', 'split_submod_1'}
    drawer.get_submod_dot_graph('submod_1').write_svg(tmp_path / 's.svg')
    assert b'<svg' in drawer.get_dot_graph().create_svg()


def test_draw_without_dot_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(RuntimeError, match='apt-get install graphviz'):
        _traced().graph.draw(tmp_path / 'g.svg')
    _traced().graph.draw(tmp_path / 'g.dot')  # the text needs no Graphviz
    assert (tmp_path / 'g.dot').read_text().startswith('digraph')
