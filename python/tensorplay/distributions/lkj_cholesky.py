"""The LKJ distribution over lower Cholesky factors of correlation matrices."""
import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.beta import Beta
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import broadcast_all

__all__ = ['LKJCholesky']


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of dim x dim correlation matrices, with L @ L.T distributed
    with density proportional to det(L @ L.T) ** (concentration - 1) (concentration 1 is
    uniform over correlation matrices).

    Sampling is the onion method (Lewandowski, Kurowicka and Joe, 2009), row by row at once:
    row i of L is sqrt(y_i) times a uniform direction in the first i coordinates, y_i ~
    Beta(i / 2, concentration + (dim - 2 - i + 1) / 2), and the diagonal completes the row to
    unit norm.

        >>> L = tp.distributions.LKJCholesky(3, 0.5).sample()
        >>> tp.allclose((L @ L.T).diagonal(), tp.ones(3))
        True
    """
    arg_constraints = {'concentration': constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # Note [LKJ onion draws]: one Beta per row, drawn together before the normals (as
        # PyTorch draws them): row 0 gets Beta(0.5, eta + (dim - 2) / 2) (its draw is unused
        # since row 0 has no off-diagonal), row i > 0 gets Beta(i - 1/2, eta + (dim - 1 - i) / 2).
        c = self.concentration
        steps = tp.arange(dim - 1, dtype=c.dtype, device=c.device)
        steps = tp.cat([tp.zeros((1,), dtype=c.dtype, device=c.device), steps])
        self._beta = Beta(steps + 0.5, (c + 0.5 * (dim - 2)).unsqueeze(-1) - 0.5 * steps)
        super().__init__(c.shape, tp.Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tp.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=tp.Size()):
        with tp.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = tp.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                              device=y.device).tril(-1)
            direction = normal / normal.norm(dim=-1, keepdim=True)
            direction[..., 0, :] = 0.0  # row 0 is 0 / 0 above
            w = y.sqrt() * direction
            tiny = tp.finfo(w.dtype).tiny
            diag = (1 - (w * w).sum(-1)).clamp(min=tiny).sqrt()
            return w + tp.diag_embed(diag)

    def log_prob(self, value):
        # density of L: prod_i L_ii ** (2 (eta - 1) + dim - i) for i = 2..dim (1-based), over
        # the normaliser of the LKJ correlation density (Lewandowski et al., p. 1999)
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tp.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_norm = 0.5 * dm1 * math.log(math.pi) + tp.mvlgamma(alpha - 0.5, dm1) - tp.lgamma(alpha) * dm1
        return unnormalised - log_norm
