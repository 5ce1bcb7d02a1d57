"""Higher-level differentiation of whole functions: vjp, jvp, jacobian, hessian, vhp, hvp
(PyTorch's ``torch.autograd.functional``: same arguments, results and errors).

``inputs`` is a Tensor or a tuple of Tensors and results follow the same shape: a single
Tensor in gives single Tensors out. ``create_graph=True`` keeps results differentiable;
``strict=True`` raises where a result would be identically zero because an output does
not depend on an input. ``jvp`` and ``jacobian(strategy="forward-mode")`` use forward-mode
AD (``tensorplay.autograd.forward_ad``). ``vectorize=True`` gives the same results, one
backward (or forward) pass per row (or column) (tp.func.jacrev / jacfwd batch them).
"""
from tensorplay import _C
from tensorplay.autograd.grad_mode import enable_grad

__all__ = ['vjp', 'jvp', 'jacobian', 'hessian', 'hvp', 'vhp']

Tensor = _C.Tensor


def _as_tuple(x, arg_name, fn_name):
    """(was it a tuple, the tuple); non-tensors raise PyTorch's TypeError."""
    if isinstance(x, tuple):
        for i, el in enumerate(x):
            if not isinstance(el, Tensor):
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {i} has type {type(el)}.")
        return True, x
    if not isinstance(x, Tensor):
        raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                        f"of Tensors but the given {arg_name} has type {type(x)}.")
    return False, (x,)


def _untuple(res, was_tuple):
    """Undoes _as_tuple on a result; nested for (outputs x inputs) results."""
    if isinstance(was_tuple, tuple):
        if not was_tuple[0]:
            res = res[0]
            return res if was_tuple[1] else res[0]
        return res if was_tuple[1] else tuple(r[0] for r in res)
    return res if was_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Fresh differentiable handles on the inputs (views keep their history when
    create_graph, so results stay differentiable with respect to the caller's tensors)."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(res, create_graph):
    """Detaches results unless create_graph (nested tuples too)."""
    if isinstance(res, tuple):
        return tuple(_finish(r, create_graph) for r in res)
    if res is None or create_graph:
        return res
    return res.detach()


def _check_v(v, other, other_was_tuple):
    if len(other) != len(v):
        if other_was_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            prefix = f"Entry {i} in " if other_was_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            if kind == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should "
                    "ensure that your function is thrice differentiable and that the hessian "
                    "depends on the inputs.")
            if kind == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is "
                    "not allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example).")
            raise RuntimeError(f"Output {i} of the user-provided function does not require "
                               "gradients. The outputs must be computed in a differentiable "
                               "manner from the input when running in strict mode.")


def _grad(outputs, inputs, grad_outputs, create_graph, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input if none do)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    from tensorplay import autograd
    return autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                         create_graph=create_graph, retain_graph=retain_graph)


_STRICT_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _zeros_for_none(grads, refs, strict, stage):
    """Zeros where no gradient flowed (strict mode raises instead)."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MESSAGES[stage].format(i=i))
            g = _C.zeros(tuple(ref.shape), dtype=ref.dtype, device=ref.device)
        out.append(g)
    return tuple(out)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product of ``func`` at ``inputs``::

        out, g = tp.autograd.functional.vjp(lambda x: x ** 2, x, tp.ones(3))
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, need_graph=False)
            _check_v(v, outputs, out_tuple)
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            v = (None,)
        grads = _grad(outputs, inputs, v, create_graph)
        grads = _zeros_for_none(grads, inputs, strict, "back")
    return _untuple(_finish(outputs, create_graph), out_tuple), \
        _untuple(_finish(grads, create_graph), in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product of ``func`` at ``inputs``, by
    forward-mode AD::

        out, t = tp.autograd.functional.jvp(lambda x: x.sin(), x, tp.ones(3))
    """
    from tensorplay.autograd import forward_ad as fwAD
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    if v is not None:
        _, v = _as_tuple(v, "v", "jvp")
        _check_v(v, inputs, in_tuple)
    else:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        v = (_C.ones(tuple(inputs[0].shape), dtype=inputs[0].dtype, device=inputs[0].device),)
    with enable_grad():
        inputs = _prepare(inputs, create_graph, need_graph=create_graph)
        v = _prepare(v, create_graph, need_graph=False)
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(x, t) for x, t in zip(inputs, v))
            out_tuple, outputs = _as_tuple(func(*duals), "outputs of the user-provided function",
                                           "jvp")
            unpacked = [fwAD.unpack_dual(o) for o in outputs]
        primals = tuple(u.primal for u in unpacked)
        tangents = []
        for i, (p, u) in enumerate(zip(primals, unpacked)):
            if u.tangent is None:  # the output does not depend on the inputs
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function does not "
                                       "require gradients. The outputs must be computed in a "
                                       "differentiable manner from the input when running in "
                                       "strict mode.")
                tangents.append(_C.zeros(tuple(p.shape), dtype=p.dtype, device=p.device))
            else:
                tangents.append(u.tangent)
    return _untuple(_finish(primals, create_graph), out_tuple), \
        _untuple(_finish(tuple(tangents), create_graph), out_tuple)


def _basis_rows(ref):
    """The rows of the identity over ref's elements, each shaped like ref."""
    n = ref.numel()
    eye = _C.eye(n, dtype=ref.dtype, device=ref.device) if n else None
    return [eye[k].reshape(tuple(ref.shape)) for k in range(n)]


