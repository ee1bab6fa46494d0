#include "kh/gen/draw.h"

#include "kh/core/error.h"
#include "kh/gen/official_distribution.h"

namespace kh {

void draw(const DrawRecipe& recipe, HostTensor& tensor, std::int64_t begin, std::int64_t end) {
  if (recipe.kind == DrawKind::kOfficial) {
    fill_official(tensor, recipe.stream, begin, end);
    return;
  }
  const std::int64_t n = tensor.numel();
  if (!recipe.is_elementwise() && (begin != 0 || end != n))
    fail(
        "this input is drawn as whole vectors or tokens: elements [{}, {}) of {} cannot be drawn "
        "alone",
        begin, end, n);
  if (recipe.kind == DrawKind::kUnitVectors &&
      (recipe.group <= 0 || recipe.group > kMaxUnitVector || n % recipe.group != 0))
    fail("unit vectors of {} elements do not tile a tensor of {}", recipe.group, n);
  const DType t = tensor.dtype();
  void* data = tensor.bytes();
  const std::int64_t first = recipe.is_elementwise() ? begin : 0;
  const std::int64_t units = recipe.is_elementwise() ? end - begin : draw_units(recipe, n);
  parallel_for(units, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t u = first + b; u < first + e; ++u) draw_unit(recipe, t, data, n, u);
  });
}

}  // namespace kh
