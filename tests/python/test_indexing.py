"""Tensor.__getitem__ / __setitem__ against PyTorch: basic, advanced and mixed indices."""
import numpy as np
import pytest
import torch

import tensorplay as tp

# Each case gets the tensor and the library's `tensor` constructor.
GET_CASES = {
    "int": lambda z, L: z[1],
    "neg_int": lambda z, L: z[-1, -2],
    "slices": lambda z, L: z[1:, ::2, 1:4],
    "none_ellipsis": lambda z, L: z[None, ..., None, 2],
    "int_list": lambda z, L: z[[0, 2]],
    "tensor_dim1": lambda z, L: z[:, L([1, 3])],
    "tensor_last": lambda z, L: z[..., L([4, 0, 1])],
    "two_adjacent": lambda z, L: z[L([0, 1]), L([1, 2])],
    "two_split": lambda z, L: z[L([0, 1]), :, L([1, 2])],
    "broadcast_adv": lambda z, L: z[:, L([[0, 1], [2, 3]]), L([1])],
    "neg_tensor": lambda z, L: z[L([-1, 0])],
    "mixed_slice_adv": lambda z, L: z[1:, L([0, 0, 2]), ::2],
    "none_adv": lambda z, L: z[None, L([1])],
    "mask_full": lambda z, L: z[z > 30],
    "mask_leading": lambda z, L: z[(z > 5)[:, :, 0]],
    "mask_after_int": lambda z, L: z[0, z[0] > 3],
    "empty_index": lambda z, L: z[L([0])[:0]],
}


def _pair(dtype="int64", layout="contiguous"):
    a = np.arange(60).reshape(3, 4, 5)
    t = torch.tensor(a, dtype=getattr(torch, dtype))
    x = tp.tensor(a.tolist(), dtype=getattr(tp, dtype))
    if layout == "transposed":  # same values, non-contiguous memory
        t = t.transpose(0, 2).contiguous().transpose(0, 2)
        x = x.transpose(0, 2).contiguous().transpose(0, 2)
    return x, t


# Mask cases compare the tensor with ints, which bool tensors cannot serve.
GET_PARAMS = [(n, d, lay) for n in GET_CASES for d in ("int64", "float32", "bool")
              for lay in ("contiguous", "transposed") if not ("mask" in n and d == "bool")]


@pytest.mark.parametrize("name,dtype,layout", GET_PARAMS)
def test_getitem_matches_torch(name, dtype, layout):
    x, t = _pair(dtype if dtype != "bool" else "int64", layout)
    if dtype == "bool":
        x, t = x > 20, t > 20
    case = GET_CASES[name]
    r, e = case(x, tp.tensor), case(t, torch.tensor)
    assert tuple(r.shape) == tuple(e.shape)
    assert r.tolist() == e.tolist()


@pytest.mark.parametrize("index,exc", [((5,), IndexError), ((0, 0, 0, 0), IndexError),
                                       ((torch.tensor([3]),), IndexError), ((1.5,), IndexError),
                                       ((torch.tensor([0.5]),), IndexError)])
def test_getitem_errors_match_torch(index, exc):
    x, t = _pair()
    tp_index = tuple(tp.tensor(i.tolist()) if isinstance(i, torch.Tensor) else i for i in index)
    with pytest.raises(exc):
        t[index]
    with pytest.raises(exc):
        x[tp_index]


@pytest.mark.parametrize("index", [(1,), (slice(None), 2), (Ellipsis, slice(1, 3)), (0, slice(None, None, 2))])
@pytest.mark.parametrize("value", [7, 2.5, "tensor"])
def test_setitem_basic_matches_torch(index, value):
    x, t = _pair("float32")
    if value == "tensor":
        t[index] = torch.ones(t[index].shape[-1:]) * 3
        x[index] = tp.ones(x[index].shape[-1:]) * 3
    else:
        t[index] = value
        x[index] = value
    assert x.tolist() == t.tolist()


# Advanced-index assignment: (index builder, value kind); "t" is a tensor shaped like the
# last dim of the indexing result, "full" one shaped like the whole result.
SET_CASES = {
    "int_list": (lambda z, L: ([0, 2],), "t"),
    "tensor_dim1": (lambda z, L: (slice(None), L([1, 3])), 5),
    "two_adjacent": (lambda z, L: (L([0, 1]), L([1, 2])), "full"),
    "two_split": (lambda z, L: (L([0, 1]), slice(None), L([1, 2])), "t"),
    "mixed_slice_adv": (lambda z, L: (slice(1, None), L([0, 0, 2]), slice(None, None, 2)), "full"),
    "adjacent_after_slice": (lambda z, L: (slice(None), L([[0, 1], [2, 3]]), L([1])), "full"),
    "neg_tensor": (lambda z, L: (L([-1, 0]),), 2.5),
    "mask_full": (lambda z, L: (z > 30,), "full"),
    "mask_leading": (lambda z, L: ((z > 5)[:, :, 0],), "t"),
    "mask_after_int": (lambda z, L: (0, z[0] > 3), 7),
    "ellipsis_adv": (lambda z, L: (Ellipsis, L([4, 0])), "t"),
    "none_adv": (lambda z, L: (None, L([1])), "full"),
    "int32_index": (lambda z, L: (L([2, 0]).int(),), 1),
    "true": (lambda z, L: (True,), "t"),
    "false": (lambda z, L: (False,), "t"),
    "tensor_true": (lambda z, L: (L(True), 1), "full"),
    "true_with_adv": (lambda z, L: (slice(None), True, [0, 1]), "full"),
    "empty_index": (lambda z, L: (L([0])[:0],), 3),
    "leading_ones_value": (lambda z, L: ([0, 2],), "leading1"),
}


