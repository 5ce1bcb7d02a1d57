"""nn.utils: gradient clipping and parameter/vector conversion."""
from tensorplay.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
from tensorplay.nn.utils import rnn  # noqa: E402,F401
from tensorplay.nn.utils import stateless  # noqa: E402,F401
from tensorplay.nn.utils import parametrize, parametrizations  # noqa: E402,F401
from tensorplay.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401
