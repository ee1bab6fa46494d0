#include "kh/gpu/activity.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace kh {
namespace {

// The API records sorted by start, and the activities grouped by correlation id: built once per
// trial so that each window costs a binary search plus its own records.
class CorrelationIndex {
 public:
  CorrelationIndex(std::span<const ApiRecord> api, std::span<const GpuActivity> activities)
      : api_(api.begin(), api.end()) {
    std::sort(api_.begin(), api_.end(),
              [](const ApiRecord& a, const ApiRecord& b) { return a.start_ns < b.start_ns; });
    for (const GpuActivity& a : activities) by_correlation_[a.correlation_id].push_back(&a);
  }

  /// Every activity whose correlation id is that of an API call started in [t0, t1], once each
  /// (a runtime call and the driver call under it may share an id).
  std::vector<const GpuActivity*> in_window(HostWindow w) const {
    const auto first =
        std::lower_bound(api_.begin(), api_.end(), w.t0_ns,
                         [](const ApiRecord& r, std::uint64_t t) { return r.start_ns < t; });
    const auto last =
        std::upper_bound(first, api_.end(), w.t1_ns,
                         [](std::uint64_t t, const ApiRecord& r) { return t < r.start_ns; });
    std::set<std::uint32_t> ids;
    for (auto it = first; it != last; ++it) ids.insert(it->correlation_id);
    std::vector<const GpuActivity*> found;
    for (const std::uint32_t id : ids)
      if (const auto it = by_correlation_.find(id); it != by_correlation_.end())
        found.insert(found.end(), it->second.begin(), it->second.end());
    return found;
  }

 private:
  std::vector<ApiRecord> api_;
  std::unordered_map<std::uint32_t, std::vector<const GpuActivity*>> by_correlation_;
};

IterationSpanResult span_of(const std::vector<const GpuActivity*>& activities) {
  IterationSpanResult result;
  if (activities.empty()) {
    result.error = std::string(kNoActivityMessage);
    return result;
  }
  IterationSpan& span = result.span;
  span.start_ns = activities.front()->start_ns;
  span.end_ns = activities.front()->end_ns;
  for (const GpuActivity* a : activities) {
    span.start_ns = std::min(span.start_ns, a->start_ns);
    span.end_ns = std::max(span.end_ns, a->end_ns);
    ++span.signature[activity_key(*a)];
  }
  span.activity_count = activities.size();
  return result;
}

std::string inconsistency_message(std::size_t iteration, const std::string& difference) {
  return fmt::format("{}: timed iteration {} differs from iteration 0: {}", kInconsistentMessage,
                     iteration, difference);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

}  // namespace

ActivityKey activity_key(const GpuActivity& a) {
  ActivityKey key;
  key.kind = a.kind;
  switch (a.kind) {
    case GpuActivity::Kind::kKernel:
      key.name = a.name;
      break;
    case GpuActivity::Kind::kMemcpy:
      key.name = "MEMCPY";
      key.copy_kind = a.copy_kind;
      key.bytes = a.bytes;
      break;
    case GpuActivity::Kind::kMemset:
      key.name = "MEMSET";
      key.bytes = a.bytes;
      key.value = a.value;
      break;
  }
  return key;
}

std::string describe(const ActivityKey& key) {
  switch (key.kind) {
    case GpuActivity::Kind::kKernel:
      return "kernel " + key.name;
    case GpuActivity::Kind::kMemcpy:
      return fmt::format("MEMCPY copy kind {}, {} bytes", key.copy_kind, key.bytes);
    case GpuActivity::Kind::kMemset:
      return fmt::format("MEMSET {} bytes, value {}", key.bytes, key.value);
  }
  return "unknown activity";
}

double IterationSpan::seconds() const {
  // Difference first, in integers: CUPTI timestamps are around 1e18 ns, beyond a double's
  // exact integers, while the difference is small. A record ending before the earliest start
  // (a broken timestamp) gives a negative span, as the official arithmetic would.
  const auto ns = static_cast<std::int64_t>(end_ns) - static_cast<std::int64_t>(start_ns);
  return static_cast<double>(ns) / 1e9;
}

IterationSpanResult iteration_span(std::span<const ApiRecord> api,
                                   std::span<const GpuActivity> activities, HostWindow window) {
  return span_of(CorrelationIndex(api, activities).in_window(window));
}

std::vector<GpuActivity> window_activities(std::span<const ApiRecord> api,
                                           std::span<const GpuActivity> activities,
                                           HostWindow window) {
  std::vector<GpuActivity> out;
  for (const GpuActivity* a : CorrelationIndex(api, activities).in_window(window)) out.push_back(*a);
  std::sort(out.begin(), out.end(),
            [](const GpuActivity& a, const GpuActivity& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::optional<std::string> signature_difference(const ActivitySignature& first,
                                                const ActivitySignature& next, SignatureRule rule) {
  std::vector<std::string> parts;
  for (const auto& [key, count] : first) {
    const auto it = next.find(key);
    if (it == next.end())
      parts.push_back("missing " + describe(key));
    else if (rule == SignatureRule::kExactCounts && it->second != count)
      parts.push_back(fmt::format("{} {} times instead of {}", describe(key), it->second, count));
  }
  for (const auto& [key, count] : next)
    if (!first.contains(key)) parts.push_back("extra " + describe(key));
  if (parts.empty()) return std::nullopt;
  return join(parts, "; ");
}

std::optional<std::string> check_signatures(std::span<const ActivitySignature> per_iteration,
                                            SignatureRule rule) {
  for (std::size_t i = 1; i < per_iteration.size(); ++i)
    if (auto diff = signature_difference(per_iteration[0], per_iteration[i], rule))
      return inconsistency_message(i, *diff);
  return std::nullopt;
}

TimedSpansResult timed_iteration_spans(std::span<const ApiRecord> api,
                                       std::span<const GpuActivity> activities,
                                       std::span<const HostWindow> windows, SignatureRule rule) {
  const CorrelationIndex index(api, activities);
  TimedSpansResult result;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    IterationSpanResult span = span_of(index.in_window(windows[i]));
    if (!span.ok()) {
      result.error = fmt::format("{} (timed iteration {})", span.error, i);
      break;
    }
    if (i == 0) {
      result.signature = std::move(span.span.signature);
    } else if (auto diff = signature_difference(result.signature, span.span.signature, rule)) {
      result.error = inconsistency_message(i, *diff);
      break;
    }
    result.seconds.push_back(span.span.seconds());
  }
  if (!result.ok()) result.seconds.clear();
  return result;
}

}  // namespace kh
