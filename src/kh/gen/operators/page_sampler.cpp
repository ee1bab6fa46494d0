#include "kh/gen/operators/page_sampler.h"

#include <numeric>
#include <unordered_map>

#include "kh/core/error.h"

namespace kh {

std::vector<std::int64_t> sample_distinct(const RandomStream& s, std::int64_t first,
                                          std::int64_t universe, std::int64_t count) {
  if (count > universe) fail("cannot draw {} distinct values from {}", count, universe);
  // A sparse Fisher-Yates: only swapped slots are stored, so a large universe costs nothing.
  std::unordered_map<std::int64_t, std::int64_t> swapped;
  auto value_at = [&](std::int64_t i) {
    auto it = swapped.find(i);
    return it == swapped.end() ? i : it->second;
  };
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t j = s.uniform_int(first + i, i, universe - 1);
    const std::int64_t vi = value_at(i), vj = value_at(j);
    swapped[j] = vi;
    swapped[i] = vj;
    out.push_back(vj);
  }
  return out;
}

}  // namespace kh
