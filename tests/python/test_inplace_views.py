"""In-place view methods (t_, transpose_, squeeze_, unsqueeze_, as_strided_, ...), resize_ and
set_, storage sharing (share_memory_, tensorplay.multiprocessing) and the small torch / Tensor
names that came with them, each against PyTorch 2.13: values, sizes, strides, offsets,
version counters, gradients through the in-place view, error types and messages."""
import multiprocessing
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

LIBS = [torch, tp]


def _both(fn):
    """fn(lib) for torch and tensorplay."""
    return fn(torch), fn(tp)


def _outcome(fn):
    try:
        return ('ok', fn())
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return ('raised', e)


def _same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _geometry(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def _base(lib, layout):
    """A 2x1x3x1 float tensor laid out contiguously, transposed (a view with other strides)
    or sliced (an offset and steps)."""
    if layout == 'contiguous':
        return lib.arange(6, dtype=lib.float32).reshape(2, 1, 3, 1)
    if layout == 'transposed':
        return lib.arange(6, dtype=lib.float32).reshape(3, 1, 2, 1).transpose(0, 2)
    return lib.arange(30, dtype=lib.float32).reshape(5, 1, 6, 1)[1:5:2, :, ::2]


# ---------------------------------------------------------------- in-place view methods
INPLACE_VIEWS = [
    ('t_2d', lambda lib, x: x.reshape(2, 3).clone().t_()),
    ('t_1d', lambda lib, x: x.reshape(6).clone().t_()),
    ('t_0d', lambda lib, x: x.reshape(6)[0].clone().t_()),
    ('t_view', lambda lib, x: x[:, 0, :, 0].t_()),
    ('transpose_', lambda lib, x: x.transpose_(0, 2)),
    ('transpose_neg', lambda lib, x: x.transpose_(-1, 1)),
    ('transpose_same', lambda lib, x: x.transpose_(1, 1)),
    ('swapdims_', lambda lib, x: x.swapdims_(0, 3)),
    ('swapaxes_', lambda lib, x: x.swapaxes_(2, 0)),
    ('swapaxes_kw', lambda lib, x: x.swapaxes_(axis0=1, axis1=2)),
    ('squeeze_', lambda lib, x: x.squeeze_()),
    ('squeeze_dim', lambda lib, x: x.squeeze_(1)),
    ('squeeze_dim_not1', lambda lib, x: x.squeeze_(0)),
    ('squeeze_neg', lambda lib, x: x.squeeze_(-1)),
    ('squeeze_dims', lambda lib, x: x.squeeze_((1, 3))),
    ('squeeze_dims_kw', lambda lib, x: x.squeeze_(dim=(0, 1))),
    ('unsqueeze_', lambda lib, x: x.unsqueeze_(0)),
    ('unsqueeze_end', lambda lib, x: x.unsqueeze_(4)),
    ('unsqueeze_neg', lambda lib, x: x.unsqueeze_(-2)),
    ('as_strided_', lambda lib, x: x.as_strided_((2, 2), (1, 2))),
    ('as_strided_offset', lambda lib, x: x.as_strided_((3,), (1,), 2)),
    ('as_strided_fn', lambda lib, x: lib.as_strided_(x, (2, 3), (3, 1))),
    ('chain', lambda lib, x: x.squeeze_().t_().unsqueeze_(1).transpose_(0, 2)),
]


@pytest.mark.parametrize('layout', ['contiguous', 'transposed', 'strided'])
@pytest.mark.parametrize('name,fn', INPLACE_VIEWS, ids=[c[0] for c in INPLACE_VIEWS])
def test_inplace_view_metadata_matches_torch(name, fn, layout):
    def run(lib):
        x = _base(lib, layout)
        if name == 'as_strided_offset' or name == 'as_strided_fn':
            x = x.contiguous() if layout != 'contiguous' else x
        v0, ptr = x._version, x.data_ptr() - x.storage_offset() * x.element_size()
        storage = x.untyped_storage().data_ptr()
        out = fn(lib, x)
        return (out is x or out.data_ptr() == x.data_ptr(), _geometry(out), out.tolist(),
                out._version - v0 if out is x else None, x.untyped_storage().data_ptr() == storage,
                ptr == x.untyped_storage().data_ptr() or out is not x)
    t, ours = _both(run)
    assert ours == t


def test_inplace_view_returns_self_and_keeps_the_storage():
    for lib in LIBS:
        x = lib.arange(6.).reshape(2, 3)
        v = x.view(6)  # an alias made before: sees the writes, not the geometry
        assert x.t_() is x and x.shape == (3, 2) and x.stride() == (1, 3)
        x.mul_(2)
        assert v.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0] and v.shape == (6,)
        assert x._version == v._version == 2
        assert lib.as_strided_(x, (6,), (1,)) is x and x.tolist() == v.tolist()


INPLACE_VIEW_ERRORS = [
    ('t_3d', lambda lib: lib.zeros(2, 3, 4).t_()),
    ('transpose_range', lambda lib: lib.zeros(2, 3, 4).transpose_(0, 5)),
    ('transpose_0d', lambda lib: lib.tensor(1.).transpose_(0, 1)),
    ('squeeze_range', lambda lib: lib.zeros(2, 3, 4).squeeze_(5)),
    ('squeeze_dims_repeat', lambda lib: lib.zeros(1, 3).squeeze_((0, 0))),
    ('unsqueeze_range', lambda lib: lib.zeros(2, 3, 4).unsqueeze_(5)),
    ('as_strided_oob', lambda lib: lib.zeros(2, 3).as_strided_((5, 5), (5, 1))),
    ('as_strided_neg_stride', lambda lib: lib.zeros(2, 3).as_strided_((2,), (-1,))),
    ('as_strided_len', lambda lib: lib.zeros(2, 3).as_strided_((2, 3), (1,))),
    ('t_bad_type', lambda lib: lib.as_strided_(3, (1,), (1,))),
]


