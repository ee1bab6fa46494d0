// What a profile says about one call: its kernels (from a timeline and Nsight Compute) and the
// call's span. Read from ncu's CSV (ncu_csv.h) or built by tests; classified by
// bottleneck_state.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kh::ctl {

/// One kernel launch of the call. Metrics Nsight Compute did not report stay empty.
struct KernelProfile {
  std::string name;
  double duration_seconds = 0;
  std::optional<double> sm_throughput_pct;      // sm__throughput, % of peak
  std::optional<double> memory_throughput_pct;  // gpu__compute_memory_throughput, % of peak
  std::optional<double> dram_throughput_pct;    // dram__throughput, % of peak
  std::optional<double> registers_per_thread;
  std::optional<double> dynamic_smem_bytes;  // per block
  std::optional<double> theoretical_occupancy_pct;
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> waves_per_sm;
  std::optional<double> local_memory_bytes;      // spill traffic (loads + stores)
  std::optional<double> sectors_per_request;     // global loads
  std::optional<double> tensor_pipe_pct;         // tensor-core pipe, % of peak
  std::optional<std::string> occupancy_limiter;  // "registers", "shared_memory", "warps", "blocks"
  double grid_threads = 0;                       // block size x grid size
  std::map<std::string, double> raw;             // every numeric metric, by ncu name
};

/// One call: its kernels in launch order and the span from the first start to the last end.
struct CallProfile {
  std::vector<KernelProfile> kernels;
  std::optional<double> span_seconds;  // timeline span; without it, the sum of the kernels
  double sum_of_kernels() const {
    double s = 0;
    for (const auto& k : kernels) s += k.duration_seconds;
    return s;
  }
  double span() const { return span_seconds.value_or(sum_of_kernels()); }
};

}  // namespace kh::ctl
