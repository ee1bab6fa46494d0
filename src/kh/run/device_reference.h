// The reference of one call computed where the candidate's inputs live: the definition's GPU
// reference runs on the very input buffers the candidate receives (under the strict checks after
// the call, once the inputs are known unchanged), into outputs of its own, which stay there
// (resident_outputs.h) or come to the host. An oracle behind the candidate interface (the
// definition's PyTorch reference) is run the same way.
#pragma once

#include "kh/gen/input_set.h"
#include "kh/run/call_buffers.h"
#include "kh/run/candidate_library.h"
#include "kh/run/memory_backend.h"
#include "kh/run/resident_outputs.h"
#include "kh/spec/definition.h"

namespace kh {

/// Whether run_device_reference can serve this definition on this backend.
bool has_device_reference(const MemoryBackend& backend, const Definition& def);

/// Runs the GPU reference on the inputs in `buffers`; its outputs stay in the backend's memory.
ResidentOutputs compute_device_reference(MemoryBackend& backend, const Definition& def,
                                         const AxisValues& axes, const CallBuffers& buffers);
/// The same, with the outputs brought to the host.
OutputSet run_device_reference(MemoryBackend& backend, const Definition& def,
                               const AxisValues& axes, const CallBuffers& buffers);

/// The same with another oracle behind the candidate interface (the definition's PyTorch
/// reference in the Python worker): it reads the inputs in `buffers`, writes outputs of its own.
/// A failure of the oracle is a kh::Error (the evaluation, not the candidate, failed).
ResidentOutputs compute_oracle_reference(MemoryBackend& backend, const Definition& def,
                                         const AxisValues& axes, const CallBuffers& buffers,
                                         const CandidateLibrary& oracle);

}  // namespace kh
