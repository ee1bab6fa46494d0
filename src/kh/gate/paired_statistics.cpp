// Paired gate statistics. The estimate of a workload is the geometric mean over rounds of the
// ratio of round interquartile means (the mean of a round's samples once its lowest and highest
// quarter are left out): trimmed because single samples have heavy tails (preemption and clock
// dips above, and GPU timings often have a second, faster mode below), per round because A and B
// of one round share the machine's state, so the drift between rounds cancels in the ratio. The
// interval comes from a two-stage bootstrap (rounds, then pairs within a round) that keeps both
// sources of variation: the drift the machine adds between rounds and the noise within a round,
// with a[k] and b[k] always drawn together.
//
// Not the round median: on a round of 10 samples with 3 or 4 in a fast mode (as on the H200:
// bench/results/2026-12-01_gdn_prefill_gates_h200.json) the median sits at the edge of the slow
// mode and a resample drops it into the fast one whenever 5 draws land there, so the replicates
// of a workload are shifted from its estimate, by more on the side with more fast samples. The
// shift is the same sign on every workload and adds up over a distribution while the spread
// averages out: that gate's overall estimate, 0.9797, fell outside its own interval [0.981,
// 0.9853]. A trimmed mean moves smoothly with the share of fast samples, so its resamples stay
// near it (a mode edge at a trim point still shifts them a little; only a plain mean, which the
// machine's upper tails make noisy, has none): the same samples re-judged give 0.9843 [0.9826,
// 0.9862], and the 14 gates stored from the H200, re-judged, keep their overall verdicts with
// every estimate (overall and per workload) inside its interval.
#include "kh/gate/paired_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <string_view>

#include "kh/core/error.h"

namespace kh {
namespace {

// One side (A or B) of a round, sorted once so that the trimmed mean of any resample is found by a
// walk over the ranks weighted by how often each pair was drawn: O(n) per replicate, no sort.
struct RankedSide {
  std::vector<double> sorted;          // ascending
  std::vector<std::uint32_t> pair_of;  // pair index of sorted[j]
};

struct RankedRound {
  RankedSide a, b;
};

// Per workload: the point estimate and the bootstrap replicates, kept on the log scale.
struct WorkloadDraws {
  double log_latency_a = 0;  // mean over rounds of log(interquartile mean of a)
  double log_latency_b = 0;
  std::vector<double> log_latency_a_rep;  // one per replicate
  std::vector<double> log_latency_b_rep;
};

// A summary of replicates of a log speedup: the interval and the one-sided p-values.
struct BootstrapTest {
  Interval interval;
  double p_win = 1, p_loss = 1;
};

RankedSide rank_side(const std::vector<double>& x) {
  RankedSide side;
  side.pair_of.resize(x.size());
  std::iota(side.pair_of.begin(), side.pair_of.end(), 0u);
  // Stable so that equal latencies keep a fixed order: results depend on the seed alone.
  std::stable_sort(side.pair_of.begin(), side.pair_of.end(),
                   [&](std::uint32_t i, std::uint32_t j) { return x[i] < x[j]; });
  side.sorted.reserve(x.size());
  for (std::uint32_t k : side.pair_of) side.sorted.push_back(x[k]);
  return side;
}

// Samples left out at each end of a round of n before averaging: a quarter, rounded down (2 of
// 10), so a round of fewer than 4 is averaged whole.
std::size_t trimmed_per_side(std::size_t n) {
  return n / 4;
}

// The mean of sorted[trim, n - trim): the point estimate of a round.
double trimmed_mean_of_sorted(const std::vector<double>& sorted, std::size_t trim) {
  const std::size_t end = sorted.size() - trim;
  double sum = 0;
  for (std::size_t j = trim; j < end; ++j) sum += sorted[j];
  return sum / static_cast<double>(end - trim);
}

// The same statistic on the multiset that holds pair k counts[k] times (the counts sum to n): the
// values at sorted positions [trim, n - trim) of the resample, each rank weighted by how many of
// its copies fall inside that window.
double resampled_trimmed_mean(const RankedSide& side, const std::vector<std::uint32_t>& counts,
                              std::size_t trim) {
  const std::size_t end = side.sorted.size() - trim;
  std::size_t seen = 0;
  double sum = 0;
  for (std::size_t j = 0; j < side.sorted.size() && seen < end; ++j) {
    const std::size_t next = seen + counts[side.pair_of[j]];
    const std::size_t from = std::max(seen, trim), to = std::min(next, end);
    if (to > from) sum += static_cast<double>(to - from) * side.sorted[j];
    seen = next;
  }
  return sum / static_cast<double>(end - trim);
}

constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function.
std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The resampling stream: SplitMix64 (passes BigCrush, one multiply-xorshift per 64 bits), each draw
// split into two 32-bit indices. Its own code, unlike std::uniform_int_distribution, so the draws
// are the same on every standard library; and cheap, as a gate draws tens of millions of indices.
class IndexStream {
 public:
  explicit IndexStream(std::uint64_t seed) : state_(seed) {}
  /// A uniform index below n (n < 2^32) by Lemire's multiply-shift; the bias is below n / 2^32.
  std::uint32_t below(std::uint32_t n) {
    if (!have_spare_) {
      state_ += kGoldenGamma;
      spare_ = mix64(state_);
    }
    const auto bits = static_cast<std::uint32_t>(have_spare_ ? spare_ >> 32 : spare_);
    have_spare_ = !have_spare_;
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(bits) * n) >> 32);
  }