@pytest.mark.parametrize('name,fn', INPLACE_VIEW_ERRORS, ids=[c[0] for c in INPLACE_VIEW_ERRORS])
def test_inplace_view_errors_match_torch(name, fn):
    (ts, te), (os_, oe) = _outcome(lambda: fn(torch)), _outcome(lambda: fn(tp))
    assert ts == os_ == 'raised', (te, oe)
    assert type(oe) is type(te), (te, oe)


def test_inplace_view_error_messages():
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        tp.zeros(2, 3, 4).t_()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 5\)"):
        tp.zeros(2, 3, 4).transpose_(0, 5)
    # a failed op leaves the tensor as it was
    x = tp.zeros(2, 3, 4)
    with pytest.raises(IndexError):
        x.unsqueeze_(7)
    assert x.shape == (2, 3, 4) and x._version == 0


# ---------------------------------------------------------------- autograd
def _grad_fn_name(t):
    return None if t.grad_fn is None else t.grad_fn.name().replace('tensorplay::', 'torch::')


@pytest.mark.parametrize('name,fn', INPLACE_VIEWS, ids=[c[0] for c in INPLACE_VIEWS])
def test_gradient_through_inplace_view_on_a_non_leaf(name, fn):
    def run(lib):
        a = lib.arange(6, dtype=lib.float64).reshape(2, 1, 3, 1).requires_grad_()
        b = a * 1.5  # a non-leaf
        out = fn(lib, b)
        w = lib.arange(out.numel(), dtype=lib.float64).reshape(out.shape) + 1
        (out * w).sum().backward()
        return _grad_fn_name(out) if name != 'chain' else None, a.grad.tolist()
    t, ours = _both(run)
    assert ours == t


INPLACE_ON_VIEWS = [
    ('t_', lambda v: v.t_(), lambda b: b[:, 1:]),
    ('transpose_', lambda v: v.transpose_(0, 1), lambda b: b[1:]),
    ('unsqueeze_', lambda v: v.unsqueeze_(0), lambda b: b[0]),
    ('squeeze_', lambda v: v.squeeze_(), lambda b: b[:1]),
    ('as_strided_', lambda v: v.as_strided_((2,), (3,), 1), lambda b: b[:, 1:]),
]


@pytest.mark.parametrize('name,op,view', INPLACE_ON_VIEWS, ids=[c[0] for c in INPLACE_ON_VIEWS])
def test_inplace_view_on_a_view_of_a_non_leaf(name, op, view):
    """The view keeps its base; its history is the op's node (no CopySlices on the base);
    later in-place writes through it, and other views of the base, still get the right
    gradients."""
    def run(lib):
        a = lib.arange(1, 7, dtype=lib.float64).reshape(2, 3).requires_grad_()
        b = a * 2
        other = b[:, 0]  # a view made before
        v = view(b)
        op(v)
        info = (_grad_fn_name(v), _same_storage(v, b), _grad_fn_name(b), _geometry(v))
        v.mul_(lib.arange(1, v.numel() + 1, dtype=lib.float64).reshape(v.shape))
        info += (_grad_fn_name(b), _grad_fn_name(v), b.tolist())
        loss = (b * b).sum() + (v * 3).sum() + (other * 5).sum()
        loss.backward()
        return info, a.grad.tolist()
    t, ours = _both(run)
    assert ours == t


def test_inplace_view_rules_for_leaves():
    for lib in LIBS:
        a = lib.zeros(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
            a.t_()
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place operation."):
            a[0:1].unsqueeze_(0)
        with lib.no_grad():
            assert a.t_() is a  # allowed without grad mode: the leaf stays a leaf
        assert a.shape == (3, 2) and a.is_leaf and a.requires_grad and a.grad_fn is None
        a.sum().backward()
        assert a.grad.shape == (3, 2)


def test_inplace_view_refused_on_inference_tensors():
    for lib in LIBS:
        with lib.inference_mode():
            x = lib.zeros(2, 3)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            x.t_()
        with lib.inference_mode():
            y = lib.zeros(2, 3)
            assert y.t_().shape == (3, 2)


def test_double_backward_through_t_():
    def run(lib):
        a = lib.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=lib.float64, requires_grad=True)
        b = a * a
        b.t_()
        g, = lib.autograd.grad((b * b).sum(), a, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), a)
        return g.tolist(), gg.tolist()
    t, ours = _both(run)
    assert ours == t


def test_forward_ad_tangent_takes_the_inplace_view():
    def run(lib):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            tangent = lib.arange(6, dtype=lib.float64).reshape(2, 3)
            x = fa.make_dual(lib.ones(2, 3, dtype=lib.float64), tangent)
            x.t_()
            t1 = fa.unpack_dual(x).tangent
            y = x * 2
            v = y[0]
            v.unsqueeze_(0)
            t2 = fa.unpack_dual(v).tangent
            z = (v * v).sum()
            return (tuple(t1.shape), t1.tolist(), tuple(t2.shape), t2.tolist(),
                    fa.unpack_dual(z).tangent.item())
    t, ours = _both(run)
    assert ours == t


