#include "kh/ref/gpu/cuda/device_executor.cuh"
#include "kh/ref/gpu/cuda/device_references.h"
#include "kh/ref/gpu/dsa_attention.h"

namespace kh::gpuref {

void dsa_sparse_attention_on_device(const ReferenceArgs& args, void* stream) {
  DeviceExecutor exec(stream);
  dsa_sparse_attention_reference(exec, args);
}

}  // namespace kh::gpuref
