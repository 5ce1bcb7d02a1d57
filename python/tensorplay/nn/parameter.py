"""nn.Parameter: a tensor that a Module registers as one of its parameters."""
from tensorplay import _C

Tensor = _C.Tensor


class Parameter(Tensor):
    """A tensor that, assigned as a Module attribute, becomes one of its parameters.
    It aliases `data` (no copy) and requires grad unless told otherwise. A tensor of another
    subclass (a fake tensor, a wrapper) stays of its class, detached, and becomes an instance
    of a class deriving from both (PyTorch marks it `_is_param` and lets its Parameter
    metaclass answer isinstance; nanobind's metaclass cannot be subclassed)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty((0,))
        if type(data) is Tensor or type(data) is Parameter:
            return _C._make_subclass(cls, data, requires_grad)
        t = data.detach().requires_grad_(requires_grad)
        if type(t) is not type(data):
            raise RuntimeError(
                f"Creating a Parameter from an instance of type {type(data).__name__} requires that "
                f"detach() returns an instance of the same type, but return type {type(t).__name__} "
                "was found instead. To use the type as a Parameter, please correct the detach() "
                "semantics defined by its __torch_dispatch__() implementation.")
        t._is_param = True
        return _C._as_subclass_inplace(t, _parameter_class(type(t)), t.__dict__)

    def __init__(self, data=None, requires_grad=True):
        pass  # __new__ did the work; Tensor has no Python-callable constructor

    # a parameter computes as a plain tensor: its results are Tensors, not Parameters
    __torch_function__ = _C._disabled_torch_function_impl

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__


_PARAMETER_CLASSES = {}


def _parameter_class(cls):
    """`cls` as a Parameter: its name and behaviour are cls's, `isinstance(p, Parameter)`."""
    if issubclass(cls, Parameter) or cls in _PARAMETER_CLASSES.values():
        return cls
    made = _PARAMETER_CLASSES.get(cls)
    if made is None:
        # One nanobind base only: the class derives from cls, and `isinstance(p, Parameter)`
        # holds through `__class__` (isinstance's fallback after the type test).
        # a class with its own __torch_function__ (DTensor) keeps it, as PyTorch's parameter
        # of such a class is the tensor itself; other classes compute as plain tensors
        own = next((k.__dict__['__torch_function__'] for k in cls.__mro__[:-1]
                    if k is not Tensor and '__torch_function__' in k.__dict__), None)
        made = _PARAMETER_CLASSES[cls] = type(cls.__name__, (cls,),
                                              {'__module__': cls.__module__,
                                               '__qualname__': cls.__qualname__,
                                               '_is_param': True,
                                               '__torch_function__': own if own is not None
                                               else _C._disabled_torch_function_impl,
                                               '__class__': property(lambda self: Parameter)})
    return made


class UninitializedTensorMixin:
    """Shape-less placeholders of lazy modules, materialised on their first forward."""

    def materialize(self, shape, device=None, dtype=None):
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        self.data = _C.empty(shape, dtype=self.dtype if dtype is None else dtype,
                             device=self.device if device is None else device)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _C._make_subclass(cls, _C.empty((0,), dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class Buffer(Tensor):
    """Marks a tensor assigned to a Module attribute as a buffer (nn.Buffer)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty((0,))
        t = _C._make_subclass(cls, data, data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    cls_to_become = Buffer  # a subclass: the C++ Tensor type takes no __class__ assignment

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _C._make_subclass(cls, _C.empty((0,), dtype=dtype, device=device), requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(param):
    return isinstance(param, UninitializedTensorMixin)
