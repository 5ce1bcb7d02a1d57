"""tp.func transforms against torch.func (PyTorch 2.13) on the same inputs: vmap (nesting,
pytrees, in_dims/out_dims, chunk_size, randomness, errors), grad/grad_and_value/vjp/jvp/
linearize/jacrev/jacfwd/hessian and their compositions, functional_call,
stack_module_state, replace_all_batch_norm_modules_, functionalize, and PyTorch's
per-sample-gradient and model-ensembling tutorials with torch renamed to tensorplay."""
import re
import warnings

import numpy as np
import pytest
import torch
import torch.func as TF

import tensorplay as tp
import tensorplay.func as F
from tensorplay.fx.experimental.proxy_tensor import make_fx


def _np(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_np(v) for v in x)
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if hasattr(x, 'detach'):
        return np.asarray(x.detach().numpy())
    return np.asarray(x)


def _same(a, b, tol=1e-5):
    a, b = _np(a), _np(b)
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _same(a[k], b[k], tol)
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, tol)
    else:
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _pair(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype('float32')
    return tp.tensor(x), torch.tensor(x)


# ---------------------------------------------------------------------------- vmap
def test_vmap_pytrees_in_dims_out_dims_and_nesting():
    x, tx = _pair(3, 4)
    y, ty = _pair(4, 3, seed=1)

    def f(lib):
        return lambda d, s: {'sum': d['a'] * s + d['b'].sum(), 'pair': (d['a'].exp(), s)}
    ours = F.vmap(f(tp), in_dims=({'a': 0, 'b': None}, 1), out_dims={'sum': 1, 'pair': (0, None)})
    theirs = TF.vmap(f(torch), in_dims=({'a': 0, 'b': None}, 1),
                     out_dims={'sum': 1, 'pair': (0, None)})
    with pytest.raises(ValueError):  # out_dims None for a batched output
        ours({'a': x, 'b': y}, y)
    ours = F.vmap(f(tp), in_dims=({'a': 0, 'b': None}, 1), out_dims={'sum': 1, 'pair': (0, 0)})
    theirs = TF.vmap(f(torch), in_dims=({'a': 0, 'b': None}, 1), out_dims={'sum': 1, 'pair': (0, 0)})
    _same(ours({'a': x, 'b': y}, y), theirs({'a': tx, 'b': ty}, ty))
    # nested: an outer product per pair of rows, and the inner map over the other argument
    outer = lambda lib: lib.func.vmap(lib.func.vmap(lambda a, b: a * b, in_dims=(None, 0)),  # noqa: E731
                                      in_dims=(0, None))
    _same(outer(tp)(x, y.t()), outer(torch)(tx, ty.t()))
    _same(tp.vmap(tp.vmap(tp.dot))(x.reshape(3, 2, 2), x.reshape(3, 2, 2)),
          torch.vmap(torch.vmap(torch.dot))(tx.reshape(3, 2, 2), tx.reshape(3, 2, 2)))


def test_vmap_unbatched_outputs_chunks_and_module_calls():
    x, tx = _pair(6, 5)
    lin = tp.nn.Linear(5, 3)
    tlin = torch.nn.Linear(5, 3)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    _same(F.vmap(lin, chunk_size=4)(x), TF.vmap(tlin, chunk_size=4)(tx))
    const = F.vmap(lambda a: tp.ones(2), out_dims=0)(x)  # unbatched outputs are expanded
    assert const.shape == (6, 2)
    _same(F.vmap(lambda a: (a.sum(), 1.0), out_dims=(0, None))(x)[0], tx.sum(1))


@pytest.mark.parametrize('case', ['sizes', 'in_dim_range', 'in_dims_type', 'structure', 'non_tensor',
                                  'no_tensor', 'no_inputs', 'in_dim_float', 'out_dim_range',
                                  'out_structure', 'non_tensor_output', 'randomness_flag',
                                  'random_op', 'random_like', 'item', 'control_flow', 'inplace',
                                  'chunk', 'dynamic'])
def test_vmap_errors_match_pytorch(case):
    def run(lib):
        v = lib.func.vmap
        x, y = lib.ones(2, 3), lib.ones(3, 3)
        f = lambda a, b=None: a  # noqa: E731
        return {
            'sizes': lambda: v(lambda a, b: a + b)(x, y),
            'in_dim_range': lambda: v(f, in_dims=5)(x),
            'in_dims_type': lambda: v(f, in_dims='a')(x),
            'structure': lambda: v(f, in_dims=(0, 0))(x),
            'non_tensor': lambda: v(f)(1.0),
            'no_tensor': lambda: v(f, in_dims=(None,))(x),
            'no_inputs': lambda: v(f)(),
            'in_dim_float': lambda: v(f, in_dims=(1.5,))(x),
            'out_dim_range': lambda: v(f, out_dims=3)(x),
            'out_structure': lambda: v(f, out_dims=(0, 0))(x),
            'non_tensor_output': lambda: v(lambda a: 1.0)(x),
            'randomness_flag': lambda: v(f, randomness='foo')(x),
            'random_op': lambda: v(lambda a: lib.randn(3))(x),
            'random_like': lambda: v(lambda a: lib.rand_like(a))(x),
            'item': lambda: v(lambda a: a.sum().item())(x),
            'control_flow': lambda: v(lambda a: a if a.sum() > 0 else -a)(x),
            'inplace': lambda: v(lambda a: y[0].mul_(a))(x),
            'chunk': lambda: v(f, chunk_size=0)(x),
            'dynamic': lambda: v(lambda a: a.nonzero())(x),
        }[case]
    with pytest.raises(Exception) as theirs:
        run(torch)()
    with pytest.raises(Exception) as ours:
        run(tp)()
    assert type(ours.value) is type(theirs.value)
    want = str(theirs.value).replace('torch', 'tensorplay').split('TreeSpec')[0]
    assert str(ours.value).split('TreeSpec')[0] == want.replace('tensorplay.', '') or \
        str(ours.value).startswith(want[:40]), (str(ours.value), str(theirs.value))


def test_vmap_randomness_same_and_different():
    x = tp.ones(4, 3)
    tp.manual_seed(0)
    diff = F.vmap(lambda a: a * tp.rand(3), randomness='different')(x)
    assert len({tuple(r) for r in diff.tolist()}) == 4
    same = F.vmap(lambda a: a * tp.rand(3), randomness='same')(x)
    assert len({tuple(r) for r in same.tolist()}) == 1
    same_like = F.vmap(lambda a: tp.rand_like(a), randomness='same')(x)
    assert len({tuple(r) for r in same_like.tolist()}) == 1
    diff_like = F.vmap(lambda a: tp.bernoulli(a * 0.5), randomness='different')(tp.ones(8, 64))
    assert len({tuple(r) for r in diff_like.tolist()}) == 8 and set(diff_like.flatten().tolist()) <= {0.0, 1.0}
    with pytest.raises(RuntimeError, match='different inplace randomness on an unbatched'):
        F.vmap(lambda a: tp.empty(3).normal_(), randomness='different')(x)


# name: (one sample's shape (24 draws), how many trailing dims each draw covers)
DROPOUTS = {'dropout': ((4, 6), 0), 'alpha_dropout': ((4, 6), 0), 'dropout1d': ((24, 3), 1),
            'dropout2d': ((2, 12, 2, 2), 2), 'dropout3d': ((24, 2, 2, 2), 3),
            'feature_alpha_dropout': ((4, 6, 3), 1)}


def _dropout_masks(lib, name, randomness, closure):
    """vmap of a dropout over 8 samples of ones (or of one shared tensor of ones, closed
    over): each sample's mask (True where kept) or the raised error's message."""
    shape, _ = DROPOUTS[name]
    lib.manual_seed(0)
    fn = getattr(lib.nn.functional, name)
    shared = lib.ones(shape)
    f = (lambda t: fn(shared, 0.5, training=True) + t.sum() * 0) if closure else \
        (lambda t: fn(t, 0.5, training=True))
    try:
        out = lib.func.vmap(f, randomness=randomness)(lib.ones(8, *shape))
    except RuntimeError as e:
        return str(e)
    low = out.min()  # the dropped value: 0, or alpha dropout's negative saturation
    return np.asarray((out != low).numpy() if out.dim() > len(shape) else
                      (out != low).unsqueeze(0).expand(8, *shape).numpy())


@pytest.mark.parametrize('closure', [False, True], ids=['batched', 'shared'])
@pytest.mark.parametrize('name', list(DROPOUTS))
def test_vmap_dropout_randomness(name, closure):
    """randomness='different' draws each sample's own mask, 'same' one mask for all
    (a shared input included), 'error' raises PyTorch's error, as torch.func.vmap does;
    feature dropouts keep or drop whole feature maps."""
    shape, map_dims = DROPOUTS[name]
    for randomness in ('different', 'same', 'error'):
        ours = _dropout_masks(tp, name, randomness, closure)
        theirs = _dropout_masks(torch, name, randomness, closure)
        assert type(ours) is type(theirs), (randomness, ours, theirs)
        if isinstance(theirs, str):
            assert ours == theirs
            continue
        assert ours.shape == theirs.shape
        assert len({m.tobytes() for m in ours}) == (8 if randomness == 'different' else 1)
        maps = ours.reshape(8, -1, int(np.prod(shape[len(shape) - map_dims:])))
        assert (maps == maps[..., :1]).all()  # a feature map is kept or dropped whole
        assert 0.3 < ours.mean() < 0.7 or randomness == 'same'  # (p = 0.5; 8 x 24 draws)


def test_vmap_dropout_per_sample_gradients():
    """The backward reuses each sample's own mask: dropout's vjp of ones is 1 / (1 - p)
    where the forward kept the element, 0 where it dropped it."""
    def f(t):
        out, back = F.vjp(lambda u: tp.nn.functional.dropout(u, 0.25), t)
        return out, back(tp.ones(5, 7))[0]
    tp.manual_seed(0)
    outs, grads = F.vmap(f, randomness='different')(tp.randn(6, 5, 7))
    kept = (outs != 0).numpy()
    np.testing.assert_array_equal(grads.numpy(), np.where(kept, np.float32(1 / 0.75), 0))
    assert len({m.tobytes() for m in kept}) == 6


def test_vmap_inplace_on_batched_and_the_fallback_warning():
    x, tx = _pair(4, 3)

    def f(lib):
        def g(a):
            b = a.clone()
            b.add_(1).mul_(a)
            b[0] = 5.0
            return b
        return g
    _same(F.vmap(f(tp))(x), TF.vmap(f(torch))(tx))
    from tensorplay.func import _vmap
    _vmap._fallback_warning[0] = True
    try:
        with pytest.warns(UserWarning, match='There is a performance drop because we have not yet '
                                             'implemented the batching rule for aten::histc'):
            got = F.vmap(lambda a: tp.histc(a, 4, -1, 1))(x)
    finally:
        _vmap._fallback_warning[0] = False
    with warnings.catch_warnings():  # (PyTorch 2.13 warns about its own histc fallback)
        warnings.simplefilter('ignore')
        _same(got, torch.vmap(lambda a: torch.histc(a, 4, -1, 1))(tx))


# ----------------------------------------------------------------- autograd transforms
def _funcs(lib, W):
    return {
        'vec': lambda x: lib.tanh(W @ lib.sin(W @ x)),
        'scalar': lambda x: (lib.sin(W @ x) * x).sum(),
    }


@pytest.mark.parametrize('name', ['grad', 'grad_and_value', 'jacrev', 'jacfwd', 'hessian',
                                  'jacrev_jacrev', 'jacfwd_jacrev', 'jacrev_jacfwd', 'vjp',
                                  'jvp', 'linearize', 'vmap_grad', 'grad_vmap', 'vmap_jacrev',
                                  'vmap_jacfwd', 'vmap_hessian', 'grad_grad', 'vmap_vjp'])
def test_transforms_match_torch_func(name):
    x, tx = _pair(5)
    X, tX = _pair(3, 5, seed=2)
    W, tW = _pair(5, 5, seed=1)
    ours, theirs = _funcs(tp, W), _funcs(torch, tW)

    def run(lib, fs, x, X):
        f = lib.func
        if name == 'grad':
            return f.grad(fs['scalar'])(x)
        if name == 'grad_and_value':
            return f.grad_and_value(lambda a, b: (fs['scalar'](a * b), b.sum()), argnums=(0, 1),
                                    has_aux=True)(x, x)
        if name == 'jacrev':
            return f.jacrev(fs['vec'])(x)
        if name == 'jacfwd':
            return f.jacfwd(fs['vec'])(x)
        if name == 'hessian':
            return f.hessian(fs['scalar'])(x)
        if name == 'jacrev_jacrev':
            return f.jacrev(f.jacrev(fs['vec']))(x)
        if name == 'jacfwd_jacrev':
            return f.jacfwd(f.jacrev(fs['vec']))(x)
        if name == 'jacrev_jacfwd':
            return f.jacrev(f.jacfwd(fs['vec']))(x)
        if name == 'vjp':
            out, fn = f.vjp(fs['vec'], x)
            return out, fn(lib.ones(5))
        if name == 'jvp':
            return f.jvp(fs['vec'], (x,), (lib.ones(5),))
        if name == 'linearize':
            out, fn = f.linearize(fs['vec'], x)
            return out, fn(lib.ones(5))
        if name == 'vmap_grad':
            return f.vmap(f.grad(fs['scalar']))(X)
        if name == 'grad_vmap':
            return f.grad(lambda A: f.vmap(fs['scalar'])(A).sum())(X)
        if name == 'vmap_jacrev':
            return f.vmap(f.jacrev(fs['vec']))(X)
        if name == 'vmap_jacfwd':
            return f.vmap(f.jacfwd(fs['vec']))(X)
        if name == 'vmap_hessian':
            return f.vmap(f.hessian(fs['scalar']))(X)
        if name == 'grad_grad':
            return f.grad(lambda a: f.grad(fs['scalar'])(a).sum())(x)
        if name == 'vmap_vjp':
            return f.vmap(lambda a, c: f.vjp(fs['vec'], a)[1](c))(X, X)
    _same(run(tp, ours, x, X), run(torch, theirs, tx, tX), tol=2e-4)


def test_grad_closures_argnums_pytrees_and_errors():
    w, tw = _pair(3)
    x, tx = _pair(4, 3, seed=3)
    # a closure over a tensor that requires grad, through vmap: the batch's sum of gradients
    wl = w.clone().requires_grad_()
    twl = tw.clone().requires_grad_()
    tp.func.vmap(lambda r: (r * wl).sin().sum())(x).sum().backward()
    torch.func.vmap(lambda r: (r * twl).sin().sum())(tx).sum().backward()
    _same(wl.grad, twl.grad)
    g = F.grad(lambda p: (p['a'] * p['b']).sum())({'a': w, 'b': x[0]})
    tg = TF.grad(lambda p: (p['a'] * p['b']).sum())({'a': tw, 'b': tx[0]})
    _same(g, tg)
    assert not g['a'].requires_grad
    with pytest.raises(RuntimeError, match='Expected f\\(\\*args\\) to return a scalar Tensor, got tensor '
                                           'with 1 dims'):
        F.grad(lambda a: a)(w)
    with pytest.raises(RuntimeError, match='argnum'):
        F.grad(lambda a: a.sum(), argnums=3)(w)
    with pytest.raises(RuntimeError, match='output of function f should be a tuple'):
        F.grad(lambda a: a.sum(), has_aux=True)(w)


# ---------------------------------------------------------------------- nn helpers
def test_functional_call_tie_weights_and_strict():
    lin = tp.nn.Linear(2, 2)
    tied = tp.nn.Sequential(lin, lin)
    tlin = torch.nn.Linear(2, 2)
    ttied = torch.nn.Sequential(tlin, tlin)
    for lib, model in ((tp, tied), (torch, ttied)):
        with pytest.raises(ValueError, match='which are tied'):
            lib.func.functional_call(model, {'0.weight': lib.ones(2, 2), '1.weight': lib.zeros(2, 2)},
                                     (lib.ones(2),))
    got = F.functional_call(tied, {'0.weight': tp.eye(2), '0.bias': tp.zeros(2)}, (tp.ones(2),))
    assert got.tolist() == [1.0, 1.0]  # '1.weight' and '1.bias' follow the tie
    with pytest.raises(RuntimeError, match='Missing key'):
        F.functional_call(lin, {'weight': tp.eye(2)}, (tp.ones(2),), strict=True)


def test_stack_module_state_and_batch_norm_replacement():
    models = [tp.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert params['weight'].shape == (4, 2, 3) and params['weight'].requires_grad
    assert params['weight'].is_leaf and buffers == {}
    with pytest.raises(RuntimeError, match='Expected at least one model, got 0'):
        F.stack_module_state([])
    with pytest.raises(RuntimeError, match='same class'):
        F.stack_module_state([tp.nn.Linear(1, 1), tp.nn.ReLU()])
    with pytest.raises(RuntimeError, match='training/eval mode'):
        F.stack_module_state([tp.nn.Linear(1, 1), tp.nn.Linear(1, 1).eval()])
    net = tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.BatchNorm1d(4))
    F.replace_all_batch_norm_modules_(net)
    assert net[1].running_mean is None and not net[1].track_running_stats
    out = F.vmap(net)(tp.randn(5, 2, 3))  # batch statistics per sample, nothing written
    assert out.shape == (5, 2, 4)


def test_functionalize_removes_mutations():
    def f(x):
        y = x.clone()
        y.add_(1)
        y.view(-1).mul_(2)
        tp.add(y, 1, out=x)
        return y
    a, b = tp.ones(2, 2), tp.ones(2, 2)
    _same(F.functionalize(f)(a), f(b))
    _same(a, b)
    code = make_fx(F.functionalize(f))(tp.ones(2, 2)).code
    assert not re.search(r'aten\.(?!copy_)\w+_\.|\.out\(', code), code
    assert code.count('aten.copy_.default(') == 3
    with pytest.raises(RuntimeError, match='received invalid argument for remove'):
        F.functionalize(f, remove='views')


# ------------------------------------------------------------------------ tutorials
def _per_sample_grads_tutorial(torch):
    """PyTorch's per-sample-gradients tutorial (CNN on MNIST-shaped data), `torch` a
    parameter so that the same text runs with tensorplay."""
    nn, F = torch.nn, torch.nn.functional
    functional_call, grad, vmap = torch.func.functional_call, torch.func.grad, torch.func.vmap

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.fc1 = nn.Linear(4 * 13 * 13, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(x, 2)
            x = torch.flatten(x, 1)
            return F.log_softmax(self.fc1(x), dim=1)

    def loss_fn(predictions, targets):
        return F.nll_loss(predictions, targets)

    torch.manual_seed(0)
    model = SimpleCNN()
    data = torch.arange(6 * 28 * 28, dtype=torch.float32).reshape(6, 1, 28, 28).sin()
    targets = torch.arange(6) % 10
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return loss_fn(predictions, targets)
    ft = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    return model, data, targets, ft


def test_per_sample_gradients_tutorial():
    model, data, targets, ft = _per_sample_grads_tutorial(tp)
    # the tutorial's own check: each per-sample gradient equals a plain backward on that sample
    for i in range(data.shape[0]):
        model.zero_grad()
        tp.nn.functional.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            _same(ft[name][i], p.grad, tol=1e-4)


def test_model_ensembling_tutorial():
    """PyTorch's model-ensembling tutorial with tensorplay: the vmapped ensemble equals each
    model run on its own, for one minibatch shared and a minibatch per model."""
    import copy
    lib = tp

    class SimpleMLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(784, 128)
            self.fc2 = lib.nn.Linear(128, 128)
            self.fc3 = lib.nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = lib.nn.functional.relu(self.fc1(x))
            x = lib.nn.functional.relu(self.fc2(x))
            return self.fc3(x)
    num_models = 4
    data = lib.randn(20, 64, 1, 28, 28)
    minibatches = data[:num_models]
    models = [SimpleMLP() for _ in range(num_models)]
    params, buffers = lib.func.stack_module_state(models)
    base_model = copy.deepcopy(models[0]).to('meta')

    def fmodel(params, buffers, x):
        return lib.func.functional_call(base_model, (params, buffers), (x,))
    per_model = lib.vmap(fmodel)(params, buffers, minibatches)
    _same(per_model, lib.stack([m(mb) for m, mb in zip(models, minibatches)]), tol=1e-4)
    shared = lib.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatches[0])
    _same(shared, lib.stack([m(minibatches[0]) for m in models]), tol=1e-4)


# ------------------------------------------------- autograd.Function and custom ops
def _functions(lib):
    class Cube(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g

    class NumpySin(lib.autograd.Function):  # forward leaves the library: needs a vmap rule
        @staticmethod
        def forward(x):
            return lib.tensor(np.sin(x.detach().numpy()))

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos()

        @staticmethod
        def vmap(info, in_dims, x):
            return NumpySin.apply(x.movedim(in_dims[0], 0)), 0

    class NoRule(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    class OldStyle(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g
    return Cube, NumpySin, NoRule, OldStyle


def test_autograd_function_under_vmap_and_grad():
    x, tx = _pair(4, 3)
    ours, theirs = _functions(tp), _functions(torch)
    for i in range(2):
        _same(F.vmap(ours[i].apply)(x), TF.vmap(theirs[i].apply)(tx))
        _same(F.vmap(F.grad(lambda a: ours[i].apply(a).sum()))(x),
              TF.vmap(TF.grad(lambda a: theirs[i].apply(a).sum()))(tx))
    for cls, tcls in zip(ours[2:], theirs[2:]):
        with pytest.raises(RuntimeError) as want:
            TF.vmap(tcls.apply)(tx)
        with pytest.raises(RuntimeError) as got:
            F.vmap(cls.apply)(x)
        assert str(got.value) == str(want.value)


def test_custom_op_register_vmap():
    @tp.library.custom_op('functest::np_cos', mutates_args=())
    def np_cos(x: tp.Tensor) -> tp.Tensor:
        return tp.tensor(np.cos(x.numpy()))

    @tp.library.custom_op('functest::np_scale', mutates_args=())
    def np_scale(x: tp.Tensor, s: float) -> tp.Tensor:
        return tp.tensor(x.numpy() * s)
    seen = []

    @np_cos.register_vmap
    def cos_rule(info, in_dims, x):
        seen.append((info.batch_size, info.randomness, in_dims))
        return np_cos(x), in_dims[0]

    def scale_rule(info, in_dims, x, s):
        seen.append(in_dims)
        return np_scale(x.movedim(in_dims[0], -1), s), x.dim() - 1
    tp.library.register_vmap('functest::np_scale', scale_rule)
    x = tp.randn(3, 5)
    _same(F.vmap(np_cos, in_dims=1)(x), x.cos().t())
    _same(F.vmap(lambda a: np_scale(a, 2.0))(x), x * 2)
    assert seen == [(5, 'error', (0,)), (0, None)]


@pytest.mark.parametrize('act', ['tanh', 'sigmoid', 'exp'])
def test_forward_over_reverse_through_ops_saving_their_output(act):
    # hessian = jacfwd(jacrev): the backward of tanh/sigmoid/exp reads the saved output,
    # whose tangent forward mode needs (Note [Saved outputs keep their tangent])
    x = np.random.RandomState(0).randn(4)
    results = []
    for lib in (torch, tp):
        fn = lambda v, lib=lib: getattr(lib, act)(v * lib.arange(1, 5, dtype=v.dtype)).sum()
        results.append(lib.func.hessian(fn)(lib.tensor(x)).numpy())
        results.append(lib.func.jvp(lib.func.grad(fn), (lib.tensor(x),),
                                    (lib.ones(4, dtype=lib.float64),))[1].numpy())
    np.testing.assert_allclose(results[2], results[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(results[3], results[1], rtol=1e-9, atol=1e-12)


def test_like_factories_batch_under_vmap():
    # zeros_like/ones_like/full_like/empty_like are Python composites: under vmap they give
    # batched results, so an in-place write of a batched value into them works (as torch.func)
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    f_tp = lambda t: tp.zeros_like(t).add_(t) * 2 + tp.full_like(t, 1.5) - tp.ones_like(t).mul_(t)  # noqa: E731
    f_th = lambda t: torch.zeros_like(t).add_(t) * 2 + torch.full_like(t, 1.5) - torch.ones_like(t).mul_(t)  # noqa: E731
    got = tp.func.vmap(f_tp)(tp.tensor(x))
    want = torch.func.vmap(f_th)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    nested = tp.func.vmap(tp.func.vmap(lambda t: tp.empty_like(t).copy_(t) + 1))(tp.tensor(x))
    np.testing.assert_allclose(nested.numpy(), x + 1, rtol=1e-6)
