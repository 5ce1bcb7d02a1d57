"""The Wishart distribution over positive-definite matrices."""
import math
import warnings
from numbers import Number

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.multivariate_normal import _precision_to_scale_tril
from tensorplay.distributions.utils import lazy_property

__all__ = ['Wishart']

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma: sum_{i < p} digamma(x - i / 2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    half_steps = tp.arange(p, dtype=x.dtype, device=x.device) / 2
    return tp.digamma(x.unsqueeze(-1) - half_steps.expand(tuple(x.shape) + (-1,))).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, Sigma): the distribution of sum_k x_k x_k^T for df independent
    x_k ~ N(0, Sigma), real df > p - 1 allowed. Sigma is given by exactly one of
    covariance_matrix, precision_matrix (its inverse) or scale_tril (its lower Cholesky factor).

    Samples use the Bartlett decomposition: with A lower triangular, A_ii = sqrt(chi2(df - i))
    and standard normals below the diagonal, (L A)(L A)^T ~ Wishart(df, L L^T).

        >>> W = tp.distributions.Wishart(tp.tensor(5.0), covariance_matrix=tp.eye(3))
        >>> W.sample().shape
        tensorplay.Size([3, 3])
    """
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {'covariance_matrix': constraints.positive_definite,
                'precision_matrix': constraints.positive_definite,
                'scale_tril': constraints.lower_cholesky,
                'df': constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, p) for n, p in (('covariance_matrix', covariance_matrix),
                                     ('precision_matrix', precision_matrix),
                                     ('scale_tril', scale_tril)) if p is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                                 "may be specified.")
        name, param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if isinstance(df, Number):
            batch_shape = tp.Size(param.shape[:-2])
            self.df = tp.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tp.Size(tp.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tp.Size(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(k + 1) for k in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tp.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape):
        """chi2(df - i) for the diagonal of the Bartlett factor, i = 0 .. p - 1."""
        L = self._unbroadcasted_scale_tril
        steps = tp.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tp.Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(k + 1) for k in range(len(batch_shape))]
        for name in ('covariance_matrix', 'scale_tril', 'precision_matrix'):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = tp.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return tp.cholesky_solve(eye, L).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = tp.where(factor <= 0, tp.full((), float('nan'), dtype=factor.dtype,
                                               device=factor.device), factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self.df.reshape(self._batch_shape + (1, 1)) * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = diag.clamp(min=tp.finfo(diag.dtype).eps)
        noise = tp.diag_embed(diag)
        i, j = tp.tril_indices(p, p, offset=-1)
        # Note [Wishart draws]: the chi-squared draws first, then the p (p - 1) / 2 normals of
        # each matrix in row-major order below the diagonal, as PyTorch draws them.
        below = tp.randn(tp.Size(sample_shape) + self._batch_shape + (p * (p - 1) // 2,),
                         dtype=noise.dtype, device=noise.device)
        noise = _put_below_diagonal(noise, i, j, below)
        factor = self._unbroadcasted_scale_tril @ noise
        return factor @ factor.transpose(-2, -1)

    def _flag(self, sample):
        """PyTorch's per-sample flag (see Note [Wishart redraw]), over the batch dims."""
        flag = self.support.check(sample)
        if self._batch_shape:
            flag = flag.amax(self._batch_dims)
        return flag

    def rsample(self, sample_shape=tp.Size(), max_try_correction=None):
        """Bartlett samples.

        Note [Wishart redraw]: PyTorch follows the first draw with a repair loop meant for
        singular samples whose test is inverted: it flags the samples that *pass* the
        positive-definite check, warns "Singular sample detected." and draws those again
        (then stops, as the redraws pass its inverted test). The loop is kept as PyTorch
        runs it, warning included, so that seeded samples are PyTorch's."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tp.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        flagged = self._flag(sample)
        if bool(flagged.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = self._bartlett_sampling(tp.Size((int(flagged.sum()),)))
                sample = _put_rows(sample, flagged, redraw)
                still = ~self._flag(redraw)
                flagged = _put_rows(flagged, flagged, still)
                if not bool(flagged.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_det_L = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + log_det_L) - tp.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * tp.linalg.slogdet(value).logabsdet
                - tp.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_det_L = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + log_det_L) + tp.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-tp.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) + \
            tp.mvlgamma(y + (p + 1) / 2, p)


def _put_below_diagonal(noise, i, j, values):
    """noise with values (..., p (p - 1) / 2) written at the strictly lower positions (i, j)."""
    p = noise.size(-1)
    flat = noise.reshape(tuple(noise.shape[:-2]) + (p * p,))
    index = (i * p + j).expand(tuple(values.shape))
    return flat.scatter(-1, index, values).reshape(tuple(noise.shape))


def _put_rows(target, mask, rows):
    """target with its entries where the (leading-dims) mask is set replaced, in order, by rows."""
    if mask.dim() == 0:
        return rows.reshape(tuple(target.shape)) if bool(mask) else target
    out = target.clone()
    out[mask] = rows
    return out
