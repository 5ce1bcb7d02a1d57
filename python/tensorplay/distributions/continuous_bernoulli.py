import math
from numbers import Number

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.utils import (broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                                            probs_to_logits)
from tensorplay.nn.functional import binary_cross_entropy_with_logits

__all__ = ['ContinuousBernoulli']


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019);
    near probs = 1/2 (``lims``) its normaliser and moments use Taylor expansions."""
    arg_constraints = {'probs': constraints.unit_interval, 'logits': constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # validate before clamping (clamping would hide invalid values)
            if validate_args is not None:
                if not bool(self.arg_constraints['probs'].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(tp.Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tp.Size(batch_shape)
        if 'probs' in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if 'logits' in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new_empty(*args, **kwargs)

    def _outside_unstable_region(self):
        return tp.max(tp.le(self.probs, self._lims[0]), tp.gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        return tp.where(self._outside_unstable_region(), self.probs, self._lims[0] * tp.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(probs), the normaliser (Taylor expansion near 1/2)."""
        cut = self._cut_probs()
        below = tp.where(tp.le(cut, 0.5), cut, tp.zeros_like(cut))
        above = tp.where(tp.ge(cut, 0.5), cut, tp.ones_like(cut))
        log_norm = (tp.log(tp.abs(tp.log1p(-cut) - tp.log(cut)))
                    - tp.where(tp.le(cut, 0.5), tp.log1p(-2.0 * below), tp.log(2.0 * above - 1.0)))
        x = tp.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tp.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (tp.log1p(-cut) - tp.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * tp.pow(x, 2)) * x
        return tp.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return tp.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        vs = (cut * (cut - 1.0) / tp.pow(1.0 - 2.0 * cut, 2)
              + 1.0 / tp.pow(tp.log1p(-cut) - tp.log(cut), 2))
        x = tp.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tp.where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=tp.Size()):
        shape = self._extended_shape(sample_shape)
        u = tp.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with tp.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=tp.Size()):
        shape = self._extended_shape(sample_shape)
        u = tp.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction='none') + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (tp.pow(cut, value) * tp.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = tp.where(self._outside_unstable_region(), cdfs, value)
        return tp.where(tp.le(value, 0.0), tp.zeros_like(value),
                        tp.where(tp.ge(value, 1.0), tp.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return tp.where(self._outside_unstable_region(),
                        (tp.log1p(-cut + value * (2.0 * cut - 1.0)) - tp.log1p(-cut))
                        / (tp.log(cut) - tp.log1p(-cut)), value)

    def entropy(self):
        log_probs0 = tp.log1p(-self.probs)
        log_probs1 = tp.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = tp.max(tp.le(x, self._lims[0] - 0.5), tp.gt(x, self._lims[1] - 0.5))
        cut = tp.where(outside, x, (self._lims[0] - 0.5) * tp.ones_like(x))
        log_norm = tp.log(tp.abs(tp.special.expm1(cut))) - tp.log(tp.abs(cut))
        taylor = 0.5 * x + tp.pow(x, 2) / 24.0 - tp.pow(x, 4) / 2880.0
        return tp.where(outside, log_norm, taylor)