 private:
  std::uint64_t state_;
  std::uint64_t spare_ = 0;
  bool have_spare_ = false;
};

// Each workload has its own stream, so its draws do not depend on how many rounds or pairs the
// workloads before it had.
std::uint64_t workload_seed(std::uint64_t seed, std::size_t workload_index) {
  return mix64(seed ^ mix64(kGoldenGamma * (static_cast<std::uint64_t>(workload_index) + 1)));
}

void check_latency(double x, const std::string& workload, std::size_t round, std::size_t index,
                   char side) {
  if (!std::isfinite(x) || x <= 0)
    fail(
        "paired gate: workload {}, round {}, sample {} of {}: latency {} is not positive and "
        "finite",
        workload, round, index, side, x);
}

std::vector<RankedRound> rank_rounds(const WorkloadSamples& w) {
  if (w.rounds.empty()) fail("paired gate: workload {} has no rounds", w.workload);
  std::vector<RankedRound> ranked;
  ranked.reserve(w.rounds.size());
  for (std::size_t r = 0; r < w.rounds.size(); ++r) {
    const PairedRound& round = w.rounds[r];
    if (round.a.empty()) fail("paired gate: workload {}, round {} has no samples", w.workload, r);
    if (round.a.size() != round.b.size())
      fail(
          "paired gate: workload {}, round {} has {} A samples but {} B samples (pairs must "
          "match)",
          w.workload, r, round.a.size(), round.b.size());
    for (std::size_t k = 0; k < round.a.size(); ++k) {
      check_latency(round.a[k], w.workload, r, k, 'A');
      check_latency(round.b[k], w.workload, r, k, 'B');
    }
    ranked.push_back({rank_side(round.a), rank_side(round.b)});
  }
  return ranked;
}

