"""The lazy conjugate and negative bits against PyTorch (Note [Conjugate and negative bits]):
conj() as a view, the ops that keep the bit, writes through conjugate views, every complex
op-database entry run with conjugate-view inputs, autograd and forward AD, host access
(numpy, DLPack, item, printing, save / load), matrix products reading a conjugate operand,
vmap and fake tensors."""
import dataclasses
import io

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay_opdb as opdb
from test_ops import _outcome, _out_spec, _run, assert_matches

Z = [[1 + 2j, 3 - 1j, -0.5 + 0.25j], [0.5j, -2, 1e-3 - 4j]]


def pair(data=Z, dtype='complex64'):
    return tp.tensor(data, dtype=getattr(tp, dtype)), torch.tensor(data, dtype=getattr(torch, dtype))


def same(a, b, rtol=1e-6, atol=1e-6):
    """a (tensorplay) has b's (torch) dtype, shape, bits and values."""
    assert str(a.dtype).split('.')[-1] == str(b.dtype).split('.')[-1]
    assert tuple(a.shape) == tuple(b.shape)
    assert (a.is_conj(), a.is_neg()) == (b.is_conj(), b.is_neg())
    np.testing.assert_allclose(np.array(a.tolist()), np.array(b.tolist()), rtol=rtol, atol=atol)


# ------------------------------------------------------------------ the view itself
def test_conj_is_a_view_with_the_bit():
    x, _ = pair()
    y = x.conj()
    assert y.is_conj() and not x.is_conj() and tp.is_conj(y)
    assert y.data_ptr() == x.data_ptr()
    assert y.conj().data_ptr() == x.data_ptr() and not y.conj().is_conj()
    assert tp.conj(x).is_conj() and tp._conj(x).is_conj()
    for t in (tp.tensor([1.0, 2.0]), tp.tensor([1, 2])):  # a real tensor itself
        for c in (t.conj(), tp.conj(t)):
            assert c.data_ptr() == t.data_ptr() and not c.is_conj() and c._version == t._version


def test_resolve_and_conj_physical():
    x, tx = pair()
    y, ty = x.conj(), tx.conj()
    for r in (x.resolve_conj(), tp.resolve_conj(x), x.resolve_neg()):  # x itself (a new Python object)
        assert r.data_ptr() == x.data_ptr() and not r.is_conj() and r._version == x._version
    for a, b in [(y.resolve_conj(), ty.resolve_conj()), (tp.resolve_conj(y), torch.resolve_conj(ty)),
                 (y.conj_physical(), ty.conj_physical()), (tp.conj_physical(y), torch.conj_physical(ty)),
                 (tp._conj_physical(y), torch._conj_physical(ty)), (y.clone(), ty.clone())]:
        same(a, b)
        assert a.data_ptr() != x.data_ptr()
    r = y.conj_physical_()
    ty.conj_physical_()
    assert r is y or r.data_ptr() == y.data_ptr()
    same(y, ty)
    same(x, tx)


@pytest.mark.parametrize('f', [
    lambda t: t.view(3, 2), lambda t: t.reshape(6), lambda t: t.reshape(3, 2), lambda t: t.t(),
    lambda t: t.T, lambda t: t.mT, lambda t: t.mH, lambda t: t.H, lambda t: t.adjoint(),
    lambda t: t.transpose(0, 1), lambda t: t[0], lambda t: t[:, 1:], lambda t: t[..., ::2], lambda t: t[None],
    lambda t: t.select(1, 2), lambda t: t.narrow(1, 0, 2), lambda t: t.expand(4, 2, 3), lambda t: t.unsqueeze(0),
    lambda t: t.flatten(), lambda t: t.unflatten(1, (3, 1)), lambda t: t.detach(), lambda t: t.unbind(0)[1],
    lambda t: t.split(1)[0], lambda t: t.chunk(3, 1)[2], lambda t: t.diagonal(), lambda t: t.movedim(0, 1),
    lambda t: t.permute(1, 0), lambda t: t.as_strided((2,), (1,)), lambda t: t.contiguous(), lambda t: t.squeeze(),
    lambda t: t.t().contiguous(), lambda t: t.t().reshape(6), lambda t: t[[0, 1]], lambda t: t.real, lambda t: t.imag,
    lambda t: t.imag.resolve_neg(), lambda t: t.imag.neg(), lambda t: t.to(t.dtype), lambda t: t.to('cpu'),
    lambda t: t.to(torch.complex128 if isinstance(t, torch.Tensor) else tp.complex128), lambda t: t.sum(),
    lambda t: t + 1, lambda t: t * t, lambda t: t.abs(), lambda t: t.angle(), lambda t: t.clone(),
    lambda t: t.conj(), lambda t: t.conj_physical(), lambda t: t.resolve_conj(), lambda t: t.exp(),
    lambda t: t.flip(0), lambda t: t.roll(1), lambda t: t.cumsum(1), lambda t: t.mean(0), lambda t: t == t.conj(),
    lambda t: t.sgn(), lambda t: t.reciprocal(), lambda t: t.neg(), lambda t: t.isreal(),
])
def test_ops_on_a_conjugate_view(f):
    """Values, dtype, shape and the bits of the result as PyTorch's."""
    x, tx = pair()
    same(f(x.conj()), f(tx.conj()))


