// Nsight Compute's CSV (`ncu --csv --metrics <kNcuMetrics>`, the default "details" page: one row
// per kernel launch and metric) read into kernel profiles. Values carry ncu's thousands separators
// and units; both are normalised here (seconds, bytes, percent).
#pragma once

#include <string>
#include <vector>

#include "kh/ctl/kernel_profile.h"

namespace kh::ctl {

/// The metrics `kh profile` asks Nsight Compute for: everything bottleneck_state.h reads.
extern const std::vector<std::string> kNcuMetrics;

/// The launches in `text` (ncu's stdout: ==PROF== lines and the program's own output are skipped),
/// in ID order. `source` names the input in errors, which say the line and what was expected.
std::vector<KernelProfile> parse_ncu_csv(const std::string& text, const std::string& source);

}  // namespace kh::ctl
