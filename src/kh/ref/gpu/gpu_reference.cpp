#include "kh/ref/gpu/gpu_reference.h"

#include <array>

#include "kh/core/error.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/gpu/dsa_attention.h"
#include "kh/ref/gpu/dsa_indexer.h"
#include "kh/ref/gpu/gdn.h"
#include "kh/ref/gpu/host_executor.h"
#include "kh/ref/gpu/moe.h"
#if KH_HAVE_CUDA
#include "kh/ref/gpu/cuda/device_references.h"
#define KH_ON_DEVICE(fn) &fn
#else
#define KH_ON_DEVICE(fn) nullptr
#endif

namespace kh::gpuref {
namespace {

using EmulatedFn = void (*)(const ReferenceArgs&);
using DeviceFn = void (*)(const ReferenceArgs&, void*);

struct GpuReferenceEntry {
  std::string_view definition_name;
  EmulatedFn emulated;
  DeviceFn device;  // null when kh was built without CUDA
};

template <void (*Reference)(HostExecutor&, const ReferenceArgs&)>
void emulate(const ReferenceArgs& args) {
  HostExecutor exec;
  Reference(exec, args);
}

void gdn_decode(HostExecutor& e, const ReferenceArgs& a) {
  gdn_reference(e, a, false);
}
void gdn_prefill(HostExecutor& e, const ReferenceArgs& a) {
  gdn_reference(e, a, true);
}

// The one table of GPU references, keyed by exact definition name.
const std::array kGpuReferences{
    GpuReferenceEntry{"gdn_decode_qk4_v8_d128_k_last", &emulate<gdn_decode>,
                      KH_ON_DEVICE(gdn_decode_on_device)},
    GpuReferenceEntry{"gdn_prefill_qk4_v8_d128_k_last", &emulate<gdn_prefill>,
                      KH_ON_DEVICE(gdn_prefill_on_device)},
    GpuReferenceEntry{"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
                      &emulate<dsa_sparse_attention_reference<HostExecutor>>,
                      KH_ON_DEVICE(dsa_sparse_attention_on_device)},
    GpuReferenceEntry{"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
                      &emulate<dsa_topk_indexer_reference<HostExecutor>>,
                      KH_ON_DEVICE(dsa_topk_indexer_on_device)},
    GpuReferenceEntry{"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
                      &emulate<moe_fp8_block_scale_reference<HostExecutor>>,
                      KH_ON_DEVICE(moe_fp8_block_scale_on_device)},
};

const GpuReferenceEntry* find(std::string_view name) {
  for (const auto& entry : kGpuReferences)
    if (entry.definition_name == name) return &entry;
  return nullptr;
}

const GpuReferenceEntry& require(std::string_view name) {
  const GpuReferenceEntry* entry = find(name);
  if (!entry) fail("definition {} has no GPU reference", name);
  return *entry;
}

}  // namespace

bool has_gpu_reference(std::string_view definition_name) {
  return find(definition_name) != nullptr;
}

bool can_run_on_device(std::string_view definition_name) {
  const GpuReferenceEntry* entry = find(definition_name);
  return entry && entry->device;
}

void run_on_device(const ReferenceArgs& args, void* cuda_stream) {
  const GpuReferenceEntry& entry = require(args.definition());
  if (!entry.device) fail("{}: kh was built without CUDA; no GPU reference", args.definition());
  entry.device(args, cuda_stream);
}

std::vector<NamedDLTensor> tensor_views(const std::vector<TensorDecl>& decls,
                                        const TensorSet& tensors) {
  std::vector<NamedDLTensor> views;
  for (const auto& decl : decls) {
    DLTensor t{};
    t.device = {kDLCPU, 0};
    t.dtype = dlpack_dtype(decl.dtype);
    if (const HostTensor* host = tensors.find(decl.name)) {
      t.data = const_cast<std::byte*>(host->bytes());
      t.ndim = static_cast<std::int32_t>(host->shape().size());
      t.shape = const_cast<std::int64_t*>(host->shape().data());
    }
    views.push_back({decl.name, t});
  }
  return views;
}

OutputSet run_emulated(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  const GpuReferenceEntry& entry = require(def.name);
  OutputSet outputs = allocate_outputs(def, axes);
  const ReferenceArgs args(def.name, axes, tensor_views(def.inputs, inputs),
                           tensor_views(def.outputs, outputs));
  entry.emulated(args);
  return outputs;
}

}  // namespace kh::gpuref
