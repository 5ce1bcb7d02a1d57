"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian (Note [Autograd
transforms]).

Note [Autograd transforms]
The transforms run the function on tensors that require grad and differentiate with
the ordinary autograd engine; nothing records per transform level. Nesting works because
an inner transform's inputs are aliases of the outer one's (``view_as`` when they already
require grad, so the outer graph stays connected) and, while another transform is active
(``_depth``), the inner ``autograd.grad`` runs with ``create_graph=True`` so its result can
be differentiated again. Under vmap the same calls meet BatchedTensors: autograd records
on the wrappers and the backward's ops are batched (Note [vmap as a wrapper subclass]),
which is how ``vmap(grad(f))`` gives per-sample gradients and jacrev batches its vjps.
jvp uses forward-mode AD (one dual level, as PyTorch's autograd allows); a jvp nested in
another runs the double-vjp identity J t = d/du <J^T u, t> instead, which composes.
"""
import functools
import threading

from tensorplay import _C
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.utils._pytree import tree_flatten, tree_unflatten

from ._vmap import _levels, is_batchedtensor, vmap

__all__ = ['grad', 'grad_and_value', 'vjp', 'jvp', 'linearize', 'jacrev', 'jacfwd', 'hessian']

Tensor = _C.Tensor
_state = threading.local()


def _depth():
    return getattr(_state, 'depth', 0)


class _Transform:
    """Marks a transform as running (nested transforms then keep their graphs)."""

    def __enter__(self):
        for lv in _levels():
            lv.inner_grad = True
        _state.depth = _depth() + 1
        self.grad_mode = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _state.depth -= 1
        _C._set_grad_enabled(self.grad_mode)


def _differentiable(x):
    """An input the transform differentiates with respect to."""
    if not isinstance(x, Tensor):
        return x
    if x.requires_grad:
        return x.view_as(x)
    if fwAD._current_level >= 0:  # a view keeps the tangent of an enclosing jvp; detach drops it
        return x.view_as(x).requires_grad_()
    return x.detach().requires_grad_()


def _undo(x, keep):
    """A result handed back to the caller: detached unless an outer transform (or the
    caller's autograd) still differentiates through it."""
    if isinstance(x, Tensor) and not keep:
        return x.detach()
    return x


def _argnums_check(argnums, nargs, name):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) for a in argnums):
        nums = argnums
    else:
        raise RuntimeError(f'{name}: argnums must be int or Tuple[int, ...], got: {type(argnums)}'
                           if not isinstance(argnums, tuple) else
                           f'{name}: argnums must be non-empty and contain only ints, got '
                           f'{argnums}')
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f'Got argnum={a}, but only {nargs} positional inputs')
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f'{name}: argnums must be unique, got {argnums}')
    return out


def _zeros_like(x):
    from tensorplay import zeros_like
    return zeros_like(x)


def grad_and_value(func, argnums=0, has_aux=False):
    """``(gradient, value)`` of a scalar function (PyTorch's ``torch.func.grad_and_value``):
    the gradient with respect to the positional arguments ``argnums`` (an int or a tuple;
    each argument may be a pytree of tensors). With ``has_aux``, ``func`` returns
    ``(output, aux)`` and the result is ``(gradient, (value, aux))``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_check(argnums, len(args), 'grad_and_value')
        with _Transform():
            keep = _depth() > 1
            args = list(args)
            flat, specs = [], []
            for n in nums:
                leaves, spec = tree_flatten(args[n])
                keep = keep or any(isinstance(x, Tensor) and x.requires_grad for x in leaves)
                leaves = [_differentiable(x) for x in leaves]
                args[n] = tree_unflatten(leaves, spec)
                flat.append(leaves)
                specs.append(spec)
            output = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError('grad_and_value(f)(*args): output of function f should be '
                                       'a tuple: (output, aux) if has_aux is True')
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(f'grad_and_value(f)(*args): Expected f(*args) to return a '
                                   f'Tensor, got {type(output)}')
            if output.dim() != 0:
                raise RuntimeError(f'grad_and_value(f)(*args): Expected f(*args) to return a '
                                   f'scalar Tensor, got tensor with {output.dim()} dims. Maybe '
                                   f'you wanted to use the vjp or jacrev APIs instead?')
            inputs = [x for leaves in flat for x in leaves]
            grads = _grads(output, inputs, None, keep)
        it = iter(grads)
        per_arg = [tree_unflatten([next(it) for _ in leaves], spec)
                   for leaves, spec in zip(flat, specs)]
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        value = _undo(output, keep)
        if has_aux:
            return g, (value, _tree_undo(aux, keep))
        return g, value
    return wrapper


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad over the tensor inputs; inputs the outputs do not depend on get zeros."""
    from tensorplay import autograd
    tensors = [x for x in inputs if isinstance(x, Tensor)]
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    live = [(o, g) for o, g in zip(outs, grad_outputs or [None] * len(outs)) if o.requires_grad]
    if live and tensors:
        got = autograd.grad([o for o, _ in live], tensors,
                            None if grad_outputs is None else [g for _, g in live],
                            retain_graph=True, create_graph=create_graph, allow_unused=True)
    else:
        got = [None] * len(tensors)
    it = iter(got)
    res = []
    for x in inputs:
        if not isinstance(x, Tensor):
            res.append(None)
            continue
        g = next(it)
        res.append(_zeros_like(x) if g is None else g)
    return res


