// GPU references: straightforward CUDA versions of the definitions (double accumulation where
// it is cheap, float in the MoE GEMMs, like the official PyTorch reference), run on the tensors
// the candidate received so that a reference never dominates the time of a cuda evaluation.
// Each is written once as host/device code over an executor (ref/gpu/<op>.h): on the device it
// runs as kernels; under host emulation the same code runs on the CPU, so CI checks its
// arithmetic against the fp64 CPU references without a GPU.
#pragma once

#include <string_view>
#include <vector>

#include "kh/gen/input_set.h"
#include "kh/ref/gpu/reference_args.h"
#include "kh/spec/definition.h"

namespace kh::gpuref {

/// Whether the definition has a GPU reference.
bool has_gpu_reference(std::string_view definition_name);
/// Whether it can run on the device in this build (has one, and kh was built with CUDA).
bool can_run_on_device(std::string_view definition_name);

/// Runs the reference on the device, enqueued on `cuda_stream` (not synchronised). Outputs must
/// be zero-initialised device buffers; inputs device buffers, scalars 0-d host tensors.
void run_on_device(const ReferenceArgs& args, void* cuda_stream);

/// Runs the same reference code on the host over host tensors (zeroed outputs are allocated).
OutputSet run_emulated(const Definition& def, const AxisValues& axes, const InputSet& inputs);

/// Named DLTensor views of a tensor set in declaration order (absent ones with null data); the
/// set must outlive them.
std::vector<NamedDLTensor> tensor_views(const std::vector<TensorDecl>& decls,
                                        const TensorSet& tensors);

}  // namespace kh::gpuref