WorkloadDraws bootstrap_workload(const std::vector<RankedRound>& rounds, int resamples,
                                 std::uint64_t seed) {
  WorkloadDraws d;
  const auto m = static_cast<std::uint32_t>(rounds.size());
  // Per round: log of the point estimates (trimmed means), and their inverses so that a replicate
  // multiplies resampled / point ratios (all near 1, so no overflow) and takes one log per
  // replicate instead of one per round.
  std::vector<double> log_mean_a(m), log_mean_b(m), inverse_mean_a(m), inverse_mean_b(m);
  std::vector<std::size_t> trim(m);
  std::size_t max_pairs = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    trim[i] = trimmed_per_side(rounds[i].a.sorted.size());
    const double mean_a = trimmed_mean_of_sorted(rounds[i].a.sorted, trim[i]);
    const double mean_b = trimmed_mean_of_sorted(rounds[i].b.sorted, trim[i]);
    log_mean_a[i] = std::log(mean_a);
    log_mean_b[i] = std::log(mean_b);
    inverse_mean_a[i] = 1 / mean_a;
    inverse_mean_b[i] = 1 / mean_b;
    d.log_latency_a += log_mean_a[i];
    d.log_latency_b += log_mean_b[i];
    max_pairs = std::max(max_pairs, rounds[i].a.sorted.size());
  }
  d.log_latency_a /= m;
  d.log_latency_b /= m;

  IndexStream stream(seed);
  std::vector<std::uint32_t> counts(max_pairs);
  d.log_latency_a_rep.resize(static_cast<std::size_t>(resamples));
  d.log_latency_b_rep.resize(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    double log_sum_a = 0, log_sum_b = 0, ratio_a = 1, ratio_b = 1;
    for (std::uint32_t i = 0; i < m; ++i) {
      // A round drawn twice gets two independent inner resamples (the two-stage bootstrap).
      const std::uint32_t chosen = stream.below(m);
      const RankedRound& round = rounds[chosen];
      const auto n = static_cast<std::uint32_t>(round.a.sorted.size());
      std::fill(counts.begin(), counts.begin() + n, 0u);
      for (std::uint32_t k = 0; k < n; ++k) ++counts[stream.below(n)];
      log_sum_a += log_mean_a[chosen];
      log_sum_b += log_mean_b[chosen];
      ratio_a *= resampled_trimmed_mean(round.a, counts, trim[chosen]) * inverse_mean_a[chosen];
      ratio_b *= resampled_trimmed_mean(round.b, counts, trim[chosen]) * inverse_mean_b[chosen];
    }
    d.log_latency_a_rep[static_cast<std::size_t>(r)] = (log_sum_a + std::log(ratio_a)) / m;
    d.log_latency_b_rep[static_cast<std::size_t>(r)] = (log_sum_b + std::log(ratio_b)) / m;
  }
  return d;
}

// Type-7 (linear interpolation) quantile of sorted values.
double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(h));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (h - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// Percentile interval and one-sided bootstrap p-values of "no win beyond min_effect" (the share of
// replicates at or below log(1 + min_effect)) and "no loss beyond min_effect" (the share at or
// above -log(1 + min_effect)); the +1 counts the observed data as one replicate, so p > 0.
BootstrapTest test_log_speedup(double log_estimate, std::vector<double> log_replicates,
                               const GateStatistics& stats) {
  std::sort(log_replicates.begin(), log_replicates.end());
  const double tail = (1 - stats.confidence) / 2;
  BootstrapTest t;
  t.interval.estimate = std::exp(log_estimate);
  t.interval.lo = std::exp(quantile_of_sorted(log_replicates, tail));
  t.interval.hi = std::exp(quantile_of_sorted(log_replicates, 1 - tail));
  const double threshold = std::log1p(stats.min_effect);
  const auto at_most_win =
      std::upper_bound(log_replicates.begin(), log_replicates.end(), threshold) -
      log_replicates.begin();
  const auto at_least_loss =
      log_replicates.end() -
      std::lower_bound(log_replicates.begin(), log_replicates.end(), -threshold);
  const double denominator = static_cast<double>(log_replicates.size()) + 1;
  t.p_win = (1 + static_cast<double>(at_most_win)) / denominator;
  t.p_loss = (1 + static_cast<double>(at_least_loss)) / denominator;
  return t;
}

// The objective of a set of workloads is sum(numerator) / sum(denominator) over them: latencies of
// A over latencies of B for kMeanLatency, speedups over ones for kMeanSpeedup. Linear values, so
// each replicate of a group is a sum over its members.
struct ObjectiveTerms {
  double numerator = 0, denominator = 0;  // point estimate
  std::vector<double> numerator_rep, denominator_rep;
};

ObjectiveTerms objective_terms(const WorkloadDraws& d, GateObjective objective) {
  ObjectiveTerms t;
  const std::size_t resamples = d.log_latency_a_rep.size();
  t.numerator_rep.resize(resamples);
  t.denominator_rep.resize(resamples);
  if (objective == GateObjective::kMeanLatency) {
    t.numerator = std::exp(d.log_latency_a);
    t.denominator = std::exp(d.log_latency_b);
    for (std::size_t r = 0; r < resamples; ++r) {
      t.numerator_rep[r] = std::exp(d.log_latency_a_rep[r]);
      t.denominator_rep[r] = std::exp(d.log_latency_b_rep[r]);
    }
  } else {
    t.numerator = std::exp(d.log_latency_a - d.log_latency_b);
    t.denominator = 1;
    for (std::size_t r = 0; r < resamples; ++r) {
      t.numerator_rep[r] = std::exp(d.log_latency_a_rep[r] - d.log_latency_b_rep[r]);
      t.denominator_rep[r] = 1;
    }
  }
  return t;
}

// Replicates of a group are built from the same per-workload draws: workloads are the fixed
// population the objective is defined over, only their measurements vary.
BootstrapTest test_group(const std::vector<std::size_t>& members,
                         const std::vector<ObjectiveTerms>& terms, const GateStatistics& stats) {
  const std::size_t resamples = terms.empty() ? 0 : terms.front().numerator_rep.size();
  double numerator = 0, denominator = 0;
  std::vector<double> numerator_rep(resamples, 0.0), denominator_rep(resamples, 0.0);
  for (std::size_t w : members) {
    const ObjectiveTerms& t = terms[w];
    numerator += t.numerator;
    denominator += t.denominator;
    for (std::size_t r = 0; r < resamples; ++r) {
      numerator_rep[r] += t.numerator_rep[r];
      denominator_rep[r] += t.denominator_rep[r];
    }
  }
  std::vector<double> log_rep(resamples);
  for (std::size_t r = 0; r < resamples; ++r)
    log_rep[r] = std::log(numerator_rep[r]) - std::log(denominator_rep[r]);
  return test_log_speedup(std::log(numerator) - std::log(denominator), std::move(log_rep), stats);
}

Verdict verdict_of(bool win, bool loss) {
  // Both at once would need most replicates above 1 + min_effect and most below 1 / (1 +
  // min_effect); it cannot happen for alpha < 0.5, and a tie is the safe reading if it did.
  if (win && !loss) return Verdict::kWin;
  if (loss && !win) return Verdict::kLoss;
  return Verdict::kTie;
}

}  // namespace

