#include "kh/gate/paired_run.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/spec/trace.h"

namespace kh {
namespace {

std::string failure_line(const char* side, const WorkloadVerdict& v) {
  return fmt::format("{} on {}: {}: {}", side, v.workload, status_name(v.check.status),
                     v.check.message);
}

}  // namespace

std::vector<WorkloadVerdict> check_correctness(const Definition& def,
                                               const std::vector<Workload>& workloads,
                                               const GateSide& side, EvalOptions eval,
                                               const std::string& phase,
                                               const PairedRunProgressFn& progress) {
  eval.timing.reset();
  Evaluator evaluator(eval, side.library, side.entry);
  std::vector<WorkloadVerdict> out;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    out.push_back(evaluator.evaluate(def, workloads[i]));
    if (progress)
      progress({phase, static_cast<int>(i + 1), static_cast<int>(workloads.size()),
                workloads[i].uuid});
  }
  return out;
}

namespace {

/// The order of one round's timed calls on a workload: per pair a coin decides who goes first.
std::vector<int> pair_order(int pairs, std::mt19937_64& rng) {
  std::vector<int> order;
  std::bernoulli_distribution coin(0.5);
  for (int p = 0; p < pairs; ++p) {
    const int first = coin(rng) ? 1 : 0;
    order.push_back(first);
    order.push_back(1 - first);
  }
  return order;
}

}  // namespace

PairedRun run_paired(const Definition& def, const std::vector<Workload>& workloads,
                     const GateSide& a, const GateSide& b, const PairedRunOptions& o,
                     const PairedRunProgressFn& progress) {
  if (workloads.empty()) fail("paired gate: no workloads");
  if (o.rounds < 2)
    fail("paired gate: {} rounds; at least 2 are needed to see drift between rounds", o.rounds);
  if (o.pairs_per_round < 1) fail("paired gate: {} pairs per round, expected >= 1", o.pairs_per_round);
  if (o.warmup < 0) fail("paired gate: warmup {} is negative", o.warmup);

  PairedRun run;
  run.options = o;
  run.a_verdicts = check_correctness(def, workloads, a, o.eval, "correctness of A", progress);
  run.b_verdicts = o.same_candidate
                       ? run.a_verdicts
                       : check_correctness(def, workloads, b, o.eval, "correctness of B", progress);
  for (std::size_t w = 0; w < workloads.size(); ++w) {
    WorkloadSamples s;
    s.workload = workloads[w].uuid;
    s.a_correct = run.a_verdicts[w].check.passed();
    s.b_correct = run.b_verdicts[w].check.passed();
    if (!s.a_correct) run.failures.push_back(failure_line("A", run.a_verdicts[w]));
    if (!s.b_correct && !o.same_candidate)
      run.failures.push_back(failure_line("B", run.b_verdicts[w]));
    run.samples.push_back(std::move(s));
  }

  std::vector<std::size_t> timed;
  for (std::size_t w = 0; w < workloads.size(); ++w)
    if (run.samples[w].a_correct && run.samples[w].b_correct) timed.push_back(w);
  if (timed.empty()) return run;

  EvalOptions eval = o.eval;
  eval.timing.reset();
  Evaluator evaluator(eval, a.library, a.entry);
  evaluator.set_peer(b.library, b.entry);
  std::mt19937_64 rng(o.order_seed);
  std::set<std::size_t> lost;  // workloads whose paired timing failed
  const int total = o.rounds * static_cast<int>(timed.size());
  int done = 0;
  for (int round = 0; round < o.rounds; ++round) {
    std::vector<std::size_t> order = timed;
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t w : order) {
      ++done;
      if (lost.count(w)) continue;
      const std::vector<int> calls = pair_order(o.pairs_per_round, rng);
      Evaluator::PairedTiming t = evaluator.time_pair(def, workloads[w], o.first_input_trial + round,
                                                      o.method, o.warmup, calls);
      if (progress) progress({"timing", done, total, workloads[w].uuid});
      if (!t.error.empty()) {
        // The timer cannot tell whose call failed: the workload leaves the gate, counted against
        // B (the challenger must time cleanly beside the retained candidate to be promoted).
        lost.insert(w);
        run.samples[w].rounds.clear();
        run.samples[w].b_correct = false;
        run.failures.push_back(fmt::format("A/B pair on {}: paired timing failed: {}",
                                           workloads[w].uuid, t.error));
        continue;
      }
      if (run.environment.is_null()) run.environment = t.environment;
      PairedRound r;
      for (const auto& s : t.a) r.a.push_back(s.seconds);
      for (const auto& s : t.b) r.b.push_back(s.seconds);
      if (r.a.size() != r.b.size() || r.a.empty())
        fail("paired timing on {}: {} samples of A and {} of B", workloads[w].uuid, r.a.size(),
             r.b.size());
      run.samples[w].rounds.push_back(std::move(r));
    }
  }
  return run;
}

PairedGateResult judge_run(const PairedRun& run, const std::vector<WorkloadGroup>& groups,
                           GateObjective objective, const GateStatistics& stats) {
  std::vector<WorkloadSamples> timed;
  std::set<std::string> timed_ids;
  bool a_correct = true, b_correct = true;
  for (const WorkloadSamples& s : run.samples) {
    a_correct = a_correct && s.a_correct;
    b_correct = b_correct && s.b_correct;
    if (s.a_correct && s.b_correct && !s.rounds.empty()) {
      timed.push_back(s);
      timed_ids.insert(s.workload);
    }
  }
  if (timed.empty()) {
    PairedGateResult empty;
    empty.objective = objective;
    empty.a_correct = a_correct;
    empty.b_correct = b_correct;
    empty.both_correct = false;  // nothing was judged
    return empty;
  }
  std::vector<WorkloadGroup> kept;
  for (const WorkloadGroup& g : groups) {
    WorkloadGroup k{g.name, {}};
    for (const auto& id : g.workloads)
      if (timed_ids.count(id)) k.workloads.push_back(id);
    if (!k.workloads.empty()) kept.push_back(std::move(k));
  }
  PairedGateResult r = judge_paired(timed, kept, objective, stats);
  r.a_correct = a_correct;
  r.b_correct = b_correct;
  r.both_correct = a_correct && b_correct;
  return r;
}

}  // namespace kh
