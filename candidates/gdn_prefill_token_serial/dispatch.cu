// Route choice: this candidate has the token-serial route only (correct for every shape, meant
// for small ones), so it can be measured against the library's chunked route on its own before
// kernels/gdn_prefill takes it as a second route below a token threshold. Nothing here reads
// cu_seqlens: the call stays CUDA-graph capturable.
#include "dispatch.h"
#include "route_token_serial.cuh"

namespace khk::gdn_prefill {

cudaError_t dispatch(const PrefillArgs& args, cudaStream_t stream) {
  return launch_token_serial(args, stream);
}

}  // namespace khk::gdn_prefill
