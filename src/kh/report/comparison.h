// Comparing candidates on one definition's workloads: per-workload speedups, their geometric
// means overall and per regime, and a summary of one candidate's distribution of results. Plain
// in-memory values: whoever has results (a store query, a sweep, a test) fills CandidateResults,
// so the arithmetic here does not depend on where results are kept.
//
// Only a workload PASSED and timed by both candidates is compared; a speedup is a / b, so above 1
// means B is faster. Geometric means because speedups are ratios: a 2x win and a 2x loss cancel.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/spec/regimes.h"
#include "kh/spec/workload.h"

namespace kh {

inline constexpr const char* kPassedStatus = "PASSED";

/// One candidate's result on one workload (statuses as spec/trace.h names them).
struct WorkloadResult {
  std::string workload;                     // uuid
  std::string status;                       // "PASSED", "INCORRECT_NUMERICAL", ...
  std::optional<double> latency;            // seconds, when timed
  std::optional<double> fraction_of_floor;  // floor / latency, when a floor is known
  bool flaky = false;                       // failed, then passed on a retry

  bool passed() const { return status == kPassedStatus; }
  /// Passed and timed: the only results that take part in speedups and latency statistics.
  bool timed() const { return passed() && latency.has_value(); }
};

struct CandidateResults {
  std::string name;
  std::string hash;
  std::vector<WorkloadResult> workloads;

  /// The result for this workload uuid, or nullptr when the candidate has none.
  const WorkloadResult* find(const std::string& uuid) const;
};

struct WorkloadComparison {
  std::string workload;               // uuid
  std::optional<std::size_t> regime;  // nullopt: outside the partition (RegimePartition::regime_of)
  std::optional<double> a, b;         // latency in seconds, when that side is timed()
  std::optional<double> speedup;      // a / b when both are; > 1 means B is faster
};

/// Statistics of a set of speedups; the optionals are empty when nothing was compared.
struct SpeedupStats {
  int compared = 0;
  std::optional<double> geomean_speedup;
  std::optional<double> min_speedup, max_speedup;
};

struct RegimeComparison : SpeedupStats {
  std::size_t regime = 0;  // index into RegimePartition::regimes
};

struct Comparison : SpeedupStats {
  std::string a, b;                           // candidate names
  std::vector<WorkloadComparison> workloads;  // in the order given
  std::vector<RegimeComparison> regimes;      // one per regime of the partition, in its order
  int a_only_passed = 0;  // workloads A passed and B did not (or has no result for)
  int b_only_passed = 0;
};

/// Compares B against A on `workloads` (their order is kept). A workload outside the partition
/// counts in the overall figures but in no regime.
Comparison compare_candidates(const RegimePartition& partition,
                              const std::vector<Workload>& workloads, const CandidateResults& a,
                              const CandidateResults& b);

/// {"a","b","compared","geomean_speedup","min_speedup","max_speedup","a_only_passed",
///  "b_only_passed","regimes":[{"regime","label","workloads","compared",...}],
///  "workloads":[{"workload","regime","a","b","speedup"}]}; absent values are null.
Json comparison_json(const Comparison& c, const RegimePartition& partition);

/// One candidate's results at a glance. Latency statistics are over its timed() workloads.
struct DistributionSummary {
  int workloads = 0;  // results it has
  int passed = 0;
  int failed = 0;  // any status other than PASSED
  int timed = 0;
  int flaky = 0;
  double latency_sum = 0;  // seconds
  std::optional<double> geomean_latency, median_latency;
  std::optional<double> median_fraction_of_floor;  // over timed workloads with a floor
};
DistributionSummary summarize_distribution(const CandidateResults& c);

/// The geometric mean of positive values; nullopt for none. A non-positive value is an error
/// (a latency or speedup of 0 means a result was recorded wrongly).
std::optional<double> geometric_mean(const std::vector<double>& values);
/// The median (mean of the middle two for an even count); nullopt for none.
std::optional<double> median(std::vector<double> values);

}  // namespace kh
