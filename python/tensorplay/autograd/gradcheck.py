"""gradcheck / gradgradcheck: autograd's gradients against central finite differences.

The numerical Jacobian perturbs each input element by +-eps (in place, through a NumPy
view of the input's memory) and re-runs the function without grad; the analytical one
is built row by row from vector-Jacobian products (one backward per output element).
Fast mode compares one random projection v^T J u of each instead.

Complex tensors are checked as pairs of reals (PyTorch's convention, Note [Complex
gradients of holomorphic formulas]): a complex input contributes a column for its real and
one for its imaginary part, a complex output a row for each part; the row of Re(o_j) is the
backward of the cotangent 1 at j, that of Im(o_j) the backward of 1j, and a complex
gradient g fills the columns (Re g, Im g).
"""
import numpy as np

from tensorplay import _C

__all__ = ['gradcheck', 'gradgradcheck', 'GradcheckError']

Tensor = _C.Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the gradients disagree."""


def _tuple(x):
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _outputs(fn, inputs):
    return tuple(o for o in _tuple(fn(*inputs)) if isinstance(o, Tensor))


def _diff_outputs(outputs):
    return [o for o in outputs if o.is_floating_point() or o.is_complex()]


def _as_reals(array):
    """A flat float64 array; a complex array as (re, im) pairs."""
    array = np.asarray(array).reshape(-1)
    if np.iscomplexobj(array):
        return np.stack([array.real, array.imag], -1).astype(np.float64).reshape(-1)
    return array.astype(np.float64)


def _parts(t):
    """How many reals one element of t is (2 for complex)."""
    return 2 if t.is_complex() else 1


def _flat_values(outputs):
    if not outputs:
        return np.zeros(0)
    return np.concatenate([_as_reals(o.detach().numpy()) for o in outputs])


def _numerical_jacobian(fn, inputs, index, eps):
    """d(all outputs, flattened) / d(inputs[index]): (n_out, n_in)."""
    from tensorplay.autograd.grad_mode import no_grad
    x = inputs[index]
    arr = x.detach().numpy()
    with no_grad():
        n_out = _flat_values(_diff_outputs(_outputs(fn, inputs))).size
        steps = (eps, eps * 1j) if x.is_complex() else (eps,)
        jac = np.zeros((n_out, x.numel() * len(steps)))
        for k, ix in enumerate(np.ndindex(*arr.shape)):
            orig = arr[ix].item()
            for p, step in enumerate(steps):
                arr[ix] = orig - step
                lo = _flat_values(_diff_outputs(_outputs(fn, inputs)))
                arr[ix] = orig + step
                hi = _flat_values(_diff_outputs(_outputs(fn, inputs)))
                arr[ix] = orig
                jac[:, k * len(steps) + p] = (hi - lo) / (2 * eps)
    return jac


def _vjp(outputs, diff_inputs, cotangents):
    from tensorplay import autograd
    grads = autograd.grad(outputs, diff_inputs, cotangents, retain_graph=True, allow_unused=True)
    return grads


def _analytical_jacobians(fn, inputs, diff_idx):
    """One (n_out, n_in) Jacobian per differentiable input, from backward passes (rows of
    outputs that do not require grad stay zero, as their numerical rows must be)."""
    outs = _diff_outputs(_outputs(fn, inputs))
    live = [o for o in outs if o.requires_grad]
    diff_inputs = [inputs[i] for i in diff_idx]
    jacs = [np.zeros((sum(o.numel() * _parts(o) for o in outs), inputs[i].numel() * _parts(inputs[i])))
            for i in diff_idx]
    row = 0
    for out in outs:
        units = (1.0, 1j) if out.is_complex() else (1.0,)
        for j in range(out.numel() if out.requires_grad else 0):
            for p, unit in enumerate(units):
                cot = []
                for o in live:
                    c = np.zeros(o.numel(), dtype=complex if o.is_complex() else np.float64)
                    if o is out:
                        c[j] = unit
                    cot.append(_to_tensor(c.reshape(tuple(o.shape)), o))
                for g, jac, inp in zip(_vjp(live, diff_inputs, cot), jacs, diff_inputs):
                    if g is None:
                        continue
                    if tuple(g.shape) != tuple(inp.shape):
                        raise GradcheckError(f"Gradient has incorrect shape: got {tuple(g.shape)}, "
                                             f"expected {tuple(inp.shape)}")
                    if g.dtype != inp.dtype:
                        raise GradcheckError(f"Gradient has dtype {g.dtype} but expected {inp.dtype}")
                    jac[row + j * len(units) + p, :] = _as_reals(g.detach().numpy())
        row += out.numel() * len(units)
    return jacs


def _to_tensor(array, like):
    from tensorplay._creation import tensor
    return tensor(array, dtype=like.dtype, device=like.device)


def _check(ok, msg, raise_exception):
    if not ok and raise_exception:
        raise GradcheckError(msg)
    return ok


def _fast_check(fn, inputs, diff_idx, eps, atol, rtol, raise_exception):
    """Compares v^T J u (numerical vs analytical) for random u, v per input."""
    from tensorplay.autograd.grad_mode import no_grad
    rng = np.random.default_rng(0)
    outputs = [o for o in _diff_outputs(_outputs(fn, inputs)) if o.requires_grad]
    cot = [_random(rng, tuple(o.shape), o) for o in outputs]
    cot_t = [_to_tensor(c, o) for c, o in zip(cot, outputs)]
    v = np.concatenate([_as_reals(c) for c in cot]) if cot else np.zeros(0)
    grads = _vjp(outputs, [inputs[i] for i in diff_idx], cot_t)
    for g, i in zip(grads, diff_idx):
        x = inputs[i]
        arr = x.detach().numpy()
        u = _random(rng, arr.shape, x)
        orig = arr.copy()
        with no_grad():
            arr[...] = orig - eps * u
            lo = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[...] = orig + eps * u
            hi = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[...] = orig
        numerical = float(v @ ((hi - lo) / (2 * eps))) if v.size else 0.0
        analytical = 0.0 if g is None else float(_as_reals(g.detach().numpy()) @ _as_reals(u))
        if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
            return _check(False, f"Jacobian mismatch for input {i} (fast mode): numerical "
                          f"{numerical} vs analytical {analytical}", raise_exception)
    return True


def _random(rng, shape, like):
    """Standard normal values of like's kind (complex: both parts)."""
    if like.is_complex():
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True if ``func``'s gradients w.r.t. the inputs that require grad match finite
    differences (use float64 inputs); raises GradcheckError otherwise (or returns False
    with ``raise_exception=False``)."""
    inputs = _tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.itemsize < 8 and inputs[i].is_floating_point():
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point. ", UserWarning)
    if not check_backward_ad:
        return True
    if fast_mode:
        return _fast_check(func, inputs, diff_idx, eps, atol, rtol, raise_exception)
    analytical = _analytical_jacobians(func, inputs, diff_idx)
    for i, a in zip(diff_idx, analytical):
        n = _numerical_jacobian(func, inputs, i, eps)
        if n.shape != a.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
            return _check(False, f"Jacobian mismatch for output 0 with respect to input {i},\n"
                          f"numerical:{n}\nanalytical:{a}\n", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the gradient itself: the first backward is recorded
    (create_graph=True) and differentiated again, also w.r.t. the grad_outputs."""
    from tensorplay import autograd
    from tensorplay.autograd.grad_mode import enable_grad
    inputs = _tuple(inputs)
    outputs = [o for o in _diff_outputs(_outputs(func, inputs)) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_to_tensor(_random(rng, tuple(o.shape), o), o).requires_grad_()
                             for o in outputs)
    grad_outputs = _tuple(grad_outputs)
    n = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_grads(*args):
        # Recorded even where gradcheck evaluates under no_grad (finite differences).
        with enable_grad():
            ins, gos = args[:n], args[n:]
            outs = [o for o in _diff_outputs(_outputs(func, ins)) if o.requires_grad]
            grads = autograd.grad(outs, [ins[i] for i in diff_idx], gos, create_graph=True,
                                  allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode)
