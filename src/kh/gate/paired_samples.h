// The measurements a paired gate is judged on. Candidates A (the retained one, or the baseline)
// and B (the challenger) are timed on the same workload, in the same worker, on the same inputs,
// interleaved in randomised order and repeated in rounds. Samples of one round were taken close
// together in time; rounds are apart, so the machine may have drifted between them. Pairing is by
// (round, index): a[k] and b[k] of one round were taken one right after the other.
#pragma once

#include <string>
#include <vector>

namespace kh {

struct PairedRound {
  std::vector<double> a;  // seconds, in the order taken
  std::vector<double> b;  // same length as a
};

struct WorkloadSamples {
  std::string workload;  // uuid
  std::vector<PairedRound> rounds;
  bool a_correct = true;  // every correctness trial of A passed on this workload
  bool b_correct = true;
};

}  // namespace kh