def test_negative_bit():
    x, tx = pair()
    im, tim = x.conj().imag, tx.conj().imag
    same(im, tim)
    assert im.is_neg() and tp.is_neg(im) and not x.imag.is_neg()
    same(im + 1, tim + 1)
    same(tp._neg_view(x), torch._neg_view(tx))
    same(tp._neg_view(x).resolve_neg(), torch._neg_view(tx).resolve_neg())
    im[0, 0] = 100.0
    tim[0, 0] = 100.0
    same(x, tx)


# ------------------------------------------------------------------ writes
@pytest.mark.parametrize('write', [
    lambda y, m: y.__setitem__(0, 1 + 2j),
    lambda y, m: y.__setitem__((slice(None), 1), m.tensor([5 - 5j, 6j])),
    lambda y, m: y.add_(1),
    lambda y, m: y.add_(1j),
    lambda y, m: y.mul_(y),
    lambda y, m: y.add_(y.conj()),
    lambda y, m: y.copy_(m.tensor([[1j, 2, 3 + 3j]] * 2)),
    lambda y, m: y.copy_(y.conj()),
    lambda y, m: y.fill_(2 - 1j),
    lambda y, m: y.zero_(),
    lambda y, m: y.t().mul_(1j),
    lambda y, m: y[0].sub_(1j),
    lambda y, m: m.add(y, 1, out=y),
    lambda y, m: m.add(y.conj(), 1, out=y),
    lambda y, m: m.mul(m.ones(2, 3, dtype=m.complex64), 1j, out=y),
    lambda y, m: y.conj_physical_(),
    lambda y, m: y.imag.mul_(3),
    lambda y, m: y.real.add_(1),
    lambda y, m: setattr(y, 'imag', m.ones(2, 3)),
    lambda y, m: y.index_fill_(1, m.tensor([0, 2]), 7j),
    lambda y, m: y.masked_fill_(m.tensor([[True, False, True]] * 2), 1j),
])
def test_writes_through_a_conjugate_view_reach_the_base(write):
    x, tx = pair()
    y, ty = x.conj(), tx.conj()
    write(y, tp)
    write(ty, torch)
    same(x, tx)
    same(y, ty)


def test_out_into_a_conjugate_view_resized():
    y, ty = tp.zeros(0, dtype=tp.complex64).conj(), torch.zeros(0, dtype=torch.complex64).conj()
    x, tx = pair()
    tp.mul(x, 2, out=y)
    torch.mul(tx, 2, out=ty)
    same(y, ty)


def test_inplace_on_a_view_of_a_conjugate_view_bumps_the_version():
    x, _ = pair()
    v = x._version
    x.conj()[0].add_(1)
    assert x._version > v


