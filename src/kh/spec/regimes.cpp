// Regimes: see regimes.h for the rule. The partition is computed once from a workload set and then
// read by comparisons, gates and reports, so everything here favours plain, predictable code over
// speed (workload sets are at most a few hundred entries).
#include "kh/spec/regimes.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh {
namespace {

/// The var axes of the definition whose value differs between at least two workloads, in the
/// definition's order (the order "an earlier axis" refers to).
std::vector<std::string> varying_axes(const Definition& def, const std::vector<Workload>& ws) {
  std::vector<std::string> out;
  for (const AxisDecl& a : def.axes) {
    if (a.is_const) continue;
    std::set<std::int64_t> values;
    for (const Workload& w : ws) values.insert(w.axis(a.name));
    if (values.size() > 1) out.push_back(a.name);
  }
  return out;
}

/// Whether the value of `to` is determined by the value of `from` over these workloads.
bool is_function(const std::vector<Workload>& ws, const std::string& from, const std::string& to) {
  std::map<std::int64_t, std::int64_t> seen;
  for (const Workload& w : ws) {
    const auto [it, inserted] = seen.emplace(w.axis(from), w.axis(to));
    if (!inserted && it->second != w.axis(to)) return false;
  }
  return true;
}

std::string band_text(const AxisBand& b) {
  // Bands are half-open; the label shows the last value inside so "4-15" reads as written.
  if (b.hi - b.lo == 1) return fmt::format("{} {}", b.axis, b.lo);
  return fmt::format("{} {}-{}", b.axis, b.lo, b.hi - 1);
}

std::string label_of(const std::vector<AxisBand>& bands) {
  if (bands.empty()) return "all";
  std::string s;
  for (const AxisBand& b : bands) s += (s.empty() ? "" : ", ") + band_text(b);
  return s;
}

std::vector<AxisBand> bands_of(const std::vector<std::string>& axes, const Workload& w) {
  std::vector<AxisBand> bands;
  bands.reserve(axes.size());
  for (const std::string& axis : axes) bands.push_back(band_of(axis, w.axis(axis)));
  return bands;
}

/// The key a regime is found and ordered by: the bands' lower bounds in axis order (the upper
/// bound follows from the lower one).
std::vector<std::int64_t> key_of(const std::vector<AxisBand>& bands) {
  std::vector<std::int64_t> key;
  key.reserve(bands.size());
  for (const AxisBand& b : bands) key.push_back(b.lo);
  return key;
}

}  // namespace

AxisBand band_of(const std::string& axis, std::int64_t value) {
  if (value < 0)
    fail("regimes: axis '{}': value {} is negative; axis values are >= 0", axis, value);
  if (value == 0) return {axis, 0, 1};
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t lo = 1;
  while (lo <= value / kRegimeBandBase) lo *= kRegimeBandBase;
  // The topmost band would end past int64; it is closed at the largest value instead.
  const std::int64_t hi = lo > kMax / kRegimeBandBase ? kMax : lo * kRegimeBandBase;
  return {axis, lo, hi};
}

RegimePartition partition_regimes(const Definition& def, const std::vector<Workload>& workloads) {
  RegimePartition p;
  p.definition = def.name;
  for (const std::string& b : varying_axes(def, workloads)) {
    const bool derived = std::any_of(p.axes.begin(), p.axes.end(), [&](const std::string& a) {
      return is_function(workloads, a, b) && is_function(workloads, b, a);
    });
    if (!derived) p.axes.push_back(b);
  }

  std::map<std::vector<std::int64_t>, Regime> by_key;  // ordered by the bands' lower bounds
  for (const Workload& w : workloads) {
    std::vector<AxisBand> bands = bands_of(p.axes, w);
    Regime& r = by_key[key_of(bands)];
    if (r.workloads.empty()) {
      r.label = label_of(bands);
      r.bands = std::move(bands);
    }
    r.workloads.push_back(w.uuid);
  }
  for (auto& [key, r] : by_key) p.regimes.push_back(std::move(r));
  return p;
}

std::optional<std::size_t> RegimePartition::regime_of(const Workload& w, std::string* label) const {
  const std::vector<AxisBand> bands = bands_of(axes, w);
  if (label) *label = label_of(bands);
  const std::vector<std::int64_t> key = key_of(bands);
  for (std::size_t i = 0; i < regimes.size(); ++i)
    if (key_of(regimes[i].bands) == key) return i;
  return std::nullopt;
}

std::vector<RegimeShare> latency_shares(const RegimePartition& p,
                                        const std::map<std::string, double>& latency_by_workload) {
  std::vector<RegimeShare> shares;
  double total = 0;
  for (std::size_t i = 0; i < p.regimes.size(); ++i) {
    RegimeShare s;
    s.regime = i;
    s.workloads = static_cast<int>(p.regimes[i].workloads.size());
    for (const std::string& uuid : p.regimes[i].workloads) {
      const auto it = latency_by_workload.find(uuid);
      if (it == latency_by_workload.end()) continue;
      ++s.measured;
      s.latency_sum += it->second;
    }
    total += s.latency_sum;
    shares.push_back(s);
  }
  if (total > 0)
    for (RegimeShare& s : shares) s.share = s.latency_sum / total;
  return shares;
}

}  // namespace kh
