"""Custom differentiable operations: ``Function`` (PyTorch's contract) and its helpers.

``Function.apply`` is one C++ call (``csrc/python/python_function.cpp``); the ``ctx`` that
forward, setup_context and backward receive is the node itself, an instance of the
``<Name>Backward`` class made for each Function subclass.
"""
import functools
import inspect

from tensorplay import _C
from tensorplay.autograd.grad_mode import no_grad

__all__ = ['Function', 'FunctionCtx', 'BackwardCFunction', 'InplaceFunction',
           'NestedIOFunction', 'once_differentiable']


class FunctionCtx:
    """Documentation home of the ctx methods; the ctx object is a ``BackwardCFunction``
    (``save_for_backward``, ``saved_tensors``, ``needs_input_grad``, ``mark_dirty``,
    ``mark_non_differentiable``, ``set_materialize_grads``, ``save_for_forward``)."""


class BackwardCFunction(_C._FunctionBase, FunctionCtx):
    """The node of one call of a custom Function, also its ``ctx``. Arbitrary attributes
    may be set on it in forward and read in backward."""

    def save_for_forward(self, *tensors):
        """Keeps tensors for ``jvp`` (forward-mode AD)."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; but "
                                f"got {i}-th argument of type {type(t)}.")
        self.saved_for_forward = tensors
        self._save_for_forward(tensors)  # version-checked when jvp reads saved_tensors

    def apply(self, *grads):
        """Runs the Function's backward on ``grads`` (what the engine calls)."""
        return type(self)._tp_backward(self, *grads)


def _base_setup_context(ctx, inputs, output):
    raise NotImplementedError("setup_context is not implemented.")


def _bind_args(cls, args, kwargs):
    """forward's positional arguments with keywords and defaults bound (setup_context style),
    as PyTorch binds them."""
    sig = cls.__dict__.get('_tp_forward_signature')
    if sig is None:
        sig = inspect.signature(cls.forward)
        cls._tp_forward_signature = sig
    bound = sig.bind(*args[1:], **kwargs)
    bound.apply_defaults()
    return bound.args


class Function:
    """A differentiable operation written by the user::

        class Exp(tp.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                y, = ctx.saved_tensors
                return grad * y

        y = Exp.apply(x)

    ``forward`` may instead take only the inputs, with ``setup_context(ctx, inputs, output)``
    filling the ctx. ``backward`` returns one gradient (or None) per forward input;
    ``jvp(ctx, *tangents)`` gives forward-mode AD.
    """

    _backward_cls = BackwardCFunction
    _tp_setup_context_style = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "_tp_backward": _user_backward(cls),
                                  "__module__": cls.__module__})
        cls._tp_setup_context_style = cls.setup_context is not _base_setup_context

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        """Computes the outputs (runs with grad mode off)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    setup_context = staticmethod(_base_setup_context)

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient (or None) per forward input, from one per forward output."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """One output tangent per forward output, from one tangent per forward input."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The Function under ``tp.func.vmap``: ``args`` are whole batches, ``in_dims`` the
        batch dim of each (None: not batched), ``info.batch_size`` and ``info.randomness``
        the vmap's; returns ``(outputs, out_dims)``. Or set ``generate_vmap_rule = True``
        to run forward and backward on the batched tensors themselves."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def _tp_bind_args(cls, args, kwargs):
        return _bind_args(cls, args, kwargs)

    # one C++ call; while a vmap runs it hands the call to tp.func (Note [autograd.Function
    # under vmap] in tensorplay/func/_vmap.py)
    apply = classmethod(_C._function_apply)


def _user_backward(cls):
    """The backward the engine calls: ``backward`` or ``vjp`` (defining both is an error)."""
    base = Function.__dict__['backward'].__func__
    backward_fn, vjp_fn = cls.backward, cls.vjp
    if backward_fn is not base and vjp_fn is not base and backward_fn is not vjp_fn:
        def both(ctx, *grads):
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                               "not allowed. You should only implement one of them.")
        return staticmethod(both)
    return staticmethod(vjp_fn if vjp_fn is not base else backward_fn)


def once_differentiable(fn):
    """Decorates a backward that cannot itself be differentiated: it runs with grad mode
    off, and a backward through its results (``create_graph=True``) raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        if not any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        wrapped = _C._delayed_error("trying to differentiate twice a function that was marked "
                                    "with @once_differentiable", (outputs,) if single else outputs)
        return wrapped[0] if single else tuple(wrapped)
    return wrapper


class InplaceFunction(Function):
    """A Function with an ``inplace`` flag (kept for compatibility)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Compatibility form of Function: instance methods ``forward_extended(self, *inputs)``
    and ``backward_extended(self, *grads)``, where ``self`` is the ctx. Call it with
    ``apply`` (or an instance). Inputs and outputs are flat tensors or tuples of them."""

    @staticmethod
    def forward(ctx, *inputs):
        return ctx._forward_cls.forward_extended(ctx, *inputs)

    @staticmethod
    def backward(ctx, *grads):
        return ctx._forward_cls.backward_extended(ctx, *grads)

    def __call__(self, *inputs):
        return type(self).apply(*inputs)

    def forward_extended(self, *inputs):
        """User-defined forward."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User-defined backward."""
        raise NotImplementedError
