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
