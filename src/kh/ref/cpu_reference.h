// Native CPU references of the shipped definitions: straightforward loops with fp64 accumulation,
// written from the semantics of each definition's PyTorch reference. They are the oracle of the
// tests and of CPU-only flows; the GPU references serve full-size sweeps.
#pragma once

#include <string_view>

#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

using CpuReferenceFn = void (*)(const Definition& def, const AxisValues& axes,
                                const InputSet& inputs, OutputSet& outputs);

/// The native CPU reference for a definition name, or nullptr.
CpuReferenceFn find_cpu_reference(std::string_view definition_name);

/// Zero-filled outputs of the definition's shapes and dtypes, in definition order.
OutputSet allocate_outputs(const Definition& def, const AxisValues& axes);

/// allocate_outputs + the reference; kh::fail naming the definition when there is no native
/// reference.
OutputSet run_cpu_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs);

// The references themselves (one file each), reachable through find_cpu_reference.
void gdn_decode_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                          OutputSet& outputs);
void gdn_prefill_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                           OutputSet& outputs);
void dsa_sparse_attention_reference(const Definition& def, const AxisValues& axes,
                                    const InputSet& inputs, OutputSet& outputs);
void dsa_topk_indexer_reference(const Definition& def, const AxisValues& axes,
                                const InputSet& inputs, OutputSet& outputs);
void moe_fp8_block_scale_reference(const Definition& def, const AxisValues& axes,
                                   const InputSet& inputs, OutputSet& outputs);

}  // namespace kh
