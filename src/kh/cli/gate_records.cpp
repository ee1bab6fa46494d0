#include "kh/cli/gate_records.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "kh/core/sha256.h"
#include "kh/gate/gate_json.h"
#include "kh/run/evaluation_record.h"

namespace kh::cli {
namespace {

Json replay_options_json(const EvalOptions& pass) {
  Json options = evaluation_options_json(pass);
  options["stage"] = "replay";
  return options;
}

std::string percent(const Interval& i) {
  return fmt::format("{:+.2f} % [{:+.2f}, {:+.2f}]", (i.estimate - 1) * 100, (i.lo - 1) * 100,
                     (i.hi - 1) * 100);
}

}  // namespace

GateRecord store_gate(ArtifactStore& store, const Definition& def, const std::string& a_hash,
                      const std::string& b_hash, const std::string& stage, const GateSetup& setup,
                      const PairedRun& run, const PairedGateResult& result) {
  GateRecord g;
  g.definition = def.name;
  g.candidate_a = a_hash;
  g.candidate_b = b_hash;
  g.stage = stage;
  g.gpu = setup.gpu;
  g.timing_method = setup.method;
  if (!run.environment.is_null()) {
    EnvironmentRecord env{sha256_hex(run.environment.dump()), run.environment};
    store.put_environment(env);
    g.environment = env.hash;
  }
  g.objective = std::string(objective_name(result.objective));
  g.min_effect = setup.statistics.min_effect;
  g.estimate = result.overall.objective.estimate;
  g.lo = result.overall.objective.lo;
  g.hi = result.overall.objective.hi;
  g.verdict = std::string(verdict_name(result.overall.verdict));
  g.both_correct = result.both_correct;
  g.result = paired_gate_json(result);
  g.result["failures"] = run.failures;
  g.samples = paired_samples_json(run.samples);
  // The options the run actually used (a promotion stage derives its own seeds and inputs).
  const PairedRunOptions& o = run.options;
  g.options = {{"rounds", o.rounds},
               {"pairs_per_round", o.pairs_per_round},
               {"warmup", o.warmup},
               {"order_seed", o.order_seed},
               {"first_input_trial", o.first_input_trial},
               {"correctness_trials", o.eval.trials},
               {"seed", o.eval.seed},
               {"backend", o.eval.backend},
               {"confidence", setup.statistics.confidence},
               {"family_alpha", setup.statistics.family_alpha},
               {"resamples", setup.statistics.resamples},
               {"statistics_seed", setup.statistics.seed},
               {"min_effect_source", setup.min_effect_source}};
  g.created_at = utc_timestamp();
  g.id = store.put_gate(g);
  return g;
}

std::string gate_text(const PairedGateResult& r, const PairedRun& run, int max_workloads) {
  std::string out = fmt::format("  overall ({}): {}  {}\n", objective_name(r.objective),
                                percent(r.overall.objective), verdict_name(r.overall.verdict));
  for (const GroupGate& g : r.groups)
    out += fmt::format("  regime {:<40} {}  {}  ({} workloads)\n", g.name, percent(g.objective),
                       verdict_name(g.verdict), g.workloads.size());
  std::vector<const WorkloadGate*> called;
  int ties = 0;
  for (const WorkloadGate& w : r.workloads) {
    if (w.verdict == Verdict::kTie)
      ++ties;
    else
      called.push_back(&w);
  }
  std::sort(called.begin(), called.end(), [](const WorkloadGate* a, const WorkloadGate* b) {
    return a->speedup.estimate < b->speedup.estimate;
  });
  out += fmt::format("  workloads: {} judged, {} ties, {} called\n", r.workloads.size(), ties,
                     called.size());
  for (std::size_t i = 0; i < called.size() && static_cast<int>(i) < max_workloads; ++i)
    out += fmt::format("    {} {}  {}\n", called[i]->workload.substr(0, 8),
                       percent(called[i]->speedup), verdict_name(called[i]->verdict));
  for (const auto& f : run.failures) out += "  FAILED " + f + "\n";
  return out;
}

Json gate_report_json(const GateRecord& record, const PairedRun& run) {
  Json j = paired_gate_json(paired_gate_from_json(record.result));
  j["id"] = record.id;
  j["stage"] = record.stage;
  j["candidate_a"] = record.candidate_a;
  j["candidate_b"] = record.candidate_b;
  j["gpu"] = record.gpu;
  j["timing_method"] = record.timing_method;
  j["min_effect"] = record.min_effect;
  j["options"] = record.options;
  j["failures"] = run.failures;
  return j;
}

Json decision_evidence_json(const DecisionReport& d) {
  return {{"decision", decision_name(d.decision)}, {"reason", d.reason}, {"evidence", d.evidence}};
}

void keep_replay_in_store(ReplayOptions& replay, ArtifactStore& store, const Definition& def,
                          const std::string& candidate) {
  store.put_definition(def.name, def.to_json());
  using Key = std::pair<std::string, std::string>;  // workload, options as JSON text
  auto kept = std::make_shared<std::map<Key, ReplayRun>>();
  for (const auto& e : store.evaluations_of_candidate(candidate))
    if (e.definition == def.name && e.options.is_object() &&
        e.options.value("stage", "") == "replay")
      kept->emplace(Key{e.workload, e.options.dump()},
                    ReplayRun{e.workload, e.options.value("variant", ""), e.trials,
                              e.status == "PASSED", e.status, e.message});
  replay.recall = [kept](const Workload& w, const EvalOptions& pass) -> std::optional<ReplayRun> {
    const auto it = kept->find(Key{w.uuid, replay_options_json(pass).dump()});
    if (it == kept->end()) return std::nullopt;
    return it->second;
  };
  replay.record = [&store, definition = def.name, candidate](
                      const Workload& w, const EvalOptions& pass, const WorkloadVerdict& v) {
    store.put_workload(definition, w.uuid, w.to_json());
    const VerdictContext ctx{candidate, definition, "", 1, replay_options_json(pass), std::nullopt};
    std::optional<EnvironmentRecord> env;
    const EvaluationRecord e = evaluation_record(v, ctx, &env);
    if (env) store.put_environment(*env);
    store.put_evaluation(e);
  };
}

}  // namespace kh::cli
