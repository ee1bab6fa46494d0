#include "kh/gpu/interleaved_timer.h"

#include <algorithm>
#include <numeric>

namespace kh {

std::vector<std::size_t> warmup_order(std::size_t calls, const std::vector<int>& order) {
  std::vector<std::size_t> warm(calls);
  std::iota(warm.begin(), warm.end(), std::size_t{0});
  if (order.empty() || calls < 2) return warm;
  const auto first = static_cast<std::size_t>(order.front());
  if (first >= calls) return warm;
  // `first`, then the rest in index order.
  std::rotate(warm.begin(), warm.begin() + static_cast<std::ptrdiff_t>(first),
              warm.begin() + static_cast<std::ptrdiff_t>(first) + 1);
  return warm;
}

}  // namespace kh
