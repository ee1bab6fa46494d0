// Regimes: a definition's workloads partitioned into bands of its var axes, so that comparisons,
// gates and dispatch speak about "small batches" or "long sequences" the same way. This is the
// one module that draws those lines.
//
// Rule: an axis takes part when its value varies over the workloads and it is not a function of
// an axis listed before it in both directions (len_cu_seqlens = num_seqs + 1 adds nothing). Each
// taking-part axis is cut into log-spaced bands [b^k, b^(k+1)) with b = kRegimeBandBase (0 gets
// the band [0, 1)); a regime is one populated combination of bands, ordered by the bands' lower
// bounds. A workload outside every band of the partition (a value never seen when it was made)
// falls into the band its value gives, so regime_of never fails for a workload of the definition.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/spec/definition.h"
#include "kh/spec/workload.h"

namespace kh {

inline constexpr std::int64_t kRegimeBandBase = 4;

struct AxisBand {
  std::string axis;
  std::int64_t lo = 0, hi = 1;  // [lo, hi)
};

struct Regime {
  std::string label;               // "batch_size 4-15, max_num_pages 16-63" ("all" if no axis)
  std::vector<AxisBand> bands;     // one per taking-part axis, in axis order
  std::vector<std::string> workloads;  // uuids, in the given order
};

struct RegimePartition {
  std::string definition;
  std::vector<std::string> axes;  // the taking-part axes
  std::vector<Regime> regimes;

  /// Index of the regime holding this workload's axes; a combination not present yet is not
  /// added: the label of its bands is returned through `label` and the result is nullopt.
  std::optional<std::size_t> regime_of(const Workload& w, std::string* label = nullptr) const;
};

RegimePartition partition_regimes(const Definition& def, const std::vector<Workload>& workloads);

/// A regime's share of a candidate's total latency over the workloads that have one.
struct RegimeShare {
  std::size_t regime = 0;
  int workloads = 0;       // in the regime
  int measured = 0;        // of them, with a latency
  double latency_sum = 0;  // seconds
  double share = 0;        // latency_sum / total over all regimes (0 when nothing measured)
};
std::vector<RegimeShare> latency_shares(const RegimePartition& p,
                                        const std::map<std::string, double>& latency_by_workload);

/// The band of `value` on a log-spaced axis ([0,1), [1,4), [4,16), ...).
AxisBand band_of(const std::string& axis, std::int64_t value);

}  // namespace kh
