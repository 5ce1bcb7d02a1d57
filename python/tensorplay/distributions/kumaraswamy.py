import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.transformed_distribution import TransformedDistribution
from tensorplay.distributions.transforms import AffineTransform, PowerTransform
from tensorplay.distributions.uniform import Uniform
from tensorplay.distributions.utils import broadcast_all, euler_constant

__all__ = ['Kumaraswamy']


def _moment(a, b, n):
    """E[X^n] of Kumaraswamy(a, b): b * B(1 + n/a, b)."""
    shifted = 1 + n / a
    return b * (shifted.lgamma() + b.lgamma() - (shifted + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1), density a b x^(a-1) (1 - x^a)^(b-1) with
    a = concentration1, b = concentration0; sampled as (1 - U^(1/b))^(1/a)."""
    arg_constraints = {'concentration1': constraints.positive, 'concentration0': constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(tp.full_like(self.concentration0, 0), tp.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        steps = [PowerTransform(exponent=self.concentration0.reciprocal()),
                 AffineTransform(loc=1.0, scale=-1.0),
                 PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return tp.where((b < 1) | (a < 1), float('nan'), log_mode).exp()

    @property
    def variance(self):
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
