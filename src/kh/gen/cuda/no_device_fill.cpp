// Built instead of device_fill.cu when kh is configured without CUDA.
#include "kh/core/error.h"
#include "kh/gen/device_fill.h"

namespace kh {

void fill_official_on_device(void*, DType, std::int64_t, RandomStream, void*) {
  fail("this kh was built without CUDA: inputs can only be generated on the host");
}

void draw_on_device(const DrawRecipe&, void*, DType, std::int64_t, void*) {
  fail("this kh was built without CUDA: inputs can only be generated on the host");
}

}  // namespace kh
