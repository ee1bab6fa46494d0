// `kh ceilings`: measures the machine ceilings a roofline floor divides by (roofline/ceilings.h),
// each timed like a candidate call (cold L2, CUPTI span; events where CUPTI is unavailable):
// HBM copy bandwidth (the best of kh's vectorised copy kernel and cudaMemcpyAsync over several
// sizes, bytes read plus written), dense bf16 and FP8 GEMM rates (cuBLASLt), an fp32 FMA rate,
// the span of an empty kernel (the harness's floor) and a dependent-gather latency.
#pragma once

#include <functional>
#include <string>

#include "kh/core/json_io.h"
#include "kh/roofline/ceilings.h"

namespace kh {

struct CeilingsReport {
  MachineCeilings ceilings;
  Json details;  // every probe: what ran, its sizes, median seconds, derived rate, timing method
};

CeilingsReport measure_ceilings(int device,
                                const std::function<void(const std::string&)>& progress);

}  // namespace kh
