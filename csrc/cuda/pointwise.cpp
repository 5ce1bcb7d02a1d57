// The CUDA pointwise launch table, filled once from the generated cuda_kernels_N.cu shards.
#include "cuda/pointwise.h"

namespace tp::cuda {

#define TP_DECLARE_SHARD(n) void register_cuda_kernels_##n(DeviceLaunch (*table)[kNumDTypes]);
TP_DECLARE_SHARD(0) TP_DECLARE_SHARD(1) TP_DECLARE_SHARD(2) TP_DECLARE_SHARD(3)
TP_DECLARE_SHARD(4) TP_DECLARE_SHARD(5) TP_DECLARE_SHARD(6) TP_DECLARE_SHARD(7)
TP_DECLARE_SHARD(8) TP_DECLARE_SHARD(9) TP_DECLARE_SHARD(10) TP_DECLARE_SHARD(11)
TP_DECLARE_SHARD(12) TP_DECLARE_SHARD(13) TP_DECLARE_SHARD(14) TP_DECLARE_SHARD(15)
#undef TP_DECLARE_SHARD

PwLaunchTable& pointwise_launches() {
  static PwLaunchTable table = {};
  static bool ready = [] {
    register_cuda_kernels_0(table); register_cuda_kernels_1(table);
    register_cuda_kernels_2(table); register_cuda_kernels_3(table);
    register_cuda_kernels_4(table); register_cuda_kernels_5(table);
    register_cuda_kernels_6(table); register_cuda_kernels_7(table);
    register_cuda_kernels_8(table); register_cuda_kernels_9(table);
    register_cuda_kernels_10(table); register_cuda_kernels_11(table);
    register_cuda_kernels_12(table); register_cuda_kernels_13(table);
    register_cuda_kernels_14(table); register_cuda_kernels_15(table);
    return true;
  }();
  (void)ready;
  return table;
}

}  // namespace tp::cuda
