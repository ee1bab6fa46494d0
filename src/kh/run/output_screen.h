// Judging a call's outputs where they live: each output screened against a resident reference
// (check/element_screen.h), so that a passing call on a GPU costs a few kernel launches instead
// of bringing outputs and reference to the host. Anything the screens leave undecided is judged
// on the host by check_outputs, which the screen then agrees with by construction.
#pragma once

#include <optional>

#include "kh/check/check_result.h"
#include "kh/run/call_buffers.h"
#include "kh/run/memory_backend.h"
#include "kh/run/resident_outputs.h"
#include "kh/spec/definition.h"

namespace kh {

/// check_outputs' verdict on the outputs in `buffers` against `reference`, when screens decide
/// it; nullopt when the host must judge: the definition's policy is not the element rule on every
/// output (the top-k set check), the backend does not screen, or a screen left a tensor
/// undecided (a failure, or a non-finite value).
std::optional<CheckResult> screen_outputs(MemoryBackend& backend, const Definition& def,
                                          const CallBuffers& buffers,
                                          const ResidentOutputs& reference,
                                          const CheckOptions& options);

}  // namespace kh
