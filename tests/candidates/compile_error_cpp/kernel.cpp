// Deliberately broken: the statement below lacks its semicolon, so every compiler rejects the
// file. The harness must turn this into COMPILE_ERROR carrying the compiler's log.
#include "kh/abi.h"

// The broken statement is deliberate; keep the formatter away from it.
// clang-format off

KH_EXPORT int kh_compile_error(const DLTensor* /*tensors*/, int32_t /*num_tensors*/,
                               void* /*stream*/, void* /*workspace*/,
                               uint64_t /*workspace_bytes*/) {
  int status = KH_OK  // <- syntax error: missing ';'
  return status;
}
