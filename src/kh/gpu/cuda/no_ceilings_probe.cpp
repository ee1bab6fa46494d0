// Built instead of the CUDA probes when kh is configured without CUDA.
#include "kh/core/error.h"
#include "kh/gpu/ceilings_probe.h"

namespace kh {

CeilingsReport measure_ceilings(int, const std::function<void(const std::string&)>&) {
  fail("this kh was built without CUDA: no ceilings to measure");
}

}  // namespace kh
