// The measured ceilings of one machine that a roofline floor divides by: achievable HBM copy
// bandwidth, dense tensor-core (bf16, fp8) and CUDA-core (fp32) rates, and the latencies that no
// kernel avoids (an empty launch, a dependent global-memory gather). `kh ceilings` measures them
// and writes them as JSON; the floors in kh/roofline/call_cost.h read them back.
#pragma once

#include <filesystem>
#include <string>

#include "kh/core/json_io.h"

namespace kh {

struct MachineCeilings {
  std::string gpu;  // device name, e.g. "NVIDIA H200"
  double copy_bytes_per_second = 0;
  double bf16_flops_per_second = 0;
  double fp8_flops_per_second = 0;
  double fp32_flops_per_second = 0;
  double empty_kernel_seconds = 0;
  double gather_latency_seconds = 0;

  /// Every field, in declaration order.
  Json to_json() const;
  /// Every field is required (an error names the file and the missing field); rates must be
  /// finite and > 0, latencies finite and >= 0. Keys kh does not know are ignored.
  static MachineCeilings from_json(const JsonCursor& cursor);

  bool operator==(const MachineCeilings&) const = default;
};

MachineCeilings load_ceilings(const std::filesystem::path& path);
/// Where `kh ceilings` stores a GPU's ceilings by default: .kh/ceilings/<name, non-alphanumerics
/// as '_'>.json, relative to the working directory.
std::filesystem::path default_ceilings_path(const std::string& gpu);
void save_ceilings(const MachineCeilings& ceilings, const std::filesystem::path& path);

}  // namespace kh