def test_fake_tensor_and_dispatch_modes_see_inplace_views():
    from tensorplay._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = tp.empty(2, 3, 4)
        assert x.transpose_(0, 2) is x and x.shape == (4, 3, 2) and x.stride() == (1, 4, 12)
        x.resize_(5, 5)
        assert x.shape == (5, 5)
    seen = []

    class Log(tp.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))
    y = tp.zeros(2, 3)
    with Log():
        y.t_()
        y.unsqueeze_(0)
        y.swapdims_(0, 1)
    assert seen == ['aten.t_.default', 'aten.unsqueeze_.default', 'aten.transpose_.default']
    assert y.shape == (3, 1, 2)


VMAPPED = [
    ('unsqueeze_', lambda x: x.clone().unsqueeze_(0), (2, 3)),
    ('t_', lambda x: x.clone().t_(), (2, 3, 4)),
    ('t_vector', lambda x: x.clone().t_(), (2, 3)),
    ('transpose_neg', lambda x: x.clone().transpose_(0, -1).contiguous(), (2, 3, 4)),
    ('squeeze_all', lambda x: x.clone().unsqueeze_(-1).squeeze_(), (2, 1, 3)),
    ('squeeze_dim', lambda x: x.clone().squeeze_(0), (2, 1, 3)),
    ('squeeze_dims', lambda x: x.clone().squeeze_((0, -1)), (2, 1, 3, 1)),
    ('swapdims_', lambda x: x.clone().swapdims_(0, 1) * 2, (2, 3, 4)),
]


@pytest.mark.parametrize('name,fn,shape', VMAPPED, ids=[c[0] for c in VMAPPED])
def test_vmap_of_inplace_views_matches_torch(name, fn, shape):
    def run(lib):
        r = lib.func.vmap(fn)(lib.arange(float(np.prod(shape))).reshape(shape))
        return tuple(r.shape), r.tolist()
    t, ours = _both(run)
    assert ours == t


def test_vmap_of_as_strided_():
    # each sample's view starts at its own slice, as as_strided's rule does (PyTorch's vmap
    # falls back to a per-sample loop here and hands the inputs back unchanged)
    x = tp.arange(24.).reshape(2, 3, 4)
    r = tp.func.vmap(lambda s: s.clone().as_strided_((2,), (2,), 1))(x)
    assert r.tolist() == tp.func.vmap(lambda s: s.as_strided((2,), (2,), 1))(x).tolist() == \
        [[1.0, 3.0], [13.0, 15.0]]


# ---------------------------------------------------------------- resize_
RESIZES = [
    ('grow', lambda lib, x: x.resize_(2, 5)),
    ('shrink', lambda lib, x: x.resize_(1)),
    ('same_numel', lambda lib, x: x.resize_(3, 2)),
    ('tuple', lambda lib, x: x.resize_((2, 3))),
    ('list', lambda lib, x: x.resize_([4])),
    ('size', lambda lib, x: x.resize_(x.new_zeros(2, 2).shape)),
    ('zero', lambda lib, x: x.resize_(0)),
    ('zero_dims', lambda lib, x: x.resize_(3, 0, 2)),
    ('scalar', lambda lib, x: x.resize_(())),
    ('same_sizes_keep_strides', lambda lib, x: x.t().resize_(3, 2)),
    ('transposed_new_sizes', lambda lib, x: x.t().resize_(2, 3)),
    ('offset', lambda lib, x: x[1:].resize_(3, 5)),
    ('channels_last', lambda lib, x: x.resize_(2, 3, 4, 5, memory_format=lib.channels_last)),
    ('contiguous_format', lambda lib, x: x.t().resize_(3, 2, memory_format=lib.contiguous_format)),
    ('channels_last_3d', lambda lib, x: x.resize_(1, 2, 2, 2, 2, memory_format=lib.channels_last_3d)),
    ('expanded_same', lambda lib, x: x[:1].expand(3).resize_(3)),
    ('expanded_grow', lambda lib, x: x[:1].expand(3).resize_(4)),
    ('int64', lambda lib, x: lib.arange(6).resize_(4, 4)),
]


def _resize_run(lib, fn):
    x = lib.arange(6, dtype=lib.float32).reshape(6)
    base = x
    v0 = base._version
    out = fn(lib, x)
    nbytes = out.untyped_storage().nbytes()
    kept = min(out.numel(), 6 - out.storage_offset())  # elements that were there before
    flat = out.contiguous().reshape(-1)[:max(kept, 0)].tolist() if out.is_contiguous() else None
    return (_geometry(out), nbytes, flat, out._version - v0, str(out.dtype).split('.')[-1])


@pytest.mark.parametrize('name,fn', RESIZES, ids=[c[0] for c in RESIZES])
def test_resize_matches_torch(name, fn):
    t, ours = _both(lambda lib: _resize_run(lib, fn))
    assert ours == t


def test_resize_grows_the_storage_every_view_sees():
    def run(lib):
        a = lib.arange(6.)
        b = a[:3]
        ptr = a.data_ptr()
        b.resize_(10)
        b[3:].fill_(-1)
        same = a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        return a.tolist(), b[:6].tolist(), same, a.data_ptr() != ptr, a._version, b._version
    t, ours = _both(run)
    assert ours == t


