"""nn.utils.spectral_norm: the hook-based spectral normalisation (``weight_orig`` plus the
power-iteration vectors ``weight_u``/``weight_v``); nn.utils.parametrizations.spectral_norm
is the newer form."""
import tensorplay as tp
from tensorplay.nn import functional as F
from tensorplay.nn.parameter import Parameter

__all__ = ["spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook: sets ``module.<name>`` to ``<name>_orig / sigma`` before each
    call, with one more power iteration per call in training mode."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with tp.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(tp.mv(matrix.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(tp.mv(matrix, v), dim=0, eps=self.eps))
                # copies: the buffers change in place on the next call, the graph keeps these
                u, v = u.clone(), v.clone()
        sigma = tp.dot(u, tp.mv(matrix, v))
        return weight / sigma

    def remove(self, module):
        with tp.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with tp.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparameterises ``module.<name>`` as ``<name>_orig / sigma``, sigma its largest
    singular value estimated by power iteration (one step per training-mode call). ``dim``:
    the output-channel dimension (1 for ConvTranspose, else 0).

        >>> m = tp.nn.utils.spectral_norm(tp.nn.Linear(20, 40))
        >>> m.weight_u.shape
        tensorplay.Size([40])
    """
    if dim is None:
        transposed = (tp.nn.ConvTranspose1d, tp.nn.ConvTranspose2d, tp.nn.ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undoes spectral_norm: ``module.<name>`` becomes a plain Parameter again (the
    normalised weight as it stands)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
