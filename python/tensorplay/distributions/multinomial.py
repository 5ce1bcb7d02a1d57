import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.binomial import Binomial
from tensorplay.distributions.categorical import Categorical
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import broadcast_all

__all__ = ['Multinomial']


class Multinomial(Distribution):
    """Counts per category of ``total_count`` Categorical(``probs``) draws (sample only needs
    ``total_count``; log_prob accepts any counts)."""
    arg_constraints = {'probs': constraints.simplex, 'logits': constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tp.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=tp.Size()):
        sample_shape = tp.Size(sample_shape)
        # (total_count, *sample_shape, *batch_shape) category draws, counted per category
        samples = self._categorical.sample(tp.Size((self.total_count,)) + sample_shape)
        order = list(range(1, samples.dim())) + [0]
        samples = samples.permute(*order)
        counts = samples.new_zeros(self._extended_shape(sample_shape))
        counts.scatter_add_(-1, samples, tp.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = tp.tensor(self.total_count)
        term1 = n * self._categorical.entropy() - tp.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = tp.exp(self._binomial.log_prob(support))
        term2 = (binomial_probs * tp.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone(memory_format=tp.contiguous_format)
        log_factorial_n = tp.lgamma(value.sum(-1) + 1)
        log_factorial_xs = tp.lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -float('inf'))] = 0  # 0 * -inf counts as 0
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
