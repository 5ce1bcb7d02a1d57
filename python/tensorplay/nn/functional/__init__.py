"""nn.functional: the stateless forms of the layers and losses.

Most functions here are compositions of TensorPlay ops (autograd then follows for free);
where a fused C++ kernel exists (convolution, pooling, normalisation, softmax) the function
calls it. Random functions (dropout and friends) draw exactly as PyTorch does
(docs/random.md), so seeded runs match PyTorch's masks.
"""

from tensorplay.nn.functional.activation import (  # noqa: F401
    alpha_dropout,
    bilinear,
    celu,
    celu_,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    elu,
    elu_,
    feature_alpha_dropout,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    linear,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_)
from tensorplay.nn.functional.sparse import (  # noqa: F401
    embedding,
    embedding_bag,
    one_hot)
from tensorplay.nn.functional.distance import (  # noqa: F401
    cosine_similarity,
    normalize,
    pairwise_distance,
    pdist)
from tensorplay.nn.functional.conv_pool import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    unfold)
from tensorplay.nn.functional.fractional_pool import (  # noqa: F401
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices)
from tensorplay.nn.functional.spatial import (  # noqa: F401
    affine_grid,
    channel_shuffle,
    grid_sample,
    interpolate,
    native_channel_shuffle,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest)
from tensorplay.nn.functional.normalization import (  # noqa: F401
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    rms_norm)
from tensorplay.nn.functional.attention import (  # noqa: F401
    multi_head_attention_forward,
    scaled_dot_product_attention)
from tensorplay.nn.functional.loss import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss)
from tensorplay.nn.functional.linear_cross_entropy import linear_cross_entropy  # noqa: F401
from tensorplay.nn.functional._common import Tensor, _legacy_reduction  # noqa: F401
# the __torch_function__ helpers PyTorch's nn.functional re-exports (the same objects)
from tensorplay.overrides import (handle_torch_function, has_torch_function,  # noqa: E402,F401
                                  has_torch_function_unary, has_torch_function_variadic)
