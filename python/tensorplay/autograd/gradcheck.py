"""gradcheck / gradgradcheck: autograd's gradients against central finite differences.

The numerical Jacobian perturbs each input element by +-eps (in place, through a NumPy
view of the input's memory) and re-runs the function without grad; the analytical one
is built row by row from vector-Jacobian products (one backward per output element).
Fast mode compares one random projection v^T J u of each instead.
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
    return [o for o in outputs if o.is_floating_point()]


def _flat_values(outputs):
    if not outputs:
        return np.zeros(0)
    return np.concatenate([np.asarray(o.detach().numpy(), dtype=np.float64).reshape(-1)
                           for o in outputs])


def _numerical_jacobian(fn, inputs, index, eps):
    """d(all outputs, flattened) / d(inputs[index]): (n_out, n_in)."""
    from tensorplay.autograd.grad_mode import no_grad
    x = inputs[index]
    arr = x.detach().numpy()
    with no_grad():
        n_out = _flat_values(_diff_outputs(_outputs(fn, inputs))).size
        jac = np.zeros((n_out, x.numel()))
        for col, ix in enumerate(np.ndindex(*arr.shape)):
            orig = arr[ix].item()
            arr[ix] = orig - eps
            lo = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[ix] = orig + eps
            hi = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[ix] = orig
            jac[:, col] = (hi - lo) / (2 * eps)
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
    jacs = [np.zeros((sum(o.numel() for o in outs), inputs[i].numel())) for i in diff_idx]
    row = 0
    for out in outs:
        for j in range(out.numel() if out.requires_grad else 0):
            cot = []
            for o in live:
                c = np.zeros(o.numel())
                if o is out:
                    c[j] = 1.0
                cot.append(_to_tensor(c.reshape(tuple(o.shape)), o))
            for g, jac, inp in zip(_vjp(live, diff_inputs, cot), jacs, diff_inputs):
                if g is None:
                    continue
                if tuple(g.shape) != tuple(inp.shape):
                    raise GradcheckError(f"Gradient has incorrect shape: got {tuple(g.shape)}, "
                                         f"expected {tuple(inp.shape)}")
                if g.dtype != inp.dtype:
                    raise GradcheckError(f"Gradient has dtype {g.dtype} but expected {inp.dtype}")
                jac[row + j, :] = np.asarray(g.detach().numpy(), dtype=np.float64).reshape(-1)
        row += out.numel()
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
    cot = [rng.standard_normal(o.numel()) for o in outputs]
    cot_t = [_to_tensor(c.reshape(tuple(o.shape)), o) for c, o in zip(cot, outputs)]
    v = np.concatenate(cot) if cot else np.zeros(0)
    grads = _vjp(outputs, [inputs[i] for i in diff_idx], cot_t)
    for g, i in zip(grads, diff_idx):
        x = inputs[i]
        arr = x.detach().numpy()
        u = rng.standard_normal(arr.shape)
        orig = arr.copy()
        with no_grad():
            arr[...] = orig - eps * u
            lo = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[...] = orig + eps * u
            hi = _flat_values(_diff_outputs(_outputs(fn, inputs)))
            arr[...] = orig
        numerical = float(v @ ((hi - lo) / (2 * eps))) if v.size else 0.0
        analytical = 0.0 if g is None else float(np.asarray(g.detach().numpy(), dtype=np.float64).reshape(-1)
                                                  @ u.reshape(-1))
        if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
            return _check(False, f"Jacobian mismatch for input {i} (fast mode): numerical "
                          f"{numerical} vs analytical {analytical}", raise_exception)
    return True


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
        grad_outputs = tuple(_to_tensor(rng.standard_normal(tuple(o.shape)), o).requires_grad_()
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