int replicates_for(const GateStatistics& stats, std::size_t workloads) {
  const double needed =
      kReplicatesPerHolmStep * std::ceil(static_cast<double>(workloads) / stats.family_alpha);
  return std::max(stats.resamples, static_cast<int>(needed));
}

namespace {

void check_statistics(const GateStatistics& s) {
  if (s.resamples < 1) fail("paired gate: resamples = {}, expected at least 1", s.resamples);
  if (!(s.confidence > 0 && s.confidence < 1))
    fail("paired gate: confidence = {}, expected a level strictly between 0 and 1", s.confidence);
  if (!(s.family_alpha > 0 && s.family_alpha < 1))
    fail("paired gate: family_alpha = {}, expected a level strictly between 0 and 1",
         s.family_alpha);
  if (!(s.min_effect >= 0 && std::isfinite(s.min_effect)))
    fail("paired gate: min_effect = {}, expected a finite value >= 0", s.min_effect);
}

std::vector<std::size_t> group_members(const WorkloadGroup& g,
                                       const std::map<std::string, std::size_t>& index_of) {
  if (g.workloads.empty()) fail("paired gate: group '{}' has no workloads", g.name);
  std::vector<std::size_t> members;
  for (const std::string& uuid : g.workloads) {
    auto it = index_of.find(uuid);
    if (it == index_of.end())
      fail("paired gate: group '{}' names workload {}, which the gate has no samples of", g.name,
           uuid);
    if (std::find(members.begin(), members.end(), it->second) != members.end())
      fail("paired gate: group '{}' lists workload {} twice", g.name, uuid);
    members.push_back(it->second);
  }
  return members;
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kWin:
      return "win";
    case Verdict::kTie:
      return "tie";
    case Verdict::kLoss:
      return "loss";
  }
  return "tie";
}

std::vector<bool> holm_rejections(const std::vector<double>& p_values, double alpha) {
  if (!(alpha > 0 && alpha < 1))
    fail("Holm adjustment: alpha = {}, expected a level strictly between 0 and 1", alpha);
  for (std::size_t i = 0; i < p_values.size(); ++i)
    if (!(p_values[i] >= 0 && p_values[i] <= 1))
      fail("Holm adjustment: p-value {} = {}, expected a value in [0, 1]", i, p_values[i]);
  std::vector<std::size_t> order(p_values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return p_values[i] < p_values[j]; });
  std::vector<bool> rejected(p_values.size(), false);
  const std::size_t m = p_values.size();
  // Step down: the i-th smallest p is compared with alpha / (m - i); the first that is not
  // rejected stops the procedure, and every larger p is retained with it.
  for (std::size_t i = 0; i < m; ++i) {
    if (p_values[order[i]] > alpha / static_cast<double>(m - i)) break;
    rejected[order[i]] = true;
  }
  return rejected;
}

