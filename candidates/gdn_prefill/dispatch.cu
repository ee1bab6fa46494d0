// Route choice for GDN prefill: the token-serial route up to kSerialMaxTokens tokens in all, the
// chunked route above; the chunked route's launch shape, the value slabs per head, follows from
// the number of sequences alone, by the continuous rule in tuning.h. The tokens per sequence
// live on the device (cu_seqlens) and are never read back: nothing here synchronises, so the
// call stays CUDA-graph capturable.
#include "dispatch.h"
#include "route_chunked.cuh"
#include "route_token_serial.cuh"

namespace khk::gdn_prefill {
namespace {

// The value slabs per head for `num_seqs` sequences (1, 2, 4 or 8).
int chunked_slabs(int64_t num_seqs) {
  int slabs = 1;
  while (slabs < kMaxSlabs && num_seqs * kVHeads * slabs < kMinCtas) slabs *= 2;
  return slabs;
}

}  // namespace

cudaError_t dispatch(const PrefillArgs& args, cudaStream_t stream) {
  if (kSerialMaxTokens > 0 && args.total_tokens <= kSerialMaxTokens)
    return launch_token_serial(args, stream);
  switch (chunked_slabs(args.num_seqs)) {
    case 1: return launch_chunked<128>(args, stream);
    case 2: return launch_chunked<64>(args, stream);
    case 4: return launch_chunked<32>(args, stream);
    default: return launch_chunked<16>(args, stream);
  }
}

}  // namespace khk::gdn_prefill
