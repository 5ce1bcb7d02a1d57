import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import _standard_normal, broadcast_all

__all__ = ['StudentT']


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``
    (sampled as N(0, 1) / sqrt(Chi2(df) / df))."""
    arg_constraints = {'df': constraints.positive, 'loc': constraints.real, 'scale': constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = tp.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        m = self.loc.clone(memory_format=tp.contiguous_format)
        m[self.df <= 1] = float('nan')
        return m

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        m = self.df.clone(memory_format=tp.contiguous_format)
        big = self.df > 2
        m[big] = self.scale[big].pow(2) * self.df[big] / (self.df[big] - 2)
        m[(self.df <= 2) & (self.df > 1)] = float('inf')
        m[self.df <= 1] = float('nan')
        return m

    def rsample(self, sample_shape=tp.Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * tp.rsqrt(z / self.df))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + tp.lgamma(0.5 * self.df) - tp.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * tp.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = tp.lgamma(0.5 * self.df) + math.lgamma(0.5) - tp.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (tp.digamma(0.5 * (self.df + 1)) - tp.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
