"""nn, amp and optim additions of the breadth work against torch: the deprecated nn.init
aliases, BatchNorm fusion, skip_init, the hook-based spectral_norm, AdaptiveLogSoftmaxWithLoss,
DataParallel without a GPU, amp.custom_fwd/custom_bwd and optim.Adafactor."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

RNG = np.random.default_rng(3)


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.array(t.detach().tolist()).reshape(tuple(t.shape))


def _close(a, b, rtol=1e-6, atol=1e-7):
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split('.')[-1] == str(b.dtype).split('.')[-1]
    np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)


def _copy_state(src_torch, dst_tp):
    dst_tp.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in src_torch.state_dict().items()})


# ---- nn.init aliases ------------------------------------------------------------------------

@pytest.mark.parametrize('name,args', [('uniform', (-1.0, 2.0)), ('normal', (0.5, 2.0)), ('constant', (0.3,)),
                                       ('eye', ()), ('dirac', ()), ('xavier_uniform', ()), ('xavier_normal', ()),
                                       ('kaiming_uniform', ()), ('kaiming_normal', ()), ('orthogonal', ()),
                                       ('sparse', (0.5,))])
def test_init_aliases(name, args):
    shape = (3, 4, 1) if name == 'dirac' else (4, 5)
    if name in ('eye', 'sparse'):
        shape = (4, 5)
    results = []
    for lib in (torch, tp):
        lib.manual_seed(7)
        t = lib.empty(shape)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            out = getattr(lib.nn.init, name)(t, *args)
        assert [w.category for w in caught] == [FutureWarning]
        assert f'nn.init.{name}_' in str(caught[0].message)
        assert out is t or lib is tp
        results.append(out)
    if name == 'orthogonal':  # QR's sign conventions may differ; check orthogonality
        q = _np(results[1])
        np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    else:
        _close(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_init_alias_errors():
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        tp.nn.init.xavier_uniform(tp.empty(3))
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.nn.init.xavier_uniform(torch.empty(3))


# ---- BatchNorm fusion -----------------------------------------------------------------------

def _bn_pair(cls_name, n):
    tb = getattr(torch.nn, cls_name)(n)
    with torch.no_grad():
        tb.running_mean.copy_(torch.tensor(RNG.standard_normal(n), dtype=torch.float32))
        tb.running_var.copy_(torch.tensor(RNG.uniform(0.5, 2.0, n), dtype=torch.float32))
        tb.weight.copy_(torch.tensor(RNG.standard_normal(n), dtype=torch.float32))
        tb.bias.copy_(torch.tensor(RNG.standard_normal(n), dtype=torch.float32))
    pb = getattr(tp.nn, cls_name)(n)
    _copy_state(tb, pb)
    return tb.eval(), pb.eval()


@pytest.mark.parametrize('conv,transpose,bias', [('Conv2d', False, True), ('Conv1d', False, False),
                                                 ('ConvTranspose2d', True, True)])
def test_fuse_conv_bn(conv, transpose, bias):
    tc = getattr(torch.nn, conv)(3, 4, 3, bias=bias).eval()
    pc = getattr(tp.nn, conv)(3, 4, 3, bias=bias).eval()
    _copy_state(tc, pc)
    tb, pb = _bn_pair('BatchNorm2d' if '2d' in conv else 'BatchNorm1d', 4)
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    pf = tp.nn.utils.fuse_conv_bn_eval(pc, pb, transpose=transpose)
    _close(tf.weight, pf.weight, rtol=1e-5)
    _close(tf.bias, pf.bias, rtol=1e-5, atol=1e-6)
    assert isinstance(pf.weight, tp.nn.Parameter) and pf.weight.requires_grad
    assert pf is not pc and (pc.bias is None) == (not bias)
    x = RNG.standard_normal((2, 3, 6, 6) if '2d' in conv else (2, 3, 6)).astype(np.float32)
    _close(tb(tc(torch.tensor(x))), pf(tp.tensor(x)), rtol=1e-4, atol=1e-5)
    w, b = tp.nn.utils.fuse_conv_bn_weights(pc.weight, pc.bias, pb.running_mean, pb.running_var, pb.eps,
                                            None, None, transpose)
    tw, tb_ = torch.nn.utils.fuse_conv_bn_weights(tc.weight, tc.bias, tb.running_mean, tb.running_var, tb.eps,
                                                  None, None, transpose)
    _close(tw, w, rtol=1e-5)
    _close(tb_, b, rtol=1e-5, atol=1e-6)
    assert b.requires_grad == tb_.requires_grad
    pc.train()
    with pytest.raises(AssertionError):
        tp.nn.utils.fuse_conv_bn_eval(pc, pb)


def test_fuse_linear_bn():
    tl, pl = torch.nn.Linear(5, 4).eval(), tp.nn.Linear(5, 4).eval()
    _copy_state(tl, pl)
    tb, pb = _bn_pair('BatchNorm1d', 4)
    tf, pf = torch.nn.utils.fuse_linear_bn_eval(tl, tb), tp.nn.utils.fuse_linear_bn_eval(pl, pb)
    _close(tf.weight, pf.weight, rtol=1e-5)
    _close(tf.bias, pf.bias, rtol=1e-5, atol=1e-6)
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    _close(tb(tl(torch.tensor(x))), pf(tp.tensor(x)), rtol=1e-4, atol=1e-5)
    w, b = tp.nn.utils.fuse_linear_bn_weights(pl.weight, None, pb.running_mean, pb.running_var, 1e-3,
                                              pb.weight, pb.bias)
    tw, tb2 = torch.nn.utils.fuse_linear_bn_weights(tl.weight, None, tb.running_mean, tb.running_var, 1e-3,
                                                    tb.weight, tb.bias)
    _close(tw, w, rtol=1e-5)
    _close(tb2, b, rtol=1e-5, atol=1e-6)
    _, pb3 = _bn_pair('BatchNorm1d', 3)
    with pytest.raises(AssertionError):
        tp.nn.utils.fuse_linear_bn_eval(pl, pb3)


# ---- skip_init ------------------------------------------------------------------------------

def test_skip_init():
    m = tp.nn.utils.skip_init(tp.nn.Linear, 5, 3, dtype=tp.float64)
    assert isinstance(m, tp.nn.Linear) and m.weight.shape == (3, 5) and m.weight.dtype == tp.float64
    assert m.weight.device.type == 'cpu' and m.bias.shape == (3,)
    m = tp.nn.utils.skip_init(tp.nn.Conv2d, 2, 4, 3, device='cpu')
    assert m.weight.shape == (4, 2, 3, 3)

    class NoDevice(tp.nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="'device'"):
        tp.nn.utils.skip_init(NoDevice, 3)


# ---- spectral_norm (hook form) ---------------------------------------------------------------

@pytest.mark.parametrize('make,dim', [(lambda lib: lib.nn.Linear(6, 4), None),
                                      (lambda lib: lib.nn.Conv2d(3, 5, 3), None),
                                      (lambda lib: lib.nn.ConvTranspose2d(3, 5, 3), None),
                                      (lambda lib: lib.nn.Linear(6, 4), 1)])
def test_spectral_norm(make, dim):
    mods = []
    for lib in (torch, tp):
        lib.manual_seed(11)
        m = make(lib)
        lib.manual_seed(12)
        kw = {} if dim is None else {'dim': dim}
        mods.append(lib.nn.utils.spectral_norm(m, n_power_iterations=2, **kw))
    tm, pm = mods
    _copy_state(tm, pm)
    assert sorted(tm.state_dict()) == sorted(pm.state_dict())
    shape = (2, 6) if isinstance(tm, torch.nn.Linear) else (2, 3, 7, 7)
    for step in range(3):
        x = RNG.standard_normal(shape).astype(np.float32)
        tx, px = torch.tensor(x), tp.tensor(x)
        ty, py = tm(tx), pm(px)
        _close(ty, py, rtol=1e-4, atol=1e-5)
        ty.sum().backward()
        py.sum().backward()
        _close(tm.weight_orig.grad, pm.weight_orig.grad, rtol=1e-4, atol=1e-5)
        _close(tm.weight_u, pm.weight_u, rtol=1e-4, atol=1e-6)
    tm.eval()
    pm.eval()
    u = pm.weight_u.clone()
    _close(tm(tx), pm(px), rtol=1e-4, atol=1e-5)
    assert tp.equal(u, pm.weight_u)  # no power iteration in eval mode
    torch.nn.utils.remove_spectral_norm(tm)
    tp.nn.utils.remove_spectral_norm(pm)
    assert isinstance(pm.weight, tp.nn.Parameter) and not hasattr(pm, 'weight_orig')
    _close(tm.weight, pm.weight, rtol=1e-4, atol=1e-6)


def test_spectral_norm_errors():
    m = tp.nn.utils.spectral_norm(tp.nn.Linear(3, 3))
    with pytest.raises(RuntimeError):
        tp.nn.utils.spectral_norm(m)
    with pytest.raises(ValueError):
        tp.nn.utils.spectral_norm(tp.nn.Linear(3, 3), n_power_iterations=0)
    with pytest.raises(ValueError):
        tp.nn.utils.remove_spectral_norm(tp.nn.Linear(3, 3))


# ---- AdaptiveLogSoftmaxWithLoss ------------------------------------------------------------

def _asm_pair(**kw):
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], **kw).double()
    p = tp.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], **kw).double()
    _copy_state(t, p)
    return t, p


@pytest.mark.parametrize('kw', [{}, {'div_value': 2.0, 'head_bias': True}])
def test_adaptive_log_softmax(kw):
    t, p = _asm_pair(**kw)
    assert sorted(t.state_dict()) == sorted(p.state_dict())
    for k, v in t.state_dict().items():
        assert tuple(v.shape) == tuple(p.state_dict()[k].shape)
    x = RNG.standard_normal((6, 8))
    target = np.array([0, 3, 4, 9, 10, 19])
    tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    to, po = t(tx, torch.tensor(target)), p(px, tp.tensor(target))
    _close(to.output, po.output)
    _close(to.loss, po.loss)
    to.loss.backward()
    po.loss.backward()
    _close(tx.grad, px.grad)
    for (name, tparam), (_, pparam) in zip(t.named_parameters(), p.named_parameters()):
        _close(tparam.grad, pparam.grad)
    _close(t.log_prob(tx.detach()), p.log_prob(px.detach()))
    with pytest.raises(IndexError):  # PyTorch's log_prob and predict take batches only
        t.log_prob(tx.detach()[0])
    with pytest.raises(IndexError):
        p.log_prob(px.detach()[0])
    _close(t.predict(tx.detach()), p.predict(px.detach()))
    _close(t.predict(tx.detach() * 5), p.predict(px.detach() * 5))
    single = t(tx.detach()[1], torch.tensor(target[1])), p(px.detach()[1], tp.tensor(target[1]))
    _close(single[0].output, single[1].output)
    _close(single[0].loss, single[1].loss)


def test_adaptive_log_softmax_errors():
    t, p = _asm_pair()
    for args in ((np.ones((3, 8)), np.array([1, 2])), (np.ones((3, 8)), np.array([1, 2, 20])),
                 (np.ones((3, 8)), np.array([[1]])), (np.ones(8), np.array([1, 2])),
                 (np.ones((3, 8)), np.array(1))):
        with pytest.raises(RuntimeError):
            t(torch.tensor(args[0]), torch.tensor(args[1]))
        with pytest.raises(RuntimeError):
            p(tp.tensor(args[0]), tp.tensor(args[1]))
    for cutoffs in ([], [4, 2], [0, 5], [5, 20], [3, 3]):
        with pytest.raises(ValueError):
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
        with pytest.raises(ValueError):
            tp.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)


# ---- DataParallel -------------------------------------------------------------------------

@pytest.mark.skipif(tp.cuda.is_available(), reason='checks the no-GPU path')
def test_data_parallel_without_gpu():
    inner = tp.nn.Linear(4, 2)
    m = tp.nn.DataParallel(inner)
    assert m.module is inner and m.device_ids == []
    x = tp.randn(3, 4)
    assert tp.equal(m(x), inner(x))
    assert list(m.state_dict()) == ['module.weight', 'module.bias']
    assert tp.equal(tp.nn.parallel.data_parallel(inner, x), inner(x))
    assert tp.nn.DataParallel is tp.nn.parallel.DataParallel


# ---- amp.custom_fwd / custom_bwd ----------------------------------------------------------

def _scaled_mm(lib):
    class ScaledMM(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type='cpu', cast_inputs=lib.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            ctx.seen = (a.dtype, lib.is_autocast_enabled('cpu'))
            return a.mm(b)

        @staticmethod
        @lib.amp.custom_bwd(device_type='cpu')
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            ctx.seen_bwd = lib.is_autocast_enabled('cpu')
            return grad.mm(b.t()), a.t().mm(grad)
    return ScaledMM


def _plain_fwd(lib):
    class Plain(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type='cpu')
        def forward(ctx, a):
            return a.mm(a)

        @staticmethod
        @lib.amp.custom_bwd(device_type='cpu')
        def backward(ctx, grad):
            ctx.bwd_state = (lib.is_autocast_enabled('cpu'), lib.get_autocast_dtype('cpu'))
            return grad * 2
    return Plain


def test_custom_fwd_bwd():
    x = RNG.standard_normal((3, 3)).astype(np.float32)
    seen, values = [], []
    for lib in (torch, tp):
        a = lib.tensor(x).to(lib.bfloat16).requires_grad_()
        fn = _scaled_mm(lib)
        with lib.autocast('cpu', dtype=lib.bfloat16):
            out = fn.apply(a, lib.tensor(x))
        out.sum().backward()
        seen.append((str(out.dtype).split('.')[-1], str(a.grad.dtype).split('.')[-1]))
        values.append(_np(out))
        b = lib.tensor(x).requires_grad_()
        with lib.autocast('cpu', dtype=lib.bfloat16):
            y = _plain_fwd(lib).apply(b)
            grad_fn = y.grad_fn
        y.float().sum().backward()
        seen.append((str(y.dtype).split('.')[-1], grad_fn.bwd_state[0],
                     str(grad_fn.bwd_state[1]).split('.')[-1]))
    assert seen[:2] == seen[2:]
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)
    with pytest.raises(ValueError):
        tp.amp.custom_fwd(device_type=0)
    with pytest.raises(ValueError):
        tp.amp.custom_bwd(device_type=None)


# ---- optim.Adafactor ----------------------------------------------------------------------

SHAPES = [(4, 3), (5,), (2, 3, 4), (1,)]


@pytest.mark.parametrize('kw', [{}, {'lr': 0.1, 'weight_decay': 0.01},
                                {'maximize': True, 'eps': (1e-30, 1e-3), 'd': 2.0, 'beta2_decay': -0.5},
                                {'lr': 0.05, 'eps': (None, 0.0)}])
@pytest.mark.parametrize('dtype', ['float64', 'float32'])
def test_adafactor_trajectory(kw, dtype):
    init = [RNG.standard_normal(s).astype(dtype) for s in SHAPES]
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    pparams = [tp.tensor(a, requires_grad=True) for a in init]
    topt, popt = torch.optim.Adafactor(tparams, **kw), tp.optim.Adafactor(pparams, **kw)
    for _ in range(8):
        grads = [RNG.standard_normal(s).astype(dtype) for s in SHAPES]
        for t, p, g in zip(tparams, pparams, grads):
            t.grad, p.grad = torch.tensor(g), tp.tensor(g)
        topt.step()
        popt.step()
        for t, p in zip(tparams, pparams):
            np.testing.assert_allclose(_np(p), _np(t), rtol=0, atol=1e-6)
    for t, p in zip(tparams, pparams):
        tstate, pstate = topt.state[t], popt.state[p]
        assert sorted(tstate) == sorted(pstate)
        for key in tstate:
            np.testing.assert_allclose(_np(pstate[key]), _np(tstate[key]), rtol=1e-5, atol=1e-12)
            assert str(pstate[key].dtype).split('.')[-1] == str(tstate[key].dtype).split('.')[-1]


def test_adafactor_state_dict_and_closure():
    p = tp.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    opt = tp.optim.Adafactor([p])

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert loss.item() == pytest.approx(14.25)
    sd = opt.state_dict()
    assert set(sd['state'][0]) == {'step', 'row_var', 'col_var'}
    opt2 = tp.optim.Adafactor([tp.zeros(2, 2, requires_grad=True)])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]['beta2_decay'] == -0.8


@pytest.mark.parametrize('kw', [{'lr': -1.0}, {'beta2_decay': 0.5}, {'eps': (-1.0, 1e-3)}, {'eps': (None, -1.0)},
                                {'d': 0.5}, {'weight_decay': -0.1}])
def test_adafactor_errors(kw):
    with pytest.raises(ValueError):
        torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(ValueError):
        tp.optim.Adafactor([tp.zeros(2, requires_grad=True)], **kw)


# ---- optim.Muon -----------------------------------------------------------------------------

MUON_SHAPES = [(4, 3), (3, 6), (5, 5)]


# PyTorch's Muon.step costs about a second per optimizer here (its dynamo wrappers): few cases
@pytest.mark.parametrize('kw,dtype', [({}, 'float32'),
                                      ({'lr': 0.02, 'nesterov': False, 'adjust_lr_fn': 'match_rms_adamw'},
                                       'float64'),
                                      ({'momentum': 0.5, 'weight_decay': 0.0, 'ns_steps': 3,
                                        'ns_coefficients': (2.0, -1.5, 0.5), 'eps': 1e-3}, 'float64')])
def test_muon_trajectory(kw, dtype):
    init = [RNG.standard_normal(s).astype(dtype) for s in MUON_SHAPES]
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    pparams = [tp.tensor(a, requires_grad=True) for a in init]
    topt, popt = torch.optim.Muon(tparams, **kw), tp.optim.Muon(pparams, **kw)
    for _ in range(6):
        grads = [RNG.standard_normal(s).astype(dtype) for s in MUON_SHAPES]
        for t, p, g in zip(tparams, pparams, grads):
            t.grad, p.grad = torch.tensor(g), tp.tensor(g)
        topt.step()
        popt.step()
        for t, p in zip(tparams, pparams):
            np.testing.assert_allclose(_np(p), _np(t), rtol=0, atol=1e-6)
    for t, p in zip(tparams, pparams):
        _close(topt.state[t]['momentum_buffer'], popt.state[p]['momentum_buffer'])


@pytest.mark.parametrize('kw', [{'lr': -1.0}, {'momentum': -0.1}, {'weight_decay': -1.0}, {'adjust_lr_fn': 'x'}])
def test_muon_errors(kw):
    with pytest.raises(ValueError):
        torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kw)
    with pytest.raises(ValueError):
        tp.optim.Muon([tp.zeros(2, 2, requires_grad=True)], **kw)


def test_muon_rejects_non_matrices():
    for lib in (torch, tp):
        with pytest.raises(ValueError, match='2D parameters'):
            lib.optim.Muon([lib.zeros(3, requires_grad=True)])
        p = lib.zeros(2, 2, requires_grad=True)
        opt = lib.optim.Muon([p], ns_steps=100)
        p.grad = lib.ones(2, 2)
        with pytest.raises(ValueError):
            opt.step()


# ---- adaptive_max_pool3d --------------------------------------------------------------------

@pytest.mark.parametrize('shape,size', [((2, 3, 5, 6, 7), (2, 3, 4)), ((3, 4, 4, 5), (3, None, 2)),
                                        ((1, 2, 3, 3, 3), 1), ((1, 1, 4, 4, 4), (5, 5, 5)),
                                        ((2, 1, 6, 2, 9), (4, 1, 3))])
def test_adaptive_max_pool3d(shape, size):
    x = RNG.standard_normal(shape)
    tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    tout, tidx = torch.nn.functional.adaptive_max_pool3d(tx, size, return_indices=True)
    pout, pidx = tp.nn.functional.adaptive_max_pool3d_with_indices(px, size)
    _close(tout, pout)
    assert _np(pidx).tolist() == _np(tidx).tolist() and pidx.dtype == tp.int64
    seed = RNG.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(seed))
    pout.backward(tp.tensor(seed))
    _close(tx.grad, px.grad)
    _close(torch.nn.AdaptiveMaxPool3d(size)(tx.detach()), tp.nn.AdaptiveMaxPool3d(size)(px.detach()))


def test_adaptive_max_pool3d_errors():
    for shape in ((3, 5), (2, 3, 0, 4, 4)):
        with pytest.raises(RuntimeError):
            torch.nn.functional.adaptive_max_pool3d(torch.ones(shape), 2)
        with pytest.raises(RuntimeError):
            tp.nn.functional.adaptive_max_pool3d(tp.ones(shape), 2)
    assert repr(tp.nn.AdaptiveMaxPool3d((2, 3, 4), True)) == repr(torch.nn.AdaptiveMaxPool3d((2, 3, 4), True))