PairedGateResult judge_paired(const std::vector<WorkloadSamples>& samples,
                              const std::vector<WorkloadGroup>& groups, GateObjective objective,
                              const GateStatistics& stats) {
  check_statistics(stats);
  if (samples.empty()) fail("paired gate: no workloads to judge");

  std::map<std::string, std::size_t> index_of;
  for (std::size_t w = 0; w < samples.size(); ++w)
    if (!index_of.emplace(samples[w].workload, w).second)
      fail("paired gate: workload {} appears twice in the samples", samples[w].workload);
  // Groups are checked before the (costly) resampling so a bad group fails at once.
  std::vector<std::vector<std::size_t>> members;
  for (const WorkloadGroup& g : groups) members.push_back(group_members(g, index_of));

  // A bootstrap p-value cannot go below 1 / (R + 1), and Holm's first step over m workloads
  // needs alpha / m: with fewer replicates no workload could ever be called. Use enough.
  const int resamples = replicates_for(stats, samples.size());
  PairedGateResult result;
  result.objective = objective;
  std::vector<ObjectiveTerms> terms;
  terms.reserve(samples.size());
  std::vector<double> p_win, p_loss;
  for (std::size_t w = 0; w < samples.size(); ++w) {
    const WorkloadSamples& s = samples[w];
    result.a_correct = result.a_correct && s.a_correct;
    result.b_correct = result.b_correct && s.b_correct;
    result.both_correct = result.a_correct && result.b_correct;
    const WorkloadDraws d =
        bootstrap_workload(rank_rounds(s), resamples, workload_seed(stats.seed, w));
    std::vector<double> log_rep(d.log_latency_a_rep.size());
    for (std::size_t r = 0; r < log_rep.size(); ++r)
      log_rep[r] = d.log_latency_a_rep[r] - d.log_latency_b_rep[r];
    const BootstrapTest t =
        test_log_speedup(d.log_latency_a - d.log_latency_b, std::move(log_rep), stats);
    WorkloadGate gate;
    gate.workload = s.workload;
    gate.speedup = t.interval;
    gate.p_win = t.p_win;
    gate.p_loss = t.p_loss;
    result.workloads.push_back(gate);
    p_win.push_back(t.p_win);
    p_loss.push_back(t.p_loss);
    terms.push_back(objective_terms(d, objective));
  }
  const std::vector<bool> wins = holm_rejections(p_win, stats.family_alpha);
  const std::vector<bool> losses = holm_rejections(p_loss, stats.family_alpha);
  for (std::size_t w = 0; w < result.workloads.size(); ++w)
    result.workloads[w].verdict = verdict_of(wins[w], losses[w]);

  auto make_group = [&](const std::string& name, std::vector<std::size_t> indices) {
    GroupGate g;
    g.name = name;
    const BootstrapTest t = test_group(indices, terms, stats);
    g.workloads = std::move(indices);
    g.objective = t.interval;
    g.p_win = t.p_win;
    g.p_loss = t.p_loss;
    return g;
  };
  p_win.clear();
  p_loss.clear();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    result.groups.push_back(make_group(groups[i].name, members[i]));
    p_win.push_back(result.groups.back().p_win);
    p_loss.push_back(result.groups.back().p_loss);
  }
  const std::vector<bool> group_wins = holm_rejections(p_win, stats.family_alpha);
  const std::vector<bool> group_losses = holm_rejections(p_loss, stats.family_alpha);
  for (std::size_t i = 0; i < result.groups.size(); ++i)
    result.groups[i].verdict = verdict_of(group_wins[i], group_losses[i]);

  std::vector<std::size_t> all(samples.size());
  std::iota(all.begin(), all.end(), 0);
  result.overall = make_group("all", std::move(all));
  // The overall objective is a family of one: Holm reduces to the plain level.
  result.overall.verdict = verdict_of(result.overall.p_win <= stats.family_alpha,
                                      result.overall.p_loss <= stats.family_alpha);
  return result;
}

}  // namespace kh
