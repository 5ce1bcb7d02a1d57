import math
from numbers import Number

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import broadcast_all

__all__ = ['GeneralizedPareto']


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution with location ``loc``, scale ``scale`` and shape
    ``concentration`` (xi): survival function (1 + xi z)^(-1/xi), z = (x - loc) / scale, and
    exp(-z) at xi = 0. Exponential (xi = 0), Pareto (xi > 0) and Uniform (xi = -1) are special
    cases. Sampled by inverting the CDF."""
    arg_constraints = {'loc': constraints.real, 'scale': constraints.positive,
                       'concentration': constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        numbers = all(isinstance(v, Number) for v in (loc, scale, concentration))
        super().__init__(tp.Size() if numbers else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = tp.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _shape(self):
        """(xi is numerically 0, xi with 1 put where it is 0): the xi = 0 branch is selected
        by ``where``, the other is computed with a harmless xi."""
        xi = self.concentration
        zero = tp.isclose(xi, tp.zeros_like(xi))
        return zero, tp.where(zero, tp.ones_like(xi), xi)

    def rsample(self, sample_shape=tp.Size()):
        u = tp.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._shape()
        power = 1 / xi + tp.ones_like(z)
        tail = tp.where(power == 0, power, power * tp.log1p(xi * z))
        return -self.scale.log() - tp.where(zero, z, tail)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._shape()
        return tp.where(zero, -z, -tp.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return tp.log1p(-tp.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return tp.exp(self.log_cdf(value))

    def icdf(self, value):
        zero, xi = self._shape()
        log_u = tp.log1p(-value)
        return tp.where(zero, self.loc - self.scale * log_u,
                        self.loc + self.scale / xi * tp.expm1(-xi * log_u))

    @property
    def mean(self):
        finite = self.concentration < 1
        xi = tp.where(finite, self.concentration, 0.5)
        return tp.where(finite, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self):
        finite = self.concentration < 0.5
        xi = tp.where(finite, self.concentration, 0.25)
        return tp.where(finite, self.scale ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    def entropy(self):
        return tp.broadcast_to(self.scale.log() + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = tp.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
