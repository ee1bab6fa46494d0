// The entry's view of the routes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gdn_prefill.cuh"

namespace khk::gdn_prefill {

/// The workspace a call of `total_tokens` tokens in `num_seqs` sequences uses at most (the
/// context-parallel route's group maps and entry states); 0 when no route it takes needs one.
uint64_t workspace_bytes(int64_t total_tokens, int64_t num_seqs);

/// Launches the prefill on `stream` by the route and launch shape the batch calls for, within
/// `workspace_bytes` of workspace (less than workspace_bytes() asks for: no context parallelism).
/// Returns the launch's error.
cudaError_t dispatch(const PrefillArgs& args, void* workspace, uint64_t workspace_bytes,
                     cudaStream_t stream);

}  // namespace khk::gdn_prefill
