#include "kh/ref/gpu/cuda/device_executor.cuh"
#include "kh/ref/gpu/cuda/device_references.h"
#include "kh/ref/gpu/dsa_indexer.h"

namespace kh::gpuref {

void dsa_topk_indexer_on_device(const ReferenceArgs& args, void* stream) {
  DeviceExecutor exec(stream);
  dsa_topk_indexer_reference(exec, args);
}

}  // namespace kh::gpuref
