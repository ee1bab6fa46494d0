// A Markdown report of one or more candidates on one definition's workloads, with PNG plots:
// what a person reads after a sweep. The first candidate is the baseline every other one is
// compared with (comparison.h); regimes (spec/regimes.h) break the totals down by shape.
//
// dir/report.md holds, in order: a header (definition, candidates and hashes, date), a summary of
// each candidate's distribution, the regime breakdown (workloads, latency share per candidate,
// geomean speedup of each other candidate against the baseline), the plots, and one row per
// workload (index, uuid prefix, regime, axes, floor, status or latency per candidate, fraction of
// floor, speedups). The plots (latency.png, speedup.png, with their .dat files and plots.gp) are
// drawn by gnuplot when it is installed; when it is not, or fails, the report says so in one line
// and is otherwise complete.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kh/report/comparison.h"
#include "kh/report/gnuplot.h"
#include "kh/spec/regimes.h"
#include "kh/spec/workload.h"

namespace kh {

/// Characters of a workload uuid shown in tables (enough to tell a set's workloads apart).
inline constexpr std::size_t kUuidPrefixChars = 8;

struct ReportInput {
  std::string definition;
  std::vector<Workload> workloads;  // in dataset order: the index shown is the position here
  RegimePartition partition;
  std::vector<CandidateResults> candidates;  // at least one; the first is the baseline
  /// The roofline floor of a workload's call in seconds, by uuid, where known. A timed result
  /// without its own fraction_of_floor gets floor / latency from it.
  std::map<std::string, double> floor_seconds;
  std::string date;                       // shown in the header; "" for the current UTC time
  std::string gnuplot = kDefaultGnuplot;  // program name or path
};

/// Writes dir/report.md (and the plots) creating dir if needed. Throws kh::Error for an input
/// without candidates or when dir cannot be written; a missing or failing gnuplot is only noted.
void write_report(const ReportInput& in, const std::filesystem::path& dir);

}  // namespace kh
