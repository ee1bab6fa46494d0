// Comparing candidates: see comparison.h.
#include "kh/report/comparison.h"

#include <algorithm>
#include <cmath>

#include "kh/core/error.h"
#include "kh/gpu/sample_stats.h"

namespace kh {
namespace {

SpeedupStats stats_of(const std::vector<double>& speedups) {
  SpeedupStats s;
  s.compared = static_cast<int>(speedups.size());
  s.geomean_speedup = geometric_mean(speedups);
  if (!speedups.empty()) {
    const auto [lo, hi] = std::minmax_element(speedups.begin(), speedups.end());
    s.min_speedup = *lo;
    s.max_speedup = *hi;
  }
  return s;
}

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

void put_stats(Json& j, const SpeedupStats& s) {
  j["compared"] = s.compared;
  j["geomean_speedup"] = optional_json(s.geomean_speedup);
  j["min_speedup"] = optional_json(s.min_speedup);
  j["max_speedup"] = optional_json(s.max_speedup);
}

std::optional<double> timed_latency(const WorkloadResult* r) {
  return r && r->timed() ? r->latency : std::nullopt;
}

}  // namespace

const WorkloadResult* CandidateResults::find(const std::string& uuid) const {
  for (const WorkloadResult& r : workloads)
    if (r.workload == uuid) return &r;
  return nullptr;
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v))
      fail("geometric mean: value {} is not a positive finite number", v);
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  return median_of(std::move(values));
}

Comparison compare_candidates(const RegimePartition& partition,
                              const std::vector<Workload>& workloads, const CandidateResults& a,
                              const CandidateResults& b) {
  Comparison c;
  c.a = a.name;
  c.b = b.name;
  std::vector<double> all;
  std::vector<std::vector<double>> by_regime(partition.regimes.size());
  for (const Workload& w : workloads) {
    const WorkloadResult* ra = a.find(w.uuid);
    const WorkloadResult* rb = b.find(w.uuid);
    const bool a_passed = ra && ra->passed(), b_passed = rb && rb->passed();
    if (a_passed && !b_passed) ++c.a_only_passed;
    if (b_passed && !a_passed) ++c.b_only_passed;

    WorkloadComparison wc;
    wc.workload = w.uuid;
    wc.regime = partition.regime_of(w);
    wc.a = timed_latency(ra);
    wc.b = timed_latency(rb);
    if (wc.a && wc.b) {
      if (!(*wc.a > 0) || !(*wc.b > 0))
        fail("compare {} / {}: workload {}: latencies {} and {} must be positive", a.name, b.name,
             w.uuid, *wc.a, *wc.b);
      wc.speedup = *wc.a / *wc.b;
      all.push_back(*wc.speedup);
      if (wc.regime) by_regime[*wc.regime].push_back(*wc.speedup);
    }
    c.workloads.push_back(std::move(wc));
  }
  static_cast<SpeedupStats&>(c) = stats_of(all);
  for (std::size_t i = 0; i < by_regime.size(); ++i) {
    RegimeComparison rc;
    static_cast<SpeedupStats&>(rc) = stats_of(by_regime[i]);
    rc.regime = i;
    c.regimes.push_back(rc);
  }
  return c;
}

Json comparison_json(const Comparison& c, const RegimePartition& partition) {
  Json j = Json::object();
  j["a"] = c.a;
  j["b"] = c.b;
  put_stats(j, c);
  j["a_only_passed"] = c.a_only_passed;
  j["b_only_passed"] = c.b_only_passed;
  j["regimes"] = Json::array();
  for (const RegimeComparison& rc : c.regimes) {
    if (rc.regime >= partition.regimes.size())
      fail("comparison {} / {}: regime {} is not in the partition of {} ({} regimes)", c.a, c.b,
           rc.regime, partition.definition, partition.regimes.size());
    const Regime& r = partition.regimes[rc.regime];
    Json jr = {{"regime", rc.regime}, {"label", r.label}, {"workloads", r.workloads.size()}};
    put_stats(jr, rc);
    j["regimes"].push_back(std::move(jr));
  }
  j["workloads"] = Json::array();
  for (const WorkloadComparison& wc : c.workloads) {
    j["workloads"].push_back({{"workload", wc.workload},
                              {"regime", wc.regime ? Json(*wc.regime) : Json(nullptr)},
                              {"a", optional_json(wc.a)},
                              {"b", optional_json(wc.b)},
                              {"speedup", optional_json(wc.speedup)}});
  }
  return j;
}

DistributionSummary summarize_distribution(const CandidateResults& c) {
  DistributionSummary s;
  std::vector<double> latencies, fractions;
  for (const WorkloadResult& r : c.workloads) {
    ++s.workloads;
    if (r.passed())
      ++s.passed;
    else
      ++s.failed;
    if (r.flaky) ++s.flaky;
    if (!r.timed()) continue;
    ++s.timed;
    s.latency_sum += *r.latency;
    latencies.push_back(*r.latency);
    if (r.fraction_of_floor) fractions.push_back(*r.fraction_of_floor);
  }
  if (!latencies.empty()) {
    try {
      s.geomean_latency = geometric_mean(latencies);
    } catch (const Error& e) {
      fail("candidate {}: {}", c.name, e.what());
    }
  }
  s.median_latency = median(latencies);
  s.median_fraction_of_floor = median(std::move(fractions));
  return s;
}

}  // namespace kh
