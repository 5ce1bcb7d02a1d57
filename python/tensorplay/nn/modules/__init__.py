"""The layers of tp.nn (PyTorch's torch.nn.modules)."""
from tensorplay.nn.modules.module import Module
from tensorplay.nn.modules.container import (ModuleDict, ModuleList, ParameterDict, ParameterList,
                                             Sequential)
from tensorplay.nn.modules.linear import Bilinear, Identity, LazyLinear, Linear
from tensorplay.nn.modules.activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid,
                                              Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                                              LogSoftmax, Mish, MultiheadAttention, PReLU, ReLU,
                                              ReLU6, RReLU, Sigmoid, SiLU, Softmax, Softmax2d,
                                              Softmin, Softplus, Softshrink, Softsign, Tanh,
                                              Tanhshrink, Threshold)
from tensorplay.nn.modules.dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,
                                           FeatureAlphaDropout)
from tensorplay.nn.modules.loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CTCLoss,
                                        CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss,
                                        HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                                        MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                                        MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss,
                                        SoftMarginLoss, TripletMarginLoss,
                                        TripletMarginWithDistanceLoss, LinearCrossEntropyLoss)
from tensorplay.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions
from tensorplay.nn.modules.sparse import Embedding, EmbeddingBag
from tensorplay.nn.modules.misc import (ChannelShuffle, CosineSimilarity, Flatten, Fold,
                                        PairwiseDistance, PixelShuffle, PixelUnshuffle, Unflatten,
                                        Unfold, Upsample, UpsamplingBilinear2d,
                                        UpsamplingNearest2d)
from tensorplay.nn.modules.normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm,
                                                 GroupNorm, InstanceNorm1d, InstanceNorm2d,
                                                 InstanceNorm3d, LayerNorm, LocalResponseNorm,
                                                 CrossMapLRN2d,
                                                 RMSNorm)
from tensorplay.nn.modules.conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,
                                        ConvTranspose3d)
from tensorplay.nn.modules.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,
                                           AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d,
                                           AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d,
                                           MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d,
                                           MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d,
                                           FractionalMaxPool3d)
from tensorplay.nn.modules.padding import (CircularPad1d, CircularPad2d, CircularPad3d,
                                           ConstantPad1d, ConstantPad2d, ConstantPad3d,
                                           ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                                           ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                                           ZeroPad1d, ZeroPad2d, ZeroPad3d)
from tensorplay.nn.modules.rnn import (GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell,
                                       RNNCellBase)
from tensorplay.nn.modules.transformer import (Transformer, TransformerDecoder,
                                               TransformerDecoderLayer, TransformerEncoder,
                                               TransformerEncoderLayer)
from tensorplay.nn.modules.lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                                        LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
                                        LazyConvTranspose2d, LazyConvTranspose3d,
                                        LazyInstanceNorm1d, LazyInstanceNorm2d,
                                        LazyInstanceNorm3d)
from tensorplay.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402,F401