# ------------------------------------------------------------------ errors and host access
def test_errors_as_pytorch():
    x, tx = pair()
    for m, t in [(tp, x.conj()), (torch, tx.conj())]:
        with pytest.raises(RuntimeError, match="view_as_real doesn't work on unresolved conjugated tensors"):
            m.view_as_real(t)
        with pytest.raises(RuntimeError, match='not supported for conjugate view tensors'):
            t.view(m.float32)
        with pytest.raises(RuntimeError, match='not supported for conjugate view tensors'):
            t.view(m.complex64)
        with pytest.raises(RuntimeError, match='negative bit set'):
            t.imag.view(m.int32)
        with pytest.raises(RuntimeError, match='conjugate bit set. Use tensor.resolve_conj'):
            t.numpy()
        with pytest.raises(RuntimeError, match='conjugate bit set'):
            np.asarray(t)
        with pytest.raises(RuntimeError, match='negative bit set'):
            t.imag.numpy()
        with pytest.raises(BufferError, match='conjugate bit set'):
            t.__dlpack__()
    # PyTorch exports a negated view's storage as it is (the consumer reads wrong values);
    # ours refuses, as for the conjugate bit
    with pytest.raises(BufferError, match='negative bit set'):
        x.conj().imag.__dlpack__()
    with pytest.raises(BufferError, match='conjugate bit set'):
        tp.to_dlpack(x.conj())
    np.testing.assert_array_equal(x.conj().numpy(force=True), tx.conj().numpy(force=True))
    np.testing.assert_array_equal(x.conj().resolve_conj().numpy(), tx.conj().resolve_conj().numpy())
    # the DLPack route from a resolved tensor, into torch and back
    r = torch.from_dlpack(x.conj().resolve_conj())
    assert torch.equal(r, tx.conj().resolve_conj())


def test_item_tolist_repr():
    x, tx = pair()
    y, ty = x.conj(), tx.conj()
    assert y.tolist() == ty.tolist() and y[1, 2].item() == ty[1, 2].item()
    assert y.imag.tolist() == ty.imag.tolist() and y.imag[0, 0].item() == ty.imag[0, 0].item()
    assert complex(y[0, 0]) == complex(ty[0, 0]) and float(y.imag[0, 0]) == float(ty.imag[0, 0])
    same(x.clone().fill_(y[0, 1]), tx.clone().fill_(ty[0, 1]))  # a one-element tensor as a Scalar
    same(x * y[1, 0], tx * ty[1, 0])
    assert repr(y) == repr(ty)
    assert repr(y.imag) == repr(ty.imag)
    assert str(y[0]) == str(ty[0])


def test_comparisons():
    x, _ = pair()
    y = x.conj()
    assert tp.equal(y, y.resolve_conj()) and tp.allclose(y, y.resolve_conj())
    assert not tp.equal(y, x)
    assert bool(tp.isclose(y, y.resolve_conj()).all())
    assert tp.equal(y.imag, -x.imag)


def test_save_and_load_keep_the_bits():
    x, tx = pair()
    f = io.BytesIO()
    tp.save({'x': x, 'y': x.conj()}, f)
    f.seek(0)
    d = tp.load(f)
    same(d['y'], tx.conj())
    i = io.BytesIO()
    tp.save(x.conj().imag, i)
    i.seek(0)
    same(tp.load(i), tx.conj().imag)
    i.seek(0)
    assert torch.equal(torch.load(i), tx.conj().imag)
    assert d['y'].data_ptr() == d['x'].data_ptr()
    f.seek(0)
    t = torch.load(f)  # readable by PyTorch, bits included
    assert t['y'].is_conj() and torch.equal(t['y'].resolve_conj(), tx.conj().resolve_conj())
    g = io.BytesIO()
    torch.save([tx, tx.conj()], g)
    g.seek(0)
    a, b = tp.load(g)
    same(b, tx.conj())
    assert b.data_ptr() == a.data_ptr()


# ------------------------------------------------------------------ matrix products
def _ops_seen(fn):
    seen = []

    class Log(tp.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func.name() if hasattr(func, 'name') else func))
            return func(*args, **(kwargs or {}))

    with Log():
        r = fn()
    return r, seen


