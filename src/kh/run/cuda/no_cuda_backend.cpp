// Built instead of cuda_backend.cpp when kh is configured without the CUDA toolkit.
#include "kh/core/error.h"
#include "kh/run/memory_backend.h"

namespace kh {

std::unique_ptr<MemoryBackend> make_cuda_backend(int) {
  fail("this kh was built without the CUDA toolkit: only --backend cpu is available");
}

int visible_cuda_devices() {
  return 0;
}

std::string cuda_device_name(int) {
  return "";
}

}  // namespace kh
