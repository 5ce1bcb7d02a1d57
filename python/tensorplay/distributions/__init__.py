r"""tp.distributions: probability distributions with PyTorch's torch.distributions API.

Each distribution has ``sample`` / ``rsample`` (reparameterised, where ``has_rsample``),
``log_prob``, ``cdf`` / ``icdf`` (where defined), ``entropy``, ``mean`` / ``mode`` /
``variance`` / ``stddev``, ``expand``, ``support`` and ``arg_constraints`` (checked when
``validate_args``, as PyTorch checks them). Samplers draw from TensorPlay's generator exactly
as PyTorch's draw, so with the same seed samples equal PyTorch's bit for bit on the CPU.
``kl_divergence`` (with ``register_kl``), ``transforms``, ``constraints`` and
``biject_to`` / ``transform_to`` are as in PyTorch.

    >>> d = tp.distributions.Normal(tp.tensor(0.0), tp.tensor(1.0))
    >>> d.log_prob(tp.tensor(0.5))
    tensor(-1.0439)
"""
from tensorplay.distributions import constraints, transforms
from tensorplay.distributions.bernoulli import Bernoulli
from tensorplay.distributions.beta import Beta
from tensorplay.distributions.binomial import Binomial
from tensorplay.distributions.categorical import Categorical
from tensorplay.distributions.cauchy import Cauchy
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.constraint_registry import biject_to, transform_to
from tensorplay.distributions.continuous_bernoulli import ContinuousBernoulli
from tensorplay.distributions.dirichlet import Dirichlet
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.exponential import Exponential
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.geometric import Geometric
from tensorplay.distributions.gumbel import Gumbel
from tensorplay.distributions.fishersnedecor import FisherSnedecor
from tensorplay.distributions.generalized_pareto import GeneralizedPareto
from tensorplay.distributions.half_cauchy import HalfCauchy
from tensorplay.distributions.half_normal import HalfNormal
from tensorplay.distributions.inverse_gamma import InverseGamma
from tensorplay.distributions.kumaraswamy import Kumaraswamy
from tensorplay.distributions.logistic_normal import LogisticNormal
from tensorplay.distributions.pareto import Pareto
from tensorplay.distributions.independent import Independent
from tensorplay.distributions.kl import _add_kl_info, kl_divergence, register_kl
from tensorplay.distributions.laplace import Laplace
from tensorplay.distributions.lkj_cholesky import LKJCholesky
from tensorplay.distributions.log_normal import LogNormal
from tensorplay.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tensorplay.distributions.mixture_same_family import MixtureSameFamily
from tensorplay.distributions.multinomial import Multinomial
from tensorplay.distributions.multivariate_normal import MultivariateNormal
from tensorplay.distributions.negative_binomial import NegativeBinomial
from tensorplay.distributions.normal import Normal
from tensorplay.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from tensorplay.distributions.poisson import Poisson
from tensorplay.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from tensorplay.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from tensorplay.distributions.studentT import StudentT
from tensorplay.distributions.transformed_distribution import TransformedDistribution
from tensorplay.distributions.transforms import *  # noqa: F403
from tensorplay.distributions.uniform import Uniform
from tensorplay.distributions.von_mises import VonMises
from tensorplay.distributions.weibull import Weibull
from tensorplay.distributions.wishart import Wishart

_add_kl_info()

__all__ = ['Bernoulli', 'Beta', 'Binomial', 'Categorical', 'Cauchy', 'Chi2', 'ContinuousBernoulli', 'Dirichlet',
           'Distribution', 'Exponential', 'ExponentialFamily', 'Gamma', 'Geometric', 'Gumbel', 'HalfNormal',
           'Independent', 'LKJCholesky', 'Laplace', 'LogNormal', 'LogitRelaxedBernoulli', 'LowRankMultivariateNormal',
           'MixtureSameFamily', 'Multinomial', 'MultivariateNormal', 'NegativeBinomial', 'Normal',
           'OneHotCategorical', 'OneHotCategoricalStraightThrough', 'Poisson', 'RelaxedBernoulli',
           'RelaxedOneHotCategorical', 'ExpRelaxedCategorical', 'StudentT', 'TransformedDistribution', 'Uniform',
           'VonMises', 'Weibull', 'Wishart', 'biject_to', 'kl_divergence', 'register_kl', 'transform_to',
           'FisherSnedecor', 'GeneralizedPareto', 'HalfCauchy', 'InverseGamma', 'Kumaraswamy', 'LogisticNormal', 'Pareto']
__all__.extend(transforms.__all__)