@pytest.mark.parametrize('dtype', ['complex64', 'complex128'])
@pytest.mark.parametrize('f', [
    lambda a, b, m: a.mH @ b, lambda a, b, m: a.conj() @ b, lambda a, b, m: a @ b.mH, lambda a, b, m: a.mH @ b.mH,
    lambda a, b, m: m.mm(a.conj().t(), b), lambda a, b, m: m.mm(a, b.conj()),
    lambda a, b, m: m.matmul(a.mH, b), lambda a, b, m: m.addmm(b, a.mH, b),
    lambda a, b, m: m.bmm(a.expand(2, 4, 4).mH, b.expand(2, 4, 4)),
    lambda a, b, m: m.bmm(a.expand(2, 4, 4).conj(), b.expand(2, 4, 4).mH),
    lambda a, b, m: a.mH[:, 0] @ b, lambda a, b, m: a @ b.mH[:, 1], lambda a, b, m: a[0].conj() @ b[1].conj(),
    lambda a, b, m: m.addmm(b.conj(), a, b), lambda a, b, m: m.addmm(b, a.imag.to(a.dtype), b.conj().imag.to(a.dtype)),
    lambda a, b, m: m.matmul(a.expand(3, 4, 4).mH, b),
    lambda a, b, m: m.mm(a.conj(), b, out=m.zeros(4, 4, dtype=a.dtype).conj()),
    lambda a, b, m: b.conj().addmm_(a.mH, b),
])
def test_products_of_conjugate_operands(f, dtype):
    g = torch.Generator().manual_seed(0)
    ta = torch.randn(4, 4, dtype=getattr(torch, dtype), generator=g)
    tb = torch.randn(4, 4, dtype=getattr(torch, dtype), generator=g)
    a, b = tp.tensor(ta.tolist(), dtype=getattr(tp, dtype)), tp.tensor(tb.tolist(), dtype=getattr(tp, dtype))
    same(f(a, b, tp), f(ta, tb, torch), rtol=1e-5, atol=1e-5)


def test_conjugate_transpose_product_copies_nothing():
    """x.mH @ y is one mm: BLAS reads the conjugate transpose (no conj_physical first)."""
    a, b = tp.randn(8, 8, dtype=tp.complex64), tp.randn(8, 8, dtype=tp.complex64)
    r, seen = _ops_seen(lambda: tp.mm(a.mH, b))
    assert not any('conj_physical' in s for s in seen), seen
    ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
    same(r, ta.mH @ tb, rtol=1e-5, atol=1e-5)
    _, seen = _ops_seen(lambda: a.conj().conj() + 1)
    assert not any('conj_physical' in s for s in seen), seen


# ------------------------------------------------------------------ autograd
def _grad_pair(fn, data=Z):
    x = tp.tensor(data, dtype=tp.complex128, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.complex128, requires_grad=True)
    fn(x, tp).backward()
    fn(tx, torch).backward()
    np.testing.assert_allclose(np.array(x.grad.tolist()), np.array(tx.grad.tolist()), rtol=1e-10, atol=1e-12)


W = [[2 - 1j, 1 + 1j, -1 + 0.5j], [0.25j, 3, 1 - 1j]]


@pytest.mark.parametrize('fn', [
    lambda x, m: (x.conj() * m.tensor(W, dtype=x.dtype)).abs().sum(),
    lambda x, m: (x.conj() * x).real.sum(),
    lambda x, m: x.conj().imag.sum() + (x.conj().real ** 2).sum(),
    lambda x, m: (x.conj().t() @ x).abs().sum(),
    lambda x, m: (x.mH @ m.tensor(W, dtype=x.dtype)).abs().sum(),
    lambda x, m: x.conj().resolve_conj().angle().sum(),
    lambda x, m: x.conj()[1].conj_physical().abs().sum(),
    lambda x, m: m.view_as_real(x.conj().resolve_conj()).sum(),
    lambda x, m: m.einsum('ij,kj->ik', x.conj(), m.tensor(W, dtype=x.dtype)).abs().sum(),
    lambda x, m: m.linalg.matrix_power(x[:, :2].conj(), 3).abs().sum(),
])
def test_gradients(fn):
    _grad_pair(fn)


def _inplace_on_conj_view_of_a_view(x, m):
    a = x * 1
    v = a[:, :2].conj()
    v.mul_(m.tensor(W, dtype=x.dtype)[:, :2])
    return a.abs().sum()


def _inplace_then_read_view(x, m):
    a = x * 2
    c = a.conj()
    c[0].add_(1j)
    return (c.abs() + a.angle()).sum()


@pytest.mark.parametrize('fn', [_inplace_on_conj_view_of_a_view, _inplace_then_read_view])
def test_gradients_of_inplace_writes_through_conjugate_views(fn):
    _grad_pair(fn)


def test_conj_records_a_view_node():
    x = tp.tensor(Z, requires_grad=True)
    y = x.conj()
    assert y.grad_fn is not None and not y.is_leaf and y.requires_grad


