"""ExponentialFamily: distributions whose density is exp(<t(x), theta> - F(theta) + k(x))."""
import tensorplay as tp
from tensorplay.distributions.distribution import Distribution

__all__ = ['ExponentialFamily']


class ExponentialFamily(Distribution):
    """Subclasses give ``_natural_params`` (theta), ``_log_normalizer(*theta)`` (F) and
    ``_mean_carrier_measure`` (E[k(x)]); the entropy (and the KL divergence between two
    members of one family, kl.py) follow from them through the Bregman divergence of F,
    whose gradient autograd computes."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*params)
        grads = tp.autograd.grad(lg_normal.sum(), params, create_graph=True)
        result += lg_normal
        for p, g in zip(params, grads):
            result -= (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
