"""vmap's batching rules for the nn op families and their backward ops: per-sample
gradients with vmap(grad(f)) equal tp.func.grad(f) run on each sample, with parameters
shared (in_dims None) or batched (in_dims 0), with inputs whose batch dim is not the
outermost in memory, and no op takes the loop fallback (the forward ops alone are covered
by test_func_vmap_ops.py's op database run)."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.func as F
from tensorplay.func import _vmap

nnf = tp.nn.functional
B = 3


def _t(*shape, seed=0):
    return tp.tensor(np.random.default_rng(seed).standard_normal(shape).astype('float32'))


def _conv_pool(p, x):
    y = nnf.relu(nnf.conv2d(x, p['w'], p['b'], stride=1, padding=1))
    return nnf.max_pool2d(y, 2)


# name: (function of (params, x), params, one sample's x)
CASES = {
    'conv2d+max_pool2d': (_conv_pool, {'w': _t(4, 2, 3, 3), 'b': _t(4)}, _t(2, 2, 6, 6)),
    'conv2d unbatched input, stride, groups': (
        lambda p, x: nnf.conv2d(x, p['w'], p['b'], stride=2, padding=1, groups=2),
        {'w': _t(4, 1, 3, 3), 'b': _t(4)}, _t(2, 7, 7)),
    'conv1d dilation': (lambda p, x: nnf.conv1d(x, p['w'], None, dilation=2),
                        {'w': _t(5, 3, 3)}, _t(2, 3, 11)),
    'conv3d': (lambda p, x: nnf.conv3d(x, p['w'], p['b'], padding=1),
               {'w': _t(2, 2, 3, 3, 3), 'b': _t(2)}, _t(1, 2, 4, 4, 4)),
    'conv_transpose2d': (
        lambda p, x: nnf.conv_transpose2d(x, p['w'], p['b'], stride=2, output_padding=1,
                                          groups=2),
        {'w': _t(4, 3, 3, 3), 'b': _t(6)}, _t(2, 4, 5, 5)),
    'conv_transpose1d': (lambda p, x: nnf.conv_transpose1d(x, p['w'], None, stride=3),
                         {'w': _t(3, 2, 4)}, _t(2, 3, 6)),
    'avg/adaptive pools': (
        lambda p, x: (nnf.avg_pool2d(x * p['s'], 3, 2, 1).sum() + nnf.adaptive_avg_pool2d(
            x * p['s'], (3, 2)).sum() + nnf.adaptive_max_pool2d(x * p['s'], 2).pow(2).sum()
            + nnf.max_pool1d(x.flatten(2) * p['s'][:, 0], 3).pow(2).sum()),
        {'s': _t(5, 1, 1)}, _t(2, 5, 7, 6)),
    'avg_pool3d, pool without N': (
        lambda p, x: nnf.avg_pool3d(x * p['s'], 2, ceil_mode=True).sum() + nnf.max_pool2d(
            (x * p['s'])[0], 2).pow(2).sum(),
        {'s': _t(3, 1, 1, 1)}, _t(3, 5, 4, 4)),
    'pads': (lambda p, x: (nnf.pad(x * p['s'], (1, 2), 'reflect').pow(2).sum()
                           + nnf.pad(x * p['s'], (2, 1, 1, 0), 'replicate').pow(2).sum()
                           + nnf.pad(x * p['s'], (1, 1, 2, 2), value=0.5).pow(2).sum()),
             {'s': _t(3, 1, 1)}, _t(3, 4, 5)),  # 3-D: PyTorch's 1-D reflect pad takes 2-D/3-D
    'layer_norm': (lambda p, x: nnf.layer_norm(x, (4, 5), p['w'], p['b']),
                   {'w': _t(4, 5), 'b': _t(4, 5)}, _t(3, 4, 5)),
    'rms_norm': (lambda p, x: nnf.rms_norm(x, (5,), p['w']), {'w': _t(5)}, _t(2, 3, 5)),
    'group_norm': (lambda p, x: nnf.group_norm(x, 2, p['w'], p['b']),
                   {'w': _t(4), 'b': _t(4)}, _t(3, 4, 3, 2)),
    'batch_norm eval': (
        lambda p, x: nnf.batch_norm(x, tp.zeros(3) + 0.1, tp.ones(3) * 2, p['w'], p['b']),
        {'w': _t(3), 'b': _t(3)}, _t(4, 3, 5)),
    'batch_norm training': (lambda p, x: nnf.batch_norm(x, None, None, p['w'], p['b'], True),
                            {'w': _t(3), 'b': _t(3)}, _t(4, 3, 2, 2)),
}


def _loss(fn):
    def loss(p, x):
        out = fn(p, x)
        return (out * tp.linspace(-1, 1, out.numel()).reshape(out.shape)).sum()
    return loss


def _batched(x, seed):
    """B samples like ``x``, stored with the batch dim innermost (strides matter not)."""
    return _t(*x.shape, B, seed=seed).movedim(-1, 0)


def _per_sample(loss, ps, xs, batched_params):
    grads = [F.grad(loss)({k: v[i] for k, v in ps.items()} if batched_params else ps, xs[i])
             for i in range(B)]
    return {k: tp.stack([g[k] for g in grads]) for k in grads[0]}


@pytest.mark.parametrize('batched_params', [False, True], ids=['shared', 'batched'])
@pytest.mark.parametrize('name', list(CASES))
def test_per_sample_grads_take_no_loop(name, batched_params):
    fn, params, x = CASES[name]
    loss = _loss(fn)
    xs = _batched(x, 1)
    ps = {k: _batched(v, 2 + i) for i, (k, v) in enumerate(params.items())} if batched_params \
        else params
    log = _vmap._loop_log[0] = []
    try:
        got = F.vmap(F.grad(loss), in_dims=(0 if batched_params else None, 0))(ps, xs)
    finally:
        _vmap._loop_log[0] = None
    assert not log, f'looped: {sorted({str(f) for f in log})}'
    want = _per_sample(loss, ps, xs, batched_params)
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=k)


def test_batch_norm_training_with_shared_running_stats_raises_pytorchs_error():
    rm, rv = tp.zeros(3), tp.ones(3)
    with pytest.raises(RuntimeError, match='Batch norm got a batched tensor as input while the '
                                           'running_mean or running_var'):
        F.vmap(lambda x: nnf.batch_norm(x, rm, rv, training=True))(_t(B, 4, 3))


def test_batch_norm_training_updates_batched_running_stats_per_sample():
    xs = _batched(_t(4, 3, 2), 5)
    rm, rv = _t(B, 3, seed=6), _t(B, 3, seed=7).abs()
    want_m, want_v = rm.clone(), rv.clone()
    want = [nnf.batch_norm(xs[i], want_m[i], want_v[i], training=True) for i in range(B)]
    rm_t, rv_t = rm.t().contiguous().t(), rv.clone()  # a non-contiguous batch too
    got = F.vmap(lambda x, m, v: nnf.batch_norm(x, m, v, training=True))(xs, rm_t, rv_t)
    np.testing.assert_allclose(got.numpy(), tp.stack(want).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm_t.numpy(), want_m.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rv_t.numpy(), want_v.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('mode', ['sum', 'mean', 'max'])
def test_embedding_bag_with_batched_indices(mode):
    """Each sample's bags over its own indices (the rule stacks the samples' weights and
    moves each sample's indices and offsets): the output and per-sample weight gradients
    (the backward ops may loop), with padding and a weight that requires grad (the
    _embedding_bag kernel rather than the forward-only one)."""
    rng = np.random.default_rng(3)
    w = _t(B, 10, 4, seed=8)
    idx = tp.tensor(rng.integers(0, 10, (B, 12)))
    offsets = tp.tensor([0, 3, 3, 8])  # an empty bag too

    def f(w, i):
        return nnf.embedding_bag(i, w, offsets, mode=mode, padding_idx=2)
    log = _vmap._loop_log[0] = []
    try:
        got = F.vmap(f)(w.clone().requires_grad_(), idx)
    finally:
        _vmap._loop_log[0] = None
    assert not log, f'looped: {sorted({str(f) for f in log})}'
    want = tp.stack([f(w[i], idx[i]) for i in range(B)])
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    g = F.vmap(F.grad(_loss(lambda w, i: f(w, i))))(w, idx)
    want_g = tp.stack([F.grad(_loss(lambda w, i: f(w, i)))(w[i], idx[i]) for i in range(B)])
    np.testing.assert_allclose(g.numpy(), want_g.numpy(), rtol=1e-5, atol=1e-5)


def test_embedding_bag_bad_sample_raises_its_error():
    offsets = tp.tensor([[0, 2], [1, 2], [0, 2]])  # sample 1's bags do not start at 0
    with pytest.raises(RuntimeError, match='offsets\\[0\\] has to be 0'):
        F.vmap(lambda w, i, o: nnf.embedding_bag(i, w, o))(_t(B, 5, 2), tp.zeros(B, 4).long(),
                                                            offsets)
