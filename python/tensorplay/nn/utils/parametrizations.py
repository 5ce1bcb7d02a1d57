"""weight_norm, spectral_norm and orthogonal as parametrizations (PyTorch's
nn.utils.parametrizations)."""
import tensorplay as tp
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.utils import parametrize


def _norm_except_dim(v, dim):
    if dim == -1:
        return tp.linalg.vector_norm(v)
    if dim == 0:
        shape = (v.size(0),) + (1,) * (v.dim() - 1)
        return tp.linalg.vector_norm(v.contiguous().reshape((v.size(0), -1)), dim=1).reshape(shape)
    if dim == v.dim() - 1:
        shape = (1,) * (v.dim() - 1) + (v.size(-1),)
        return tp.linalg.vector_norm(v.contiguous().reshape((-1, v.size(-1))), dim=0).reshape(shape)
    return _norm_except_dim(v.transpose(0, dim), 0).transpose(0, dim)


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """weight = g * v / ||v|| (norm over every dim but `dim`); g is original0, v original1."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = tuple(weight_mat.shape)
            u = weight_mat.new_empty((h,)).normal_(0, 1)
            v = weight_mat.new_empty((w,)).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with tp.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(tp.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(tp.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = tp.vdot(u, tp.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """weight / sigma, sigma the largest singular value estimated by power iteration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, tp.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from tensorplay.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _make_orthogonal(A):
    """The Q of A's QR decomposition with diag(R) made positive (an orthonormal basis of A's
    column space, as PyTorch builds it from geqrf and householder_product)."""
    a, tau = tp.geqrf(A)
    q = tp.linalg.householder_product(a, tau)
    return q * a.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    eps = 10.0 * n * tp.finfo(Q.dtype).eps
    return tp.allclose(Q.mT @ Q, tp.eye(k, dtype=Q.dtype), atol=eps)


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (columns or rows orthonormal,
    whichever the shape allows) through matrix_exp, the Cayley map or Householder products;
    with use_trivialization the result multiplies a stored orthogonal ``base``."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = tp.cat([X, X.new_zeros(n, n - k).expand(tuple(X.shape[:-2]) + (n, n - k))],
                           dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = tp.matrix_exp(A)
            else:
                Id = tp.eye(n, dtype=A.dtype)
                Q = tp.linalg.solve(tp.add(Id, A, alpha=-0.5), tp.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = tp.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    @tp.no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            # the Householder vectors whose product (with the sign fix of forward) is Q
            A, tau = tp.geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            N = tp.randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype)
            Q = _make_orthogonal(tp.cat([Q, N], dim=-1))
        self.base = Q
        # X = -Id maps to the identity, so the parametrized weight starts as base
        neg_Id = tp.zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrains ``module.<name>`` (a matrix or batch of matrices) to be orthogonal.
    ``orthogonal_map``: "matrix_exp" (default for square), "cayley" or "householder"
    (default otherwise); with ``use_trivialization`` the map is applied around a stored base.

        layer = orthogonal(nn.Linear(20, 40))
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, tp.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
