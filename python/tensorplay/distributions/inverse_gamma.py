import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.transformed_distribution import TransformedDistribution
from tensorplay.distributions.transforms import PowerTransform

__all__ = ['InverseGamma']


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""
    arg_constraints = {'concentration': constraints.positive, 'rate': constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        c = self.concentration
        return tp.where(c > 1, self.rate / (c - 1), float('inf'))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        return tp.where(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)), float('inf'))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
