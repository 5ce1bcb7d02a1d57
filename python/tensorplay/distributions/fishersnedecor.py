from numbers import Number

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.utils import broadcast_all

__all__ = ['FisherSnedecor']


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom: the ratio of two
    independent chi-squared variables, each divided by its degrees of freedom."""
    arg_constraints = {'df1': constraints.positive, 'df2': constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # Chi2(k) / k is Gamma(k / 2, k / 2) = Gamma(k / 2, rate k) scaled by 2: the factors cancel
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = tp.Size() if isinstance(df1, Number) and isinstance(df2, Number) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = tp.Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = self.df2
        return tp.where(df2 > 2, df2 / (df2 - 2), float('nan'))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return tp.where(self.df1 > 2, mode, float('nan'))

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        value = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return tp.where(d2 > 4, value, float('nan'))

    def rsample(self, sample_shape=tp.Size()):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = tp.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_norm = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_norm + half1 * ratio.log() + (half1 - 1) * tp.log(value)
                - (half1 + half2) * tp.log1p(ratio * value))
