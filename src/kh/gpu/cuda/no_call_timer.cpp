// Built instead of the CUDA timers when kh is configured without CUDA.
#include "kh/core/error.h"
#include "kh/gpu/call_timer.h"

namespace kh {

struct CallTimer::Impl {};

Json device_environment_json(const DeviceEnvironment&) {
  return Json::object();
}

CallTimer::CallTimer(int, void*) {
  fail("this kh was built without CUDA: nothing to time");
}
CallTimer::~CallTimer() = default;

const DeviceEnvironment& CallTimer::environment() const {
  fail("this kh was built without CUDA");
}

TrialTiming CallTimer::time_trial(TimingMethod, const TimingConfig&, const Call&) {
  fail("this kh was built without CUDA: nothing to time");
}

std::vector<TrialTiming> CallTimer::time_interleaved(TimingMethod, int, const std::vector<Call>&,
                                                     const std::vector<int>&) {
  fail("this kh was built without CUDA: nothing to time");
}

}  // namespace kh