def _jac_reverse(outputs, inputs, create_graph, strict):
    """jac[i][j] = d outputs[i] / d inputs[j], one backward per output element."""
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for k in range(out.numel()):
            g = _grad((flat[k],), inputs, (None,), create_graph, retain_graph=True)
            for j, (gj, inp) in enumerate(zip(g, inputs)):
                if gj is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed in "
                                           "strict mode.")
                    gj = _C.zeros(tuple(inp.shape), dtype=inp.dtype, device=inp.device)
                rows[j].append(gj)
        block = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if rows[j]:
                block.append(_C.stack(rows[j]).reshape(shape))
            else:
                block.append(_C.zeros(shape, dtype=out.dtype, device=out.device))
        jac.append(tuple(block))
    return tuple(jac)


def _jac_forward(func, inputs):
    """(outputs, jac) with jac[i][j] = d outputs[i] / d inputs[j], one forward-mode pass per
    input element."""
    from tensorplay.autograd import forward_ad as fwAD
    columns, outputs, out_tuple = [], None, None
    for j, inp in enumerate(inputs):
        cols = []
        for e in _basis_rows(inp):
            with fwAD.dual_level():
                duals = tuple(fwAD.make_dual(x, e) if m == j else x for m, x in enumerate(inputs))
                out_tuple, outs = _as_tuple(func(*duals), "outputs of the user-provided function",
                                            "jacobian")
                unpacked = [fwAD.unpack_dual(o) for o in outs]
            outputs = tuple(u.primal for u in unpacked)
            cols.append([u.tangent if u.tangent is not None else
                         _C.zeros(tuple(u.primal.shape), dtype=u.primal.dtype) for u in unpacked])
        columns.append(cols)
    if outputs is None:  # every input is empty: run func once for the outputs
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jacobian")
    jac = []
    for i, out in enumerate(outputs):
        block = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if columns[j]:
                cols = _C.stack([c[i].reshape(-1) for c in columns[j]], 1)
                block.append(cols.reshape(shape))
            else:
                block.append(_C.zeros(shape, dtype=out.dtype, device=out.device))
        jac.append(tuple(block))
    return out_tuple, tuple(jac)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for one input and one output a Tensor of
    shape ``output.shape + input.shape``; tuples of those otherwise. ``strategy`` is
    "reverse-mode" (one backward per output element) or "forward-mode" (one forward-mode
    pass per input element; PyTorch requires ``vectorize=True`` for it)."""
    if strategy not in ("forward-mode", "reverse-mode"):  # PyTorch asserts it
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         'Hint: If your function has more outputs than inputs, "forward-mode" '
                         'tends to be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.'.replace("torch.", "tensorplay."))
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                               '`strategy="forward-mode"` are not supported together (yet). '
                               'Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.'.replace("torch.", "tensorplay."))
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                      "Hessian isonly implemented for `vectorize=True`.")
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = tuple(t.detach() for t in inputs)
        out_tuple, jac = _jac_forward(func, inputs)
        return _untuple(jac, (out_tuple, in_tuple))
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("tensorplay.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either set "
                               "`strict=False` or `vectorize=False`.")
        jac = _jac_reverse(outputs, inputs, create_graph, strict)
        return _untuple(_finish(jac, create_graph), (out_tuple, in_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (shape
    ``input.shape + input.shape`` for one input; a tuple of tuples for several)."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):  # PyTorch asserts it
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output(*inp):
        out = func(*inp)
        is_tuple, t = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t, "outputs", strict)
        if is_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _untuple(res, (in_tuple, in_tuple))


def _single_scalar_output(func, inputs, strict, name):
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain "
                           "a single element")
    return outputs


def _v_for_inputs(v, inputs, in_tuple, name):
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        _check_v(v, inputs, in_tuple)
        return v
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return (_C.ones(tuple(inputs[0].shape), dtype=inputs[0].dtype, device=inputs[0].device),)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of the scalar function ``func``."""
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_for_inputs(v, inputs, in_tuple, "vhp")
        v = _prepare(v, create_graph, need_graph=False)
        outputs = _single_scalar_output(func, inputs, strict, "vhp")
        jac = _grad(outputs, inputs, (None,), create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grads = _grad(jac, inputs, v, create_graph)
        grads = _zeros_for_none(grads, inputs, strict, "double_back")
    return _finish(outputs, create_graph)[0], _untuple(_finish(grads, create_graph), in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of the scalar function ``func``
    (equal to vhp's for twice continuously differentiable functions; computed by the double
    backward trick, as PyTorch does)."""
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_for_inputs(v, inputs, in_tuple, "hvp")
        v = _prepare(v, create_graph, need_graph=False)
        outputs = _single_scalar_output(func, inputs, strict, "hvp")
        jac = _grad(outputs, inputs, (None,), create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(_C.zeros(tuple(t.shape), dtype=t.dtype, device=t.device)
                         .requires_grad_(True) for t in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        grads = _grad(double_back, grad_jac, v, create_graph)
        grads = _zeros_for_none(grads, inputs, strict, "double_back_trick")
    return _finish(outputs, create_graph)[0], _untuple(_finish(grads, create_graph), in_tuple)
