// The device entry of each GPU reference, one CUDA translation unit per operator family
// (ref/gpu/cuda/<op>.cu), reached through the table in gpu_reference.cpp.
#pragma once

#include "kh/ref/gpu/reference_args.h"

namespace kh::gpuref {

void gdn_decode_on_device(const ReferenceArgs& args, void* stream);
void gdn_prefill_on_device(const ReferenceArgs& args, void* stream);
void dsa_sparse_attention_on_device(const ReferenceArgs& args, void* stream);
void dsa_topk_indexer_on_device(const ReferenceArgs& args, void* stream);
void moe_fp8_block_scale_on_device(const ReferenceArgs& args, void* stream);

}  // namespace kh::gpuref