RESIZE_ERRORS = [
    ('requires_grad', lambda lib: lib.zeros(3, requires_grad=True).resize_(4), 'cannot resize variables that require grad'),
    ('requires_grad_same_size', lambda lib: lib.zeros(3, requires_grad=True).resize_(3), 'cannot resize variables that require grad'),
    ('non_leaf', lambda lib: (lib.zeros(3, requires_grad=True) * 2).resize_(4), 'cannot resize variables that require grad'),
    ('numpy_grow', lambda lib: lib.from_numpy(np.zeros(3, np.float32)).resize_(5), 'Trying to resize storage that is not resizable'),
    ('negative', lambda lib: lib.zeros(3).resize_(2, -3), None),
    ('preserve', lambda lib: lib.zeros(3).resize_(2, 3, memory_format=lib.preserve_format), 'Unsupported memory formatPreserve'),
    ('channels_last_rank', lambda lib: lib.zeros(3).resize_(2, 3, memory_format=lib.channels_last), 'required rank 4 tensor to use channels_last format'),
    ('no_size', lambda lib: lib.zeros(3).resize_(), None),
    ('inference', lambda lib: _inference(lib).resize_(5), 'Inplace update to inference tensor outside InferenceMode'),
]


def _inference(lib):
    with lib.inference_mode():
        return lib.zeros(3)


@pytest.mark.parametrize('name,fn,msg', RESIZE_ERRORS, ids=[c[0] for c in RESIZE_ERRORS])
def test_resize_errors_match_torch(name, fn, msg):
    (ts, te), (os_, oe) = _outcome(lambda: fn(torch)), _outcome(lambda: fn(tp))
    assert ts == os_ == 'raised', (te, oe)
    assert type(oe) is type(te), (te, oe)
    if msg:
        assert msg in str(te) and msg in str(oe)


def test_resize_refused_even_without_grad_mode():
    for lib in LIBS:
        with lib.no_grad():
            with pytest.raises(RuntimeError, match='cannot resize variables that require grad'):
                lib.zeros(3, requires_grad=True).resize_(4)


def test_resize_numpy_shrink_and_same_size_are_allowed():
    for lib in LIBS:
        x = lib.from_numpy(np.arange(3, dtype=np.float32))
        assert x.resize_(2).tolist() == [0.0, 1.0]
        assert x.resize_(3).tolist() == [0.0, 1.0, 2.0]


def test_resize_on_meta():
    for lib in LIBS:
        x = lib.empty(2, 3, device='meta')
        x.resize_(4, 5)
        assert x.shape == (4, 5) and x.untyped_storage().nbytes() == 80


RESIZE_AS = [
    ('method', lambda lib, x: x.resize_as_(lib.zeros(2, 2).t())),
    ('function', lambda lib, x: lib.resize_as_(x, lib.zeros(2, 3))),
    ('channels_last_template', lambda lib, x: x.resize_as_(lib.zeros(2, 3, 4, 5).to(memory_format=lib.channels_last))),
    ('preserve', lambda lib, x: x.resize_as_(lib.zeros(2, 3, 4, 5).to(memory_format=lib.channels_last),
                                             memory_format=lib.preserve_format)),
    ('preserve_contiguous', lambda lib, x: x.resize_as_(lib.zeros(2, 3).t(), memory_format=lib.preserve_format)),
    ('channels_last_kw', lambda lib, x: x.resize_as_(lib.zeros(2, 3, 4, 5), memory_format=lib.channels_last)),
]


@pytest.mark.parametrize('name,fn', RESIZE_AS, ids=[c[0] for c in RESIZE_AS])
def test_resize_as_matches_torch(name, fn):
    def run(lib):
        x = lib.arange(3, dtype=lib.float32)
        v0 = x._version
        out = fn(lib, x)
        return out is x, _geometry(out), out._version - v0, out.as_strided((3,), (1,), 0).tolist()
    t, ours = _both(run)
    assert ours == t


def test_resize_as_errors():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match='cannot resize variables that require grad'):
            lib.zeros(3, requires_grad=True).resize_as_(lib.zeros(2))
        with pytest.raises(TypeError):
            lib.zeros(3).resize_as_(3)


