"""Fake tensors and FakeTensorMode, against PyTorch's torch._subclasses.fake_tensor."""
import resource

import pytest
import torch
from torch._subclasses import fake_tensor as torch_fake

import tensorplay as tp
from tensorplay._subclasses.fake_tensor import (DataDependentOutputException,
                                                DynamicOutputShapeException, FakeTensor,
                                                FakeTensorDeviceMismatchError, FakeTensorMode)
from tensorplay.testing.gpt import gpt2


def _meta(t):
    return (tuple(t.shape), str(t.dtype).split('.')[-1], tuple(t.stride()), t.storage_offset(),
            str(t.device), t.requires_grad)


def _program(lib, device):
    x = lib.empty(4, 3, device=device)
    w = lib.randn(3, 5, device=device, requires_grad=True)
    y = (x @ w).relu().t()
    z = lib.cat([y, y], 1).sum(0)
    s = lib.zeros(2, 3).transpose(0, 1)[1:]
    return [x, w, y, z, s, x.view(12)[2:], (s + lib.tensor(2.0))]


def test_ops_under_the_mode_give_pytorchs_metadata():
    with FakeTensorMode():
        ours = _program(tp, 'cpu')
        on_cuda = _program(tp, 'cuda')  # a fake CUDA device, on a machine without one
    with torch_fake.FakeTensorMode():
        theirs = _program(torch, 'cpu')  # (PyTorch's CPU-only build cannot run fake CUDA ops)
    for i, (a, b, c) in enumerate(zip(ours, theirs, on_cuda)):
        assert isinstance(a, FakeTensor)
        assert _meta(a) == _meta(b)
        if i not in (4, 6):  # (those start from tensors made on the default device, the CPU)
            assert _meta(c) == _meta(b)[:4] + ('cuda:0',) + _meta(b)[5:]
    assert repr(ours[0]) == repr(theirs[0]) and repr(ours[4]) == repr(theirs[4])
    assert on_cuda[0].is_cuda and not on_cuda[0].is_meta and not ours[0].is_cuda
    with FakeTensorMode():  # a CPU scalar tensor mixes with a CUDA tensor
        assert (tp.empty(2, device='cuda') + tp.tensor(2.0)).device.type == 'cuda'


def test_device_mismatch_and_data_dependent_ops():
    with FakeTensorMode():
        a, b = tp.ones(3, device='cuda'), tp.ones(3)
        with pytest.raises(FakeTensorDeviceMismatchError, match='same device') as e:
            a + b
        assert isinstance(e.value, RuntimeError)
        with pytest.raises(DynamicOutputShapeException):
            tp.nonzero(b)
        with pytest.raises(DataDependentOutputException):
            b.sum().item()
        with pytest.raises(DataDependentOutputException):
            bool(b[0] > 0)


def test_real_inputs_and_conversions():
    real = tp.arange(6.0).reshape(2, 3).t()
    mode = FakeTensorMode()
    with mode:
        with pytest.raises(AssertionError, match='Please convert all Tensors to FakeTensors'):
            real + 1
    fake = mode.from_tensor(real)
    tfake = torch_fake.FakeTensorMode().from_tensor(torch.arange(6.0).reshape(2, 3).t())
    assert isinstance(fake, FakeTensor) and _meta(fake) == _meta(tfake)
    assert mode.from_real_tensor(real).shape == (3, 2)
    out = fake * 2  # outside the mode: the fake tensor brings its mode back
    assert isinstance(out, FakeTensor) and out.fake_mode is mode
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert isinstance(real + 1, FakeTensor)


def test_module_forward_and_backward():
    with FakeTensorMode():
        lin = tp.nn.Sequential(tp.nn.Linear(8, 16), tp.nn.GELU(), tp.nn.Linear(16, 4))
        x = tp.randn(32, 8)
        loss = tp.nn.functional.cross_entropy(lin(x), tp.randint(0, 4, (32,)))
        loss.backward()
    for p in lin.parameters():
        assert isinstance(p, FakeTensor) and isinstance(p, tp.nn.Parameter)
        assert isinstance(p.grad, FakeTensor) and p.grad.shape == p.shape
    assert loss.shape == () and loss.grad_fn is not None


def test_gpt2_small_forward_backward_without_memory():
    """GPT-2 small (124M parameters) at batch 64 and sequence 1024: real data would need
    tens of GiB; under the mode the process does not grow."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with FakeTensorMode():
        model = gpt2(tp).to('cuda')
        idx = tp.randint(0, 50257, (64, 1024), device='cuda')
        logits, loss = model(idx, idx)
        loss.backward()
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert logits.shape == (64, 1024, 50257) and logits.device.type == 'cuda'
    assert model.lm_head.weight.grad.shape == (50257, 768)
    assert sum(p.numel() for p in model.parameters()) == 124439808
    assert grown_mib < 200, f'the process grew by {grown_mib:.0f} MiB'