def _tree_undo(tree, keep):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([_undo(x, keep) for x in leaves], spec)


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function (PyTorch's ``torch.func.grad``).

        >>> tp.func.grad(lambda x: (x ** 2).sum())(tp.tensor([1., 2.]))
        tensor([2., 4.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian
    product with respect to each primal (PyTorch's ``torch.func.vjp``)."""
    with _Transform():
        keep = _depth() > 1
        flat, spec = tree_flatten(primals)
        keep = keep or any(isinstance(x, Tensor) and x.requires_grad for x in flat)
        diff = [_differentiable(x) for x in flat]
        output = func(*tree_unflatten(diff, spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError('vjp(f, *primals): output of function f should be a tuple: '
                                   '(output, aux) if has_aux is True')
            output, aux = output
        flat_out, out_spec = tree_flatten(output)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f'vjp(f, *primals): Expected f to be a function that has only '
                                   f'Tensors as outputs, got {type(o)}')

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f'Expected pytree structure of cotangents to be the same as '
                               f'pytree structure of outputs to the function. cotangents: '
                               f'{ct_spec}, primal output: {out_spec}')
        for o, c in zip(flat_out, flat_ct):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f'Mismatch in shape: grad_output[0] has a shape of '
                                   f'{tuple(c.shape)} and output[0] has a shape of '
                                   f'{tuple(o.shape)}.')
        with _Transform():
            cg = create_graph if create_graph is not None else (
                _depth() > 1 or keep or any(c.requires_grad for c in flat_ct))
            grads = _grads(flat_out, diff, flat_ct, cg)
        return tree_unflatten(grads, spec)

    out = tree_unflatten([_undo(o, keep) for o in flat_out], out_spec)
    if has_aux:
        return out, vjp_fn, _tree_undo(aux, keep)
    return out, vjp_fn


def _check_jvp_args(primals, tangents):
    if not isinstance(primals, tuple):
        raise RuntimeError('jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it '
                           'should be valid to call f(*primals).')
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f'jvp(f, primals, tangents): Expected primals and tangents to have the '
                           f'same python structure. For example, if primals is a tuple of 3 '
                           f'tensors, tangents also must be. Got primals with structure {p_spec} '
                           f'and tangents with structure {t_spec}')
    for p, t in zip(flat_p, flat_t):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError('jvp(f, primals, tangents): Expected primals and tangents to only '
                               'contain Tensors')
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f'jvp(f, primals, tangents): Expected primals and tangents to '
                               f'have the same shape, got {tuple(p.shape)} and '
                               f'{tuple(t.shape)}')
    return flat_p, flat_t, p_spec


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``, the Jacobian-vector product computed in forward
    mode (PyTorch's ``torch.func.jvp``)."""
    if strict:
        raise RuntimeError('jvp(f, primals, tangents, strict=True): strict=True is not '
                           'implemented yet (it is not in PyTorch either)')
    flat_p, flat_t, p_spec = _check_jvp_args(primals, tangents)
    if fwAD._current_level >= 0 or _depth() > 0 or any(is_batchedtensor(p) for p in flat_p):
        return _jvp_by_double_vjp(func, flat_p, flat_t, p_spec, has_aux)
    keep = any(x.requires_grad for x in flat_p + flat_t)
    return _jvp_forward_mode(func, flat_p, flat_t, p_spec, has_aux, keep)


def _jvp_forward_mode(func, flat_p, flat_t, p_spec, has_aux, keep):
    with _Transform(), fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        output = func(*tree_unflatten(duals, p_spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError('jvp(f, primals, tangents): output of function f should be a '
                                   'tuple: (output, aux) if has_aux is True')
            output, aux = output
        flat_out, out_spec = tree_flatten(output)
        outs, tans = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f'jvp(f, primals, tangents): Expected f(*primals) to return '
                                   f'only tensors, got unsupported type {type(o)}')
            primal, tangent = fwAD.unpack_dual(o)
            outs.append(_undo(primal, keep))
            tans.append(_zeros_like(primal) if tangent is None else _undo(tangent, keep))
        result = (tree_unflatten(outs, out_spec), tree_unflatten(tans, out_spec))
        if has_aux:
            return result + (_tree_undo(aux, keep),)
        return result


def _jvp_by_double_vjp(func, flat_p, flat_t, p_spec, has_aux):
    """J t as the gradient, with respect to a dummy cotangent u, of <J^T u, t>: reverse
    mode only, so it nests inside other transforms and inside a forward-AD level."""
    keep = _depth() > 0 or any(x.requires_grad for x in flat_p + flat_t)
    res = vjp(lambda *p: func(*p), *tree_unflatten(flat_p, p_spec), has_aux=has_aux)
    output, vjp_fn = res[0], res[1]
    flat_out, out_spec = tree_flatten(output)
    with _Transform():
        us = [_zeros_like(o).requires_grad_() for o in flat_out]
        vs = tree_flatten(vjp_fn(tree_unflatten(us, out_spec), create_graph=True))[0]
        total = None
        for v, t in zip(vs, flat_t):
            term = (v * t).sum()
            total = term if total is None else total + term
        tans = _grads(total, us, None, _depth() > 1) if total is not None and total.requires_grad \
            else [_zeros_like(u) for u in us]
    result = (output, tree_unflatten([_undo(t, keep) for t in tans], out_spec))
    if has_aux:
        return result + (res[2],)
    return result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector
    product at ``primals`` (PyTorch's ``torch.func.linearize``). Each call of ``jvp_fn``
    runs a forward-mode pass at the saved primals."""
    output = func(*primals)
    flat_out, out_spec = tree_flatten(output)
    saved = tuple(p.detach() if isinstance(p, Tensor) else p for p in primals)

    def jvp_fn(*tangents):
        _check_jvp_args(saved, tangents)
        return jvp(func, saved, tangents)[1]
    return tree_unflatten([_undo(o, False) for o in flat_out], out_spec), jvp_fn


def _basis(flat):
    """Rows of the identity over all leaves: one tensor per leaf, shaped (N, *leaf.shape)
    where N is the total number of elements."""
    from tensorplay import eye
    sizes = [x.numel() for x in flat]
    n = sum(sizes)
    ident = eye(n, dtype=flat[0].dtype, device=flat[0].device)
    out, start = [], 0
    for x, k in zip(flat, sizes):
        out.append(ident.narrow(1, start, k).reshape(n, *x.shape).to(x.dtype))
        start += k
    return out


def _argnum_primals(args, argnums, name):
    nums = _argnums_check(argnums, len(args), name)
    return nums, tuple(args[n] for n in nums)


def _with_args(func, args, kwargs, nums):
    def f(*diff):
        a = list(args)
        for n, d in zip(nums, diff):
            a[n] = d
        return func(*a, **kwargs)
    return f


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``argnums`` by reverse mode: one vjp per
    output element, batched with vmap (PyTorch's ``torch.func.jacrev``)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError('jacrev: `chunk_size` should be greater than 0.')

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, primals = _argnum_primals(args, argnums, 'jacrev')
        res = vjp(_with_args(func, args, kwargs, nums), *primals, has_aux=has_aux)
        output, vjp_fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(output)
        basis = _basis(flat_out)
        rows = vmap(vjp_fn, chunk_size=chunk_size)(tree_unflatten(basis, out_spec))
        # rows[i] is (N, *primal_i) for N output elements: split N per output
        flat_p, p_spec = tree_flatten(primals)
        flat_rows = tree_flatten(rows)[0]
        per_out = []
        start = 0
        for o in flat_out:
            k = o.numel()
            per_out.append(tree_unflatten(
                [r.narrow(0, start, k).reshape(*o.shape, *p.shape)
                 for r, p in zip(flat_rows, flat_p)], p_spec))
            start += k
        if isinstance(argnums, int):
            per_out = [j[0] for j in per_out]
        jac = tree_unflatten(per_out, out_spec)
        if has_aux:
            return jac, res[2]
        return jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness='error'):
    """The Jacobian of ``func`` with respect to ``argnums`` by forward mode: one jvp per
    input element, batched with vmap (PyTorch's ``torch.func.jacfwd``)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums, primals = _argnum_primals(args, argnums, 'jacfwd')
        f = _with_args(func, args, kwargs, nums)
        flat_p, p_spec = tree_flatten(primals)
        basis = _basis(flat_p)

        def push(*tangent_leaves):
            return jvp(f, primals, tree_unflatten(list(tangent_leaves), p_spec), has_aux=has_aux)
        outs = vmap(push, randomness=randomness, out_dims=(None, 0, None) if has_aux
                    else (None, 0))(*basis)
        output, cols = outs[0], outs[1]
        flat_out, out_spec = tree_flatten(output)
        flat_cols = tree_flatten(cols)[0]  # each (N, *out_i)
        per_out = []
        for o, c in zip(flat_out, flat_cols):
            pieces, start = [], 0
            for p in flat_p:
                k = p.numel()
                block = c.narrow(0, start, k).reshape(*p.shape, *o.shape)
                pieces.append(block.movedim(list(range(p.dim())),
                                            list(range(o.dim(), o.dim() + p.dim())))
                              if p.dim() else block)
                start += k
            tree = tree_unflatten(pieces, p_spec)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
        jac = tree_unflatten(per_out, out_spec)
        if has_aux:
            return jac, outs[2]
        return jac
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