def test_deprecated_resize_and_resize_as():
    def run(lib):
        x = lib.arange(6., requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            r = x.resize(2, 3)
            s = x.resize_as(lib.zeros(3, 2))
        msgs = [str(m.message) for m in w]
        (r * lib.arange(6.).reshape(2, 3)).sum().backward()
        s.sum().backward()
        return (msgs, _geometry(r), r.tolist(), _geometry(s), _grad_fn_name(r), x.grad.tolist(),
                _same_storage(r, x), x._version)
    t, ours = _both(run)
    assert ours == t
    for lib in LIBS:
        with pytest.warns(UserWarning), pytest.raises(RuntimeError) as e:
            lib.arange(6.).resize(2, 4)
        assert str(e.value) == (
            "requested resize to 2x4 (8 elements in total), but the given tensor has a size of 6 "
            "(6 elements). autograd's resize can only change the shape of a given tensor, while "
            "preserving the number of elements. ")


# ---------------------------------------------------------------- set_ and is_set_to
SETS = [
    ('tensor', lambda lib, x, y, s: x.set_(y)),
    ('tensor_kw', lambda lib, x, y, s: x.set_(source=y)),
    ('tensor_view', lambda lib, x, y, s: x.set_(y[1:, ::2])),
    ('tensor_offset', lambda lib, x, y, s: x.set_(y, 2, (2, 2), (1, 2))),
    ('tensor_offset_contig', lambda lib, x, y, s: x.set_(y, 1, (2, 2))),
    ('storage', lambda lib, x, y, s: x.set_(s)),
    ('storage_offset', lambda lib, x, y, s: x.set_(s, 2, (2, 2), (1, 2))),
    ('storage_kw', lambda lib, x, y, s: x.set_(source=s, storage_offset=1, size=(2,), stride=(2,))),
    ('storage_grows', lambda lib, x, y, s: x.set_(s, 8, (2, 2), (1, 2))),
    ('storage_other_dtype', lambda lib, x, y, s: x.double().set_(s)),
    ('empty', lambda lib, x, y, s: x.set_()),
    ('self', lambda lib, x, y, s: x.set_(x)),
]


@pytest.mark.parametrize('name,fn', SETS, ids=[c[0] for c in SETS])
def test_set_matches_torch(name, fn):
    def run(lib):
        x = lib.zeros(3)
        y = lib.arange(6.).reshape(2, 3)
        s = lib.arange(10.).untyped_storage()
        v0 = x._version
        out = fn(lib, x, y, s)
        vals = out.tolist() if name != 'storage_grows' else out[:, 0].tolist()
        return (out is x or name == 'storage_other_dtype', _geometry(out), vals, out._version > v0,
                out.untyped_storage().nbytes(), out.is_set_to(y), str(out.dtype).split('.')[-1])
    t, ours = _both(run)
    assert ours == t


def test_set_shares_memory_and_moves_the_version():
    def run(lib):
        x, y = lib.zeros(3), lib.arange(6.).reshape(2, 3)
        y.add_(1)
        vx, vy = x._version, y._version
        x.set_(y)
        moved = (x._version > vx, y._version >= vy)
        x.add_(1)
        return y.tolist(), x.is_set_to(y), y.is_set_to(x), moved, x._version == y._version
    t, ours = _both(run)
    # PyTorch keeps one version counter per tensor (x: 1 then 2, y: 2): ours lives in the
    # storage x now shares, so the two read the same counter (Note [Version counter])
    assert ours[:4] == t[:4] and ours[4] is True


SET_ERRORS = [
    ('dtype', lambda lib: lib.zeros(3).set_(lib.zeros(2, dtype=lib.int64)),
     'Could not set tensor of type long int to a tensor of type float'),
    ('device', lambda lib: lib.zeros(3).set_(lib.zeros(3, device='meta')),
     'Attempted to set the storage of a tensor on device "cpu" to a storage on different device "meta".'),
    ('negative_offset', lambda lib: lib.zeros(3).set_(lib.arange(10.).untyped_storage(), -1, (2,)),
     'Tensor: invalid storage offset -1'),
    ('leaf', lambda lib: lib.zeros(3, requires_grad=True).set_(lib.zeros(2)),
     'a leaf Variable that requires grad is being used in an in-place operation.'),
    ('numpy_grow', lambda lib: lib.zeros(3).set_(lib.from_numpy(np.zeros(2, np.float32)), 0, (5,)),
     'Trying to resize storage that is not resizable'),
    ('bad_source', lambda lib: lib.zeros(3).set_(3), None),
]


@pytest.mark.parametrize('name,fn,msg', SET_ERRORS, ids=[c[0] for c in SET_ERRORS])
def test_set_errors_match_torch(name, fn, msg):
    (ts, te), (os_, oe) = _outcome(lambda: fn(torch)), _outcome(lambda: fn(tp))
    assert ts == os_ == 'raised', (te, oe)
    assert type(oe) is type(te), (te, oe)
    if msg:
        assert msg in str(te) and msg in str(oe), (te, oe)


def test_set_autograd():
    def run(lib):
        src = lib.ones(4, requires_grad=True)
        x = lib.zeros(3)
        x.set_(src)
        a = lib.zeros(3, requires_grad=True)
        b = a * 2
        b.set_(lib.ones(4))
        c = lib.zeros(3, requires_grad=True)
        with lib.no_grad():
            c.set_(lib.ones(4))
        return (x.requires_grad, _grad_fn_name(x), b.requires_grad, b.is_leaf, _grad_fn_name(b),
                c.tolist(), c.requires_grad, c.is_leaf)
    t, ours = _both(run)
    assert ours == t
    a = tp.zeros(3, requires_grad=True)
    b = a * 2
    b.set_(tp.ones(4))
    # PyTorch raises RuntimeError("derivative for set_ is not implemented"); TensorPlay's
    # nodes for ops without a derivative raise NotImplementedError
    with pytest.raises(NotImplementedError, match="the derivative for 'set_' is not implemented"):
        b.sum().backward()


def test_set_on_a_view_makes_it_a_plain_tensor():
    def run(lib):
        a = lib.arange(6., requires_grad=True)
        b = a * 1
        v = b[2:]
        with lib.no_grad():
            v.set_(lib.arange(3.))
        return v.tolist(), b.tolist()
    t, ours = _both(run)
    assert ours == t


def test_is_set_to():
    for lib in LIBS:
        a = lib.zeros(6)
        assert not lib.zeros(3).is_set_to(lib.zeros(3))
        assert a[:3].is_set_to(a[:3]) and a.is_set_to(a)
        assert not a.view(2, 3).is_set_to(a) and not a[1:].is_set_to(a[:5])
        with pytest.raises(TypeError):
            a.is_set_to(3)


# ---------------------------------------------------------------- shared memory
def test_share_memory_matches_torch():
    def run(lib):
        x = lib.arange(6.).reshape(2, 3)
        v = x[1]
        before = (x.is_shared(), v.is_shared())
        assert x.share_memory_() is x
        after = (x.is_shared(), v.is_shared(), x._version)
        v.fill_(7)
        again = x.share_memory_() is x
        meta = lib.zeros(2, device='meta').is_shared()
        rg = lib.zeros(2, requires_grad=True).share_memory_().requires_grad
        return before, after, x.tolist(), again, meta, rg, x.resize_(1).tolist()
    t, ours = _both(run)
    assert ours == t


def test_shared_tensors_cannot_grow():
    x = tp.zeros(3).share_memory_()
    with pytest.raises(RuntimeError, match='Trying to resize storage that is not resizable'):
        x.resize_(10)
    with pytest.raises(RuntimeError, match='only available on CPU'):
        tp.zeros(2, device='meta').share_memory_()


def test_module_share_memory():
    m = tp.nn.Linear(2, 3)
    assert m.share_memory() is m
    assert all(p.is_shared() for p in m.parameters())


def _child_writes(q_in, q_out):
    import tensorplay  # noqa: F401  (the child unpickles tensors)
    t, view, param = q_in.get()
    t.add_(1)
    view.fill_(-5)
    q_out.put((t.is_shared(), t.storage_offset(), tuple(t.shape), t.stride(), view.is_set_to(t[1]),
               tensorplay._C._storage_id(view) == tensorplay._C._storage_id(t),
               type(param).__name__, param.requires_grad, param.tolist()))
    q_in.get()  # wait until the parent has read the data


@pytest.mark.parametrize('method', ['spawn', 'fork'])
def test_tensors_sent_through_multiprocessing_share_memory(method):
    import tensorplay.multiprocessing as mp
    assert mp.get_sharing_strategy() == 'file_descriptor'
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_writes, args=(q_in, q_out))
    p.start()
    base = tp.arange(12.).reshape(3, 4)
    t = base[:, 1:]
    param = tp.nn.Parameter(tp.ones(2))
    q_in.put((t, t[1], param))
    result = q_out.get(timeout=60)
    q_in.put(None)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert result == (True, 1, (3, 3), (4, 1), True, True, 'Parameter', True, [1.0, 1.0])
    # the child's writes are the parent's: the sender's storage moved into shared memory
    assert base.is_shared()
    assert base.tolist() == [[0.0, 2.0, 3.0, 4.0], [4.0, -5.0, -5.0, -5.0], [8.0, 10.0, 11.0, 12.0]]


