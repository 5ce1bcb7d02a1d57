#include "kernels/cpu_stubs.h"

namespace tp::cpu {

constinit KernelStub<FillLoops> pointwise_shard_stubs[kPointwiseShards];
constinit KernelStub<CastFn> cast_stub;
constinit KernelStub<ReduceFn> reduce_stub;

}  // namespace tp::cpu
