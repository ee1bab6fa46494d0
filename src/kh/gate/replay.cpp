#include "kh/gate/replay.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/spec/trace.h"
#include "kh/gen/input_generator.h"

namespace kh {

int ReplayResult::failures() const {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [](const ReplayRun& r) { return !r.passed; }));
}

int ReplayResult::skipped() const {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [](const ReplayRun& r) { return r.skipped; }));
}

std::string ReplayResult::first_skip() const {
  for (const ReplayRun& r : runs)
    if (r.skipped) return fmt::format("{} [{}]: {}", r.workload, r.variant, r.message);
  return "";
}

std::string ReplayResult::first_failure() const {
  for (const ReplayRun& r : runs)
    if (!r.passed)
      return fmt::format("{}{}: {}: {}", r.workload,
                         r.variant.empty() ? "" : " [" + r.variant + "]", r.status, r.message);
  return "";
}

Json replay_json(const ReplayResult& r) {
  Json failing = Json::array();
  for (const ReplayRun& x : r.runs)
    if (!x.passed)
      failing.push_back({{"workload", x.workload},
                         {"variant", x.variant},
                         {"trials", x.trials},
                         {"status", x.status},
                         {"message", x.message}});
  return {{"seed", r.seed},
          {"trials", r.trials},
          {"adversarial_trials", r.adversarial_trials},
          {"variants", r.variants},
          {"runs", r.runs.size()},
          {"recalled_runs", r.recalled},
          {"failures", r.failures()},
          {"skipped_runs", r.skipped()},
          {"failing_runs", failing}};
}

int ReplayResult::min_realistic_trials() const {
  int fewest = std::numeric_limits<int>::max();
  for (const ReplayRun& r : runs)
    if (r.variant.empty()) fewest = std::min(fewest, r.trials);
  return fewest == std::numeric_limits<int>::max() ? 0 : fewest;
}

ReplayResult run_replay(const Definition& def, const std::vector<Workload>& workloads,
                        const GateSide& candidate, const ReplayOptions& o,
                        const ReplayProgressFn& progress) {
  if (o.trials < 1) fail("replay: {} trials, expected >= 1", o.trials);
  if (o.adversarial_trials < 0) fail("replay: {} adversarial trials", o.adversarial_trials);
  ReplayResult result;
  result.seed = o.seed;
  result.trials = o.trials;
  result.adversarial_trials = o.adversarial_trials;
  if (o.adversarial_trials > 0)
    for (const VariantInfo& v : InputGenerator::variants(def)) result.variants.push_back(v.name);

  // One evaluator per input distribution: realistic, then each variant.
  std::vector<std::pair<std::string, int>> passes{{"", o.trials}};
  for (const auto& v : result.variants) passes.emplace_back(v, o.adversarial_trials);
  const int total = static_cast<int>(passes.size() * workloads.size());
  int done = 0;
  std::vector<ReplayRun> by_pass;
  for (const auto& [variant, trials] : passes) {
    EvalOptions eval = o.eval;
    eval.timing.reset();
    // The per-workload deadline was set for a sweep's few trials; the replay runs many more.
    eval.workload_timeout *= std::max(1, (trials + o.eval.trials - 1) / std::max(1, o.eval.trials));
    eval.trials = trials;
    eval.seed = o.seed;
    eval.variant = variant;
    Evaluator evaluator(eval, candidate.library, candidate.entry);
    for (const Workload& w : workloads) {
      // A variant that cannot be drawn for this workload (zero_length with one sequence) proves
      // nothing there: the run is skipped, not failed, and the reason kept.
      std::optional<ReplayRun> kept;
      if (std::string why_not = InputGenerator::variant_does_not_apply(def, variant, w);
          !why_not.empty()) {
        kept = ReplayRun{w.uuid, variant, 0, true, "SKIPPED", std::move(why_not), true};
      } else if (o.recall && (kept = o.recall(w, eval))) {
        ++result.recalled;
      } else {
        const WorkloadVerdict v = evaluator.evaluate(def, w);
        if (o.record) o.record(w, eval, v);
        kept = ReplayRun{w.uuid, variant, v.trials_run, v.check.passed(),
                         std::string(status_name(v.check.status)), v.check.message};
      }
      by_pass.push_back(std::move(*kept));
      if (progress) progress(++done, total, w.uuid);
    }
  }
  // Workload-major for reading: each workload's realistic run, then its variants.
  for (std::size_t w = 0; w < workloads.size(); ++w)
    for (std::size_t p = 0; p < passes.size(); ++p)
      result.runs.push_back(by_pass[p * workloads.size() + w]);
  return result;
}

}  // namespace kh