def test_forward_ad():
    import tensorplay.autograd.forward_ad as fw
    import torch.autograd.forward_ad as tfw
    x, tx = pair(dtype='complex128')
    t, tt = pair(W, dtype='complex128')
    with fw.dual_level(), tfw.dual_level():
        d, td = fw.make_dual(x, t), tfw.make_dual(tx, tt)
        for f in [lambda u: u.conj() * 2, lambda u: u.conj().exp(), lambda u: (u.conj() * u).real,
                  lambda u: u.conj()[0], lambda u: u.mH @ u]:
            a, b = fw.unpack_dual(f(d)).tangent, tfw.unpack_dual(f(td)).tangent
            np.testing.assert_allclose(np.array(a.tolist()), np.array(b.tolist()), rtol=1e-12)
        assert fw.unpack_dual(d.conj()).tangent.is_conj()


# ------------------------------------------------------------------ vmap and fake tensors
def test_vmap():
    x, tx = pair()
    for f in [lambda u: u.conj() * 2, lambda u: u.conj().sum(), lambda u: u.conj() @ u, lambda u: u.conj() @ u.conj(),
              lambda u: u.conj().exp().conj()]:
        a, b = tp.func.vmap(f)(x), torch.func.vmap(f)(tx)
        np.testing.assert_allclose(np.array(a.tolist()), np.array(b.tolist()), rtol=1e-6, atol=1e-6)
    # PyTorch's vmap has no batching rule for _neg_view (conj().imag); ours batches it
    np.testing.assert_allclose(np.array(tp.func.vmap(lambda u: u.conj().imag)(x).tolist()),
                               np.array(tx.conj().imag.tolist()))


def test_fake_tensors():
    from tensorplay._subclasses import FakeTensorMode
    with FakeTensorMode():
        x = tp.empty(2, 3, dtype=tp.complex64)
        y = x.conj()
        assert y.is_conj()
        z = y + 1
        assert tuple(z.shape) == (2, 3) and z.dtype == tp.complex64 and not z.is_conj()
        w = y.mH @ x
        assert tuple(w.shape) == (3, 3)
    m = tp.empty(2, 3, dtype=tp.complex64, device='meta')
    assert m.conj().is_conj() and tuple((m.conj() * 2).shape) == (2, 3)


def test_op_handles():
    x, tx = pair()
    for name in ('conj', '_conj', 'resolve_conj', 'resolve_neg', '_neg_view', 'conj_physical', '_conj_physical'):
        ours, theirs = getattr(tp.ops.aten, name).default, getattr(torch.ops.aten, name).default
        assert str(ours._schema) == str(theirs._schema)
        same(ours(x.conj()), theirs(tx.conj()))


# ------------------------------------------------------------------ the op database
def _conj_params():
    params = []
    for op in opdb.op_db:
        for dt in opdb.COMPLEX:
            if dt in op.dtypes:
                params += [pytest.param(op, dt, form, id=f'{op.name}-{dt}-{form}') for form in op.forms
                           if form != 'operator' or op.operator is not None]
    return params


@pytest.mark.parametrize('op,dtype,form', _conj_params())
def test_opdb_with_conjugate_inputs(op, dtype, form):
    """Each complex sample with every complex tensor a conjugate view holding the same values
    (Sample layout 'conj'): outcome and values as PyTorch's with the same inputs (written
    inputs included: an in-place form returns self)."""
    checked = 0
    for base in op.sample_inputs(dtype):
        if base.layout != 'contiguous' or not op.applies(form, base):
            continue
        sample = dataclasses.replace(base, layout='conj')
        if not any(torch.as_tensor(t).is_complex() for t in sample.tensors()):
            continue
        ctx = f'{op.name} [{form}] {sample!r}'
        out_spec = _out_spec(op, sample) if form == 'out' else None
        if form == 'out' and out_spec is None:
            continue
        t_status, expected = _outcome(lambda: _run(op, form, torch, sample, out_spec))
        if t_status == 'raised':
            with pytest.raises(opdb.lib_exception(type(expected), tp)):
                _run(op, form, tp, sample, out_spec)
            continue
        actual = _run(op, form, tp, sample, out_spec)
        first = expected[0] if isinstance(expected, (tuple, list)) and expected else expected
        tol = op.tolerance(first.dtype if isinstance(first, torch.Tensor) else dtype)
        assert_matches(actual, expected, tp, tol=tol, compare_values=op.compare_values, ctx=ctx)
        checked += 1
