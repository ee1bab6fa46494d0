// Drawing a recipe into a host tensor (the device side is draw_on_device in device_fill.h).
#pragma once

#include <cstdint>

#include "kh/core/host_tensor.h"
#include "kh/gen/draw_recipe.h"

namespace kh {

/// Draws elements [begin, end) of the tensor. Recipes that draw whole vectors or tokens only
/// support the full range and say so otherwise.
void draw(const DrawRecipe& recipe, HostTensor& tensor, std::int64_t begin, std::int64_t end);

}  // namespace kh
