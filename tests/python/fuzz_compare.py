"""Comparisons the fuzz-regression tests (test_fuzz_regressions_*.py) share: a call run
in torch and in tensorplay, and its outcomes (result or exception class) compared."""
import warnings

import pytest
import torch

import tensorplay as tp


def _both(fn):
    """fn(lib) in torch and tensorplay: ('ok', result) or ('raised', exception class name)."""
    out = []
    for lib in (torch, tp):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # torch's warning on resizing a non-empty out=
            try:
                out.append(('ok', fn(lib)))
            except Exception as e:  # noqa: BLE001 - the class is the outcome
                out.append(('raised', type(e).__name__))
    return out

def _same_outcome(fn):
    (ts, t), (ls, l) = _both(fn)
    assert ts == ls, f'torch {ts} {t}, tensorplay {ls} {l}'
    if ts == 'raised':
        assert t == l
    return t, l

def _same_layout(fn):
    t, l = _same_outcome(fn)
    if isinstance(t, str):  # both raised the same class
        return
    assert tuple(t.shape) == tuple(l.shape)
    assert t.stride() == l.stride()
    torch.testing.assert_close(torch.tensor(l.tolist()), torch.tensor(t.tolist()), check_dtype=False)

def _same_result(fn):
    t, l = _same_outcome(fn)
    if isinstance(t, str):  # both raised the same class
        return
    assert db_dtype(l) == str(t.dtype).replace('torch.', '') and tuple(l.shape) == tuple(t.shape)
    assert l.tolist() == t.tolist()

def db_dtype(t):
    return str(t.dtype).replace('tensorplay.', '')

def _same_exactly(fn):
    """Same outcome; results (a tensor or a tuple of them) of the same dtype, shape and values,
    NaN where torch has NaN, bit for bit."""
    t, l = _same_outcome(fn)
    if isinstance(t, str):
        return
    ts, ls = (t, l) if isinstance(t, tuple) else ((t,), (l,))
    for a, b in zip(ts, ls):
        assert db_dtype(b) == str(a.dtype).replace('torch.', '') and tuple(b.shape) == tuple(a.shape)
        torch.testing.assert_close(torch.tensor(b.tolist(), dtype=a.dtype), a, rtol=0, atol=0, equal_nan=True)

def _raised_both(fn, gist):
    """fn raises the same exception class in torch and tensorplay, both messages holding `gist`."""
    errors = []
    for lib in (torch, tp):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            with pytest.raises(Exception) as info:
                fn(lib)
        errors.append(info.value)
    assert type(errors[1]).__name__ == type(errors[0]).__name__, errors
    assert all(gist in str(e) for e in errors), errors

_F = lambda lib: lib.nn.functional
