#include "kh/ref/cpu_reference.h"

#include <array>
#include <utility>

#include "kh/core/error.h"

namespace kh {
namespace {

struct CpuReferenceEntry {
  std::string_view definition_name;
  CpuReferenceFn fn;
};

// The one table of native references, keyed by exact definition name.
constexpr std::array kCpuReferences{
    CpuReferenceEntry{"gdn_decode_qk4_v8_d128_k_last", &gdn_decode_reference},
    CpuReferenceEntry{"gdn_prefill_qk4_v8_d128_k_last", &gdn_prefill_reference},
    CpuReferenceEntry{"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
                      &dsa_sparse_attention_reference},
    CpuReferenceEntry{"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", &dsa_topk_indexer_reference},
    CpuReferenceEntry{"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
                      &moe_fp8_block_scale_reference},
};

}  // namespace

CpuReferenceFn find_cpu_reference(std::string_view definition_name) {
  for (const auto& entry : kCpuReferences)
    if (entry.definition_name == definition_name) return entry.fn;
  return nullptr;
}

OutputSet allocate_outputs(const Definition& def, const AxisValues& axes) {
  OutputSet outputs;
  for (const auto& decl : def.outputs)
    outputs.add(decl.name, HostTensor(decl.dtype, def.shape_of(decl, axes)));
  return outputs;
}

OutputSet run_cpu_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  const CpuReferenceFn fn = find_cpu_reference(def.name);
  if (!fn) fail("definition {} has no native CPU reference", def.name);
  OutputSet outputs = allocate_outputs(def, axes);
  fn(def, axes, inputs, outputs);
  return outputs;
}

}  // namespace kh
