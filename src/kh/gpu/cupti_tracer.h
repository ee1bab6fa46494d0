// CUPTI's Activity API, reached through dlopen (kh links no driver-side library): records the
// runtime and driver API calls, kernels, copies and fills of the process while tracing is on, as
// the official timer enables them (fib_eval_spec.md §4.2 step 4), and hands them over as plain
// records (gpu/activity.h) for the official span rule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kh/gpu/activity.h"

namespace kh {

struct TraceRecords {
  std::vector<ApiRecord> api;
  std::vector<GpuActivity> activities;
};

class CuptiTracer {
 public:
  /// Loads libcupti (KH_CUPTI_LIBRARY, then kh's .deps/cupti/lib, then the system's) and
  /// registers the activity buffers. Throws kh::Error saying what is missing.
  CuptiTracer();
  ~CuptiTracer();
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  /// CUPTI's clock, the one activity timestamps use (nanoseconds).
  std::uint64_t timestamp() const;
  void start();
  /// Stops tracing, flushes every buffer and returns what was recorded since start().
  TraceRecords stop();

  /// Where libcupti was loaded from.
  const std::string& library_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kh
