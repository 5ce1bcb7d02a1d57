#include "kernels/cpu_stubs.h"

namespace tp::cpu {

constinit KernelStub<FillLoops> pointwise_shard_stubs[kPointwiseShards];
constinit KernelStub<CastFn> cast_stub;
constinit KernelStub<TransposeCopyFn> transpose_copy_stub;
constinit KernelStub<ReduceFn> reduce_stub;
constinit KernelStub<SoftmaxFn> softmax_stub;
constinit KernelStub<SoftmaxBackwardFn> softmax_backward_stub;
constinit KernelStub<CrossEntropyBackwardFn> cross_entropy_backward_stub;
constinit KernelStub<LayerNormFn> layer_norm_stub;
constinit KernelStub<LayerNormBackwardFn> layer_norm_backward_stub;
constinit KernelStub<BatchNormFn> batch_norm_stub;
constinit KernelStub<BatchNormBackwardFn> batch_norm_backward_stub;
constinit KernelStub<GroupNormFn> group_norm_stub;
constinit KernelStub<GroupNormBackwardFn> group_norm_backward_stub;
constinit KernelStub<ConvForwardFn> conv_direct_forward_stub;
constinit KernelStub<ConvBackwardFn> conv_direct_input_stub, conv_direct_weight_stub;
constinit KernelStub<ConvWinogradFn> conv_winograd_stub;
constinit KernelStub<ConvTiledFn> conv_tiled_stub;
constinit KernelStub<ConvTiledWeightFn> conv_tiled_weight_stub;
constinit KernelStub<ConvWinogradWeightFn> conv_winograd_weight_transforms_stub;
constinit KernelStub<Im2colFn> im2col_stub;
constinit KernelStub<Col2imFn> col2im_stub;
constinit KernelStub<ConvAddBiasFn> conv_add_bias_stub;
constinit KernelStub<ConvBiasGradFn> conv_bias_grad_stub;
constinit KernelStub<MaxPoolFn> max_pool_stub;
constinit KernelStub<AvgPoolFn> avg_pool_stub, avg_pool_backward_stub;
constinit KernelStub<MaxPoolBackwardFn> max_pool_backward_stub;

constinit KernelStub<FusedSgdFn> fused_sgd_stub;
constinit KernelStub<FusedAdamFn> fused_adam_stub;
constinit KernelStub<FusedAdagradFn> fused_adagrad_stub;
constinit KernelStub<EmbeddingBagFn> embedding_bag_stub;
constinit KernelStub<EmbeddingBagBackwardFn> embedding_bag_backward_stub;
constinit KernelStub<EmbeddingBagMaxBackwardFn> embedding_bag_max_backward_stub;
constinit KernelStub<EmbeddingBagPerSampleWeightsBackwardFn> embedding_bag_per_sample_weights_backward_stub;
constinit KernelStub<LstmCellFn> lstm_cell_stub;
constinit KernelStub<LstmCellBackwardFn> lstm_cell_backward_stub;
constinit KernelStub<SortFn> sort_stub;
constinit KernelStub<IndexRangeFn> index_range_stub;
constinit KernelStub<GridSampleFn> grid_sample_stub;
constinit KernelStub<GridSampleBackwardFn> grid_sample_backward_stub;

}  // namespace tp::cpu