def test_non_leaf_refused_by_multiprocessing():
    import tensorplay.multiprocessing as mp  # noqa: F401  (registers the reducers)
    from multiprocessing.reduction import ForkingPickler
    x = tp.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match='Cowardly refusing to serialize non-leaf tensor'):
        ForkingPickler.dumps(x)


def test_untyped_storage_resize_and_share():
    for lib in LIBS:
        x = lib.arange(4.)
        s = x.untyped_storage()
        s.resize_(32)
        assert s.nbytes() == 32 and x.tolist() == [0.0, 1.0, 2.0, 3.0]
        s.resize_(8)
        assert x.untyped_storage().nbytes() == 8
        assert not s.is_shared()
        s.share_memory_()
        assert s.is_shared() and x.is_shared()


# ---------------------------------------------------------------- small names
@pytest.mark.skipif(not hasattr(torch.Tensor, 'const_data_ptr'), reason='the reference PyTorch predates Tensor.const_data_ptr (the GPU machine has 2.11)')
def test_const_data_ptr():
    for lib in LIBS:
        a = lib.arange(6.)
        assert a.const_data_ptr() == a.data_ptr()
        assert a[2:].const_data_ptr() - a.data_ptr() == 8


DIM_ORDERS = [
    ('contiguous', lambda lib: lib.empty(2, 3, 5, 7), {}),
    ('transposed', lambda lib: lib.empty(2, 3, 5, 7).transpose(1, 2), {}),
    ('channels_last', lambda lib: lib.empty(2, 3, 5, 7).to(memory_format=lib.channels_last), {}),
    ('size_one', lambda lib: lib.empty(1, 2, 3, 4), {}),
    ('size_one_check', lambda lib: lib.empty(1, 2, 3, 4), {'ambiguity_check': True}),
    ('size_one_formats', lambda lib: lib.empty(1, 2, 3, 4),
     {'ambiguity_check': 'formats'}),
    ('0d', lambda lib: lib.tensor(1.), {}),
    ('1d', lambda lib: lib.empty(4), {}),
    ('permuted', lambda lib: lib.empty(2, 3, 4).permute(2, 0, 1), {'ambiguity_check': True}),
    ('bad_check', lambda lib: lib.empty(2, 3), {'ambiguity_check': 'ILLEGAL'}),
]


@pytest.mark.parametrize('name,make,kw', DIM_ORDERS, ids=[c[0] for c in DIM_ORDERS])
def test_dim_order_matches_torch(name, make, kw):
    def run(lib):
        k = dict(kw)
        if k.get('ambiguity_check') == 'formats':
            k['ambiguity_check'] = [lib.contiguous_format, lib.channels_last]
        return _outcome(lambda: make(lib).dim_order(**k))
    (ts, tv), (os_, ov) = _both(run)
    assert ts == os_
    if ts == 'ok':
        assert ov == tv
    else:
        assert type(ov) is type(tv) and str(ov) == str(tv)


def test_name_is_none():
    for lib in LIBS:
        assert lib.zeros(2).name is None and (lib.zeros(2, requires_grad=True) * 2).name is None
        with pytest.raises(AttributeError):
            lib.zeros(2).name = 'x'


def test_module_load():
    for lib in LIBS:
        p = lib.zeros(3)
        other = lib.ones(3, requires_grad=True)
        r = p.module_load(other)
        assert r is not p and r is not other and p.tolist() == [1.0, 1.0, 1.0] and not r.requires_grad
        r2 = p.module_load(other * 2, assign=True)
        assert r2.tolist() == [2.0, 2.0, 2.0] and not r2.requires_grad