def _value(kind, lib, z, index, dtype):
    if not isinstance(kind, str):
        return kind
    shape = tuple(z[index].shape)
    if kind == "t":
        shape = shape[-1:]
    if kind == "leading1":
        shape = (1, 1) + shape
    n = int(np.prod(shape))
    return lib.tensor((np.arange(n) % 7 - 3).reshape(shape).tolist(), dtype=dtype)


@pytest.mark.parametrize("name", list(SET_CASES))
@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_setitem_advanced_matches_torch(name, dtype, layout):
    build, kind = SET_CASES[name]
    x, t = _pair("int64", layout)
    results = []
    for lib, z in ((tp, x), (torch, t)):
        index = build(z, lib.tensor)
        if dtype != "int64":
            z = z.to(getattr(lib, dtype))
        value = _value(kind, lib, z, index, getattr(lib, dtype))
        z[index] = value
        results.append(z)
    assert results[0].tolist() == results[1].tolist()


def test_getitem_bool_scalars_match_torch():
    x, t = _pair()
    for build in (lambda L: (True,), lambda L: (False,), lambda L: (L.tensor(True),),
                  lambda L: (L.tensor(False), 1), lambda L: (0, True), lambda L: (True, [0, 1]),
                  lambda L: (slice(None), True, [0, 1]), lambda L: ([0, 1], True)):
        r, e = x[build(tp)], t[build(torch)]
        assert tuple(r.shape) == tuple(e.shape)
        assert r.tolist() == e.tolist()


def test_setitem_zero_dim_bool_index():
    x, t = tp.tensor(1.0), torch.tensor(1.0)
    x[True], t[True] = 5.0, 5.0
    assert x.tolist() == t.tolist()


@pytest.mark.parametrize("build,value,exc", [
    (lambda L: (L.tensor([0, 3]),), 1.0, IndexError),                  # out of range
    (lambda L: (L.tensor([0, -4]),), 1.0, IndexError),
    (lambda L: (slice(None), L.tensor([5])), 1.0, IndexError),
    (lambda L: (L.tensor([0.5]),), 1.0, IndexError),                   # float index
    (lambda L: (L.tensor([0, 1]), L.tensor([0, 1, 2])), 1.0, IndexError),  # no broadcast
    (lambda L: (L.tensor([0, 1]),), "wrong_shape", RuntimeError),      # value shape
    (lambda L: (L.tensor([0, 1]),), "wrong_dtype", RuntimeError),      # tensor of another dtype
    (lambda L: (L.tensor([True, False]),), 1.0, IndexError),           # mask shape
    (lambda L: ([0], [0], [0], [0]), 1.0, IndexError),                 # too many indices
])
def test_setitem_errors_match_torch(build, value, exc):
    x, t = _pair("float32")
    for lib, z in ((torch, t), (tp, x)):
        v = value
        if value == "wrong_shape":
            v = lib.ones(3)
        elif value == "wrong_dtype":
            v = lib.ones(5, dtype=lib.float64)
        with pytest.raises(exc):
            z[build(lib)] = v


def test_index_put_accumulate_duplicates_matches_torch():
    rng = np.random.default_rng(0)
    idx = rng.integers(-50, 50, 5000)
    val = rng.standard_normal(5000).astype(np.float32)
    r = tp.zeros(50, 3).index_put_((tp.from_numpy(idx),), tp.from_numpy(val)[:, None], accumulate=True)
    e = torch.zeros(50, 3).index_put_((torch.from_numpy(idx),), torch.from_numpy(val)[:, None],
                                      accumulate=True)
    np.testing.assert_allclose(r.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)
    r1 = tp.index_put_(tp.zeros(4), (tp.tensor([0, 0, 3]),), tp.tensor(1.0), True)
    assert r1.tolist() == [2.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("i", [0, 2, -1, -3, 3, -4])
def test_integer_index_matches_torch(i):
    for shape in ((3,), (3, 2)):
        a = torch.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
        b = tp.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
        try:
            ta = a[i]
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e)):
                b[i]
            continue
        tb = b[i]
        assert tb.tolist() == ta.tolist() and tuple(tb.shape) == tuple(ta.shape)
        (ta * 2).sum().backward()
        (tb * 2).sum().backward()
        assert b.grad.tolist() == a.grad.tolist()
    base = tp.zeros(3, 2)
    base[1][0] = 5.0  # the result is a view
    assert base[1, 0].item() == 5.0
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        tp.zeros(())[0]
