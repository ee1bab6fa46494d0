#include "kh/ref/gpu/cuda/device_executor.cuh"
#include "kh/ref/gpu/cuda/device_references.h"
#include "kh/ref/gpu/gdn.h"

namespace kh::gpuref {

void gdn_decode_on_device(const ReferenceArgs& args, void* stream) {
  DeviceExecutor exec(stream);
  gdn_reference(exec, args, /*prefill=*/false);
}

void gdn_prefill_on_device(const ReferenceArgs& args, void* stream) {
  DeviceExecutor exec(stream);
  gdn_reference(exec, args, /*prefill=*/true);
}

}  // namespace kh::gpuref