@pytest.mark.skipif(not hasattr(torch, 'thread_safe_generator'), reason='the reference PyTorch predates torch.thread_safe_generator (the GPU machine has 2.11)')
def test_top_level_small_names():
    for lib in LIBS:
        assert lib.legacy_contiguous_format is lib.contiguous_format
        assert not lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled()
        lib.set_warn_always(False)
        assert lib.is_anomaly_check_nan_enabled()
        with lib.autograd.detect_anomaly(check_nan=False):
            assert not lib.is_anomaly_check_nan_enabled()
        assert lib.is_anomaly_check_nan_enabled()
        assert lib.thread_safe_generator() is None
        assert issubclass(lib.AcceleratorError, RuntimeError)
        assert isinstance(lib.get_num_interop_threads(), int) and lib.get_num_interop_threads() > 0
        s = lib.parse_schema('aten::t_(Tensor(a!) self) -> Tensor(a!)')
        assert str(s) == 'aten::t_(Tensor(a!) self) -> Tensor(a!)'


def test_num_interop_threads_set_once():
    # in a fresh process: PyTorch's count may be set once, before any inter-op work
    code = (
        "import {lib} as L\n"
        "try:\n    L.set_num_interop_threads(0)\nexcept RuntimeError as e:\n    print('E', e)\n"
        "L.set_num_interop_threads(3)\nprint(L.get_num_interop_threads())\n"
        "try:\n    L.set_num_interop_threads(3)\nexcept RuntimeError as e:\n    print('E', e)\n")
    import subprocess
    import sys
    outs = [subprocess.run([sys.executable, '-c', code.format(lib=name)], capture_output=True,
                           text=True, check=True).stdout for name in ('torch', 'tensorplay')]
    assert outs[1] == outs[0]


def test_stream_and_event_on_cpu():
    for lib in LIBS:
        s = lib.Stream('cpu')
        assert s == lib.Stream('cpu') and hash(s) == hash(lib.Stream('cpu'))
        # no device: the current accelerator's (a CUDA stream where CUDA is), else the CPU's
        assert lib.Stream().device.type == ('cuda' if lib.cuda.is_available() else 'cpu')
        assert s.device == lib.device('cpu') and s.device_type == 0 and s.device_index == -1
        assert s.stream_id == 0 and s.query() and s.synchronize() is None
        if lib is tp or hasattr(s, 'is_capturing'):  # torch 2.11 (the GPU machine's) lacks it
            assert not s.is_capturing()
        with s:
            pass
        e = lib.Event()
        assert e.device == lib.device('cpu') and e.query() and e.synchronize() is None and e.wait() is None
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            e.record()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.record_event()
        with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'."):
            e.elapsed_time(lib.Event())
        assert repr(s).endswith('Stream device_type=cpu, device_index=-1, stream_id=0')
        assert repr(e).endswith('Event device_type=cpu, device_index=-1, event_flag=0, event_id=0')


def test_windows_is_signal_windows():
    for lib in LIBS:
        assert lib.windows is lib.signal.windows
    for name, kw in [('hann', {}), ('hamming', {'sym': False}), ('blackman', {}), ('bartlett', {}),
                     ('cosine', {}), ('gaussian', {'std': 0.7}), ('exponential', {'tau': 2.0}),
                     ('kaiser', {'beta': 8.0}), ('nuttall', {}),
                     ('general_hamming', {'alpha': 0.6}), ('general_cosine', {'a': [0.5, 0.3, 0.2]})]:
        for m in (0, 1, 7, 8):
            t = getattr(torch.signal.windows, name)(m, **kw)
            o = getattr(tp.signal.windows, name)(m, **kw)
            np.testing.assert_allclose(np.array(o.tolist()), t.numpy(), rtol=1e-6, atol=1e-7,
                                       err_msg=f'{name}({m})')
            assert str(o.dtype).split('.')[-1] == str(t.dtype).split('.')[-1]


def test_hash_tensor_matches_torch():
    cases = [
        (lambda lib: lib.tensor([1.1918, -1.1813, 0.3373]).reshape(1, 3), {}),
        (lambda lib: lib.arange(8.).reshape(2, 4), {'dim': 1}),
        (lambda lib: lib.arange(24).reshape(2, 3, 4), {'dim': (0, 2), 'keepdim': True}),
        (lambda lib: lib.tensor([True, False, True]), {}),
        (lambda lib: lib.tensor([-0.0, 0.0, 1.5], dtype=lib.float16), {}),
        (lambda lib: lib.zeros(0, 3), {'dim': 1}),
        (lambda lib: lib.tensor(3.), {}),
        (lambda lib: lib.tensor([1, 2], dtype=lib.int8), {}),
    ]
    for make, kw in cases:
        t = torch.hash_tensor(make(torch), **kw)
        o = tp.hash_tensor(make(tp), **kw)
        assert tuple(o.shape) == tuple(t.shape)
        # PyTorch's result is uint64; ours holds the same 64 bits as int64 (no uint64 dtype)
        assert o.tolist() == t.view(torch.int64).tolist()
        assert make(tp).hash_tensor(**kw).tolist() == o.tolist()
    for lib in LIBS:
        with pytest.raises(IndexError, match='Expected reduction dim 0 to have non-zero size'):
            lib.hash_tensor(lib.zeros(0, 3), 0)
        with pytest.raises(RuntimeError, match='Expected reduction dim to be specified'):
            lib.hash_tensor(lib.zeros(0, 3))
        with pytest.raises(RuntimeError, match='Unknown hash_tensor mode: 1'):
            lib.hash_tensor(lib.zeros(3), mode=1)


