#include "kh/ref/gpu/cuda/device_executor.cuh"
#include "kh/ref/gpu/cuda/device_references.h"
#include "kh/ref/gpu/moe.h"

namespace kh::gpuref {

void moe_fp8_block_scale_on_device(const ReferenceArgs& args, void* stream) {
  DeviceExecutor exec(stream);
  moe_fp8_block_scale_reference(exec, args);
}

}  // namespace kh::gpuref
