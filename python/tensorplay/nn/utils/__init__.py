"""nn.utils: gradient clipping, parameter/vector conversion, weight and spectral norms,
BatchNorm fusion and skip_init."""
from tensorplay.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
from tensorplay.nn.utils import rnn  # noqa: E402,F401
from tensorplay.nn.utils import stateless  # noqa: E402,F401
from tensorplay.nn.utils import parametrize, parametrizations  # noqa: E402,F401
from tensorplay.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401
from tensorplay.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402,F401
from tensorplay.nn.utils.fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights,  # noqa: E402,F401
                                        fuse_linear_bn_eval, fuse_linear_bn_weights)
from tensorplay.nn.utils.init import skip_init  # noqa: E402,F401