def test_slice_inverse_matches_torch():
    def run(lib):
        big = lib.arange(6., requires_grad=True)
        y = big * 1
        ys = y[1:4]
        r = lib.slice_inverse(ys, y, 0, 1, 4)
        info = (_same_storage(r, y), _geometry(r), r.tolist(), _grad_fn_name(r))
        r.backward(lib.arange(6.) * 10)
        m = ys.slice_inverse(y, 0, 1, 4)
        return info, big.grad.tolist(), _geometry(m)
    t, ours = _both(run)
    assert ours == t
    for lib in LIBS:
        with pytest.raises(RuntimeError, match='out of bounds for storage'):
            lib.slice_inverse(lib.arange(3.), lib.zeros(6), 0, 1, 4)


def test_grad_dtype():
    def run(lib):
        out = []
        x = lib.tensor([1., 2.], requires_grad=True)
        out.append(x.grad_dtype)
        x.grad_dtype = lib.float64
        (x * 2).sum().backward()
        out += [x.grad.tolist(), x.grad.dtype, x.grad_dtype]
        y = lib.tensor([1., 2.], requires_grad=True)
        y.grad_dtype = None
        y.backward(lib.tensor([1., 2.], dtype=lib.float64))
        out += [y.grad_dtype, y.grad.dtype]
        z = lib.tensor([1., 2.], requires_grad=True)
        z.backward(lib.tensor([1., 2.], dtype=lib.float64))
        out.append(z.grad.dtype)
        h = lib.tensor([1., 2.], requires_grad=True)
        h.grad_dtype = lib.float16
        (h * 2).sum().backward()
        (h * 2).sum().backward()
        out += [h.grad.tolist(), h.grad.dtype]
        out.append(lib.zeros(3, dtype=lib.int64).grad_dtype)
        x.grad = None
        x.grad_dtype = lib.int64
        out.append(x.grad_dtype)
        out.append(x.detach().grad_dtype)
        return [str(v).split('.')[-1] for v in out]
    t, ours = _both(run)
    assert ours == t
    for lib in LIBS:
        x = lib.tensor([1., 2.], requires_grad=True)
        with pytest.raises(RuntimeError, match='grad_dtype can only be accessed on leaf tensors.'):
            (x * 2).grad_dtype
        with pytest.raises(RuntimeError, match='grad_dtype can only be set on leaf tensors.'):
            (x * 2).grad_dtype = lib.float64
        with pytest.raises(RuntimeError, match='grad_dtype must be a torch.dtype or None, but got int'):
            x.grad_dtype = 3
        x.grad_dtype = lib.float64
        with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'float' to a tensor with grad_dtype 'Double'"):
            x.grad = lib.zeros(2)


@pytest.mark.skipif(not hasattr(torch.optim, 'swap_in_optimizer_params_and_state'), reason='the reference PyTorch predates optim.swap_in_optimizer_params_and_state (the GPU machine has 2.11)')
def test_swap_in_optimizer_params_and_state():
    def run(lib):
        model = lib.nn.Linear(2, 1)
        with lib.no_grad():
            model.weight.fill_(1.0)
            model.bias.fill_(0.0)
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        live = [p.detach().clone() for p in model.parameters()]
        osd = opt.state_dict()
        osd = {'state': {k: {n: v.clone() if isinstance(v, lib.Tensor) else v for n, v in s.items()}
                         for k, s in osd['state'].items()},
               'param_groups': [dict(g) for g in osd['param_groups']]}
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        grads = [p.grad.clone() for p in model.parameters()]
        for p, g in zip(params.values(), grads):
            p.grad = g
        with lib.optim.swap_in_optimizer_params_and_state(opt, params, osd):
            inside = (opt.param_groups[0]['params'][0] is params['weight'])
            opt.step()
        after = [p.detach().tolist() for p in model.parameters()]
        return (inside, [p.tolist() for p in params.values()], after == [p.tolist() for p in live],
                osd['state'][0]['momentum_buffer'].tolist(), opt.param_groups[0]['params'][0] is model.weight)
    t, ours = _both(run)
    assert ours == t


# ---------------------------------------------------------------- CUDA (skipped without a GPU)
cuda = pytest.mark.skipif(not (tp.cuda.is_available() and torch.cuda.is_available()),
                          reason='needs CUDA in both libraries')


@cuda
def test_cuda_inplace_views_and_resize():
    def run(lib):
        x = lib.arange(6., device='cuda').reshape(2, 3)
        x.t_()
        info = (_geometry(x), x.cpu().tolist(), x._version)
        y = lib.arange(6., device='cuda')
        y.resize_(4, 4)
        y[1:].fill_(0)
        info += (_geometry(y), y.cpu().reshape(-1)[:6].tolist(), y.untyped_storage().nbytes())
        z = lib.zeros(3, device='cuda')
        z.set_(y)
        info += (z.is_set_to(y), z.is_shared(), z.share_memory_() is z)
        return info
    t, ours = _both(run)
    assert ours == t


@cuda
def test_cuda_stream_and_event():
    for lib in LIBS:
        s = lib.Stream('cuda')
        assert s.device.type == 'cuda' and s.device_type == 1 and s.query()
        e = lib.Event('cuda', enable_timing=True)
        e2 = lib.Event('cuda', enable_timing=True)
        with s:
            x = lib.ones(1000, device='cuda') * 2
        e.record(s)
        s.synchronize()
        e2.record(s)
        e2.synchronize()
        assert e.query() and isinstance(e.elapsed_time(e2), float)
        assert x.sum().item() == 2000.0
        ev = s.record_event()
        s.wait_event(ev)
        s.wait_stream(lib.Stream('cuda'))
