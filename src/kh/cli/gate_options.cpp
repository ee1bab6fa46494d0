#include "kh/cli/gate_options.h"

#include <random>

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/gate/gate_json.h"
#include "kh/gate/representative_set.h"
#include "kh/run/builtin_candidates.h"
#include "kh/run/memory_backend.h"

namespace kh::cli {

void add_gate_cli_options(CLI::App* cmd, GateCliOptions& o) {
  add_eval_cli_options(cmd, o.e);
  cmd->add_option("--rounds", o.rounds, "gate: rounds over the workloads (drift is seen between)")
      ->capture_default_str();
  cmd->add_option("--pairs", o.pairs, "gate: timed A/B pairs per workload and round")
      ->capture_default_str();
  cmd->add_option("--gate-warmup", o.gate_warmup, "gate: untimed calls per candidate and round")
      ->capture_default_str();
  cmd->add_option("--objective", o.objective,
                  "distribution objective: mean_latency (the seed system's) or mean_speedup "
                  "(the contest's score)")
      ->check(CLI::IsMember({"mean_latency", "mean_speedup"}))
      ->capture_default_str();
  cmd->add_option("--min-effect", o.min_effect,
                  "smallest relative change called a win or loss (default: from the stored noise "
                  "floor of this definition, GPU and timer; else 0.01)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--confidence", o.confidence, "interval level")->capture_default_str();
  cmd->add_option("--alpha", o.family_alpha, "family-wise error rate (Holm)")
      ->capture_default_str();
  cmd->add_option("--order-seed", o.order_seed,
                  "seed of the randomised workload and A/B order (default: drawn fresh)");
}

namespace {

/// Every flag checked before anything is measured, naming the flag: a bad --confidence found by
/// the statistics after an hour of gates would waste the hour.
void check_gate_flags(const GateCliOptions& o) {
  if (o.rounds < 2)
    fail("--rounds {}: at least 2 (drift between rounds is part of the interval)", o.rounds);
  if (o.pairs < 1) fail("--pairs {}: at least 1", o.pairs);
  if (o.gate_warmup < 0) fail("--gate-warmup {}: expected >= 0", o.gate_warmup);
  if (!(o.confidence > 0 && o.confidence < 1))
    fail("--confidence {}: expected a level strictly between 0 and 1", o.confidence);
  if (!(o.family_alpha > 0 && o.family_alpha < 1))
    fail("--alpha {}: expected a level strictly between 0 and 1", o.family_alpha);
  if (o.min_effect >= 1) fail("--min-effect {}: expected a fraction below 1", o.min_effect);
}

}  // namespace

GateSetup resolve_gate_setup(GateCliOptions& o, const Definition& def, const ArtifactStore& store) {
  check_gate_flags(o);
  GateSetup s;
  const bool cuda = o.e.eval.backend == "cuda";
  if (o.e.timing.empty()) o.e.timing = cuda ? "cupti" : "wall";
  // The gate's method; resolve_eval_cli_options would also turn on per-workload timing of
  // correctness evaluations, which a gate does not want.
  const std::string method = o.e.timing;
  o.e.timing.clear();
  resolve_eval_cli_options(o.e, def);
  s.method = method;
  s.run.method = parse_timing_method(method);
  s.run.eval = o.e.eval;
  s.run.rounds = o.rounds;
  s.run.pairs_per_round = o.pairs;
  s.run.warmup = o.gate_warmup;
  if (o.order_seed == 0) o.order_seed = std::random_device{}() | 1ull;
  s.run.order_seed = o.order_seed;
  s.objective = parse_objective(o.objective);
  s.statistics.confidence = o.confidence;
  s.statistics.family_alpha = o.family_alpha;
  s.statistics.seed = o.order_seed;
  s.gpu = cuda ? cuda_device_name(o.e.eval.device) : "cpu";
  if (o.min_effect >= 0) {
    s.statistics.min_effect = o.min_effect;
    s.min_effect_source = "--min-effect";
  } else if (auto floor = store.latest_noise_floor(def.name, s.gpu, method)) {
    s.statistics.min_effect = floor->minimum_effect;
    s.min_effect_source = "noise floor " + floor->id.substr(0, 12);
    s.floor = std::move(floor);
  } else {
    s.min_effect_source = "default (no noise floor stored for this GPU and timer; run kh noise)";
  }
  return s;
}

GateSide gate_side(const ResolvedCandidate& c) {
  if (!c.build.ok)
    fail("candidate {} did not build:\n{}", c.candidate.name, c.build.log);
  return {c.candidate.name, c.build.library, c.candidate.entry.symbol};
}

StoredCandidate rebuild_stored_candidate(ArtifactStore& store, const std::string& hash,
                                         const std::filesystem::path& cache) {
  const auto found = store.candidate(hash);
  if (!found)
    fail("{}: the store has no candidate {} (a decision names it; was its bundle imported?)",
         store.location().database().string(), hash);
  const CandidateRecord& c = *found;
  if (is_builtin_candidate(c.name))
    return {c, resolve_candidate_arg(c.name, {}, c.definition, cache)};
  if (c.manifest_blob.empty())
    fail("stored candidate {} ({}) has no manifest to rebuild it from", c.name, c.hash);
  const auto dir = store.location().dir / "candidates" / c.hash;
  std::filesystem::create_directories(dir);
  write_text_file_atomic(dir / "candidate.toml", store.blob(c.manifest_blob));
  for (const auto& [path, blob] : c.sources) {
    const auto file = dir / path;
    std::filesystem::create_directories(file.parent_path());
    write_text_file_atomic(file, store.blob(blob));
  }
  std::vector<std::string> params;
  for (const auto& [name, value] : c.params) params.push_back(name + "=" + value);
  ResolvedCandidate r = resolve_candidate_arg(dir.string(), params, c.definition, cache);
  if (const std::string rebuilt = record_candidate(store, r.candidate, r.params).hash;
      rebuilt != c.hash)
    fail("stored candidate {} ({}) rebuilt from the store hashes to {}: its stored sources are "
         "incomplete or changed",
         c.name, c.hash, rebuilt);
  return {c, std::move(r)};
}

std::map<std::string, double> stored_latencies(const ArtifactStore& store, const CandidateRecord& c,
                                               const std::string& method) {
  std::map<std::string, EvaluationRecord> newest;
  for (auto& e : store.evaluations_of_candidate(c.hash)) {
    if (e.timing_method != method || !e.summary || e.status != "PASSED") continue;
    auto it = newest.find(e.workload);
    if (it == newest.end() || e.created_at > it->second.created_at) newest[e.workload] = e;
  }
  std::map<std::string, double> out;
  for (const auto& [uuid, e] : newest) out[uuid] = e.summary->latency;
  return out;
}

RepresentativeSet dataset_representatives(const Dataset& ds, const Definition& def,
                                          const ArtifactStore& store,
                                          const CandidateRecord& baseline,
                                          const std::string& method) {
  const std::vector<Workload> all = ds.workloads(def.name);
  return select_representatives(partition_regimes(def, all), all,
                                stored_latencies(store, baseline, method));
}

std::vector<Workload> gate_workloads(const std::string& which, const Dataset& ds,
                                     const Definition& def, const RepresentativeSet& rep) {
  if (which != "all" && which != "representative") return select_workloads(ds, def, which);
  std::vector<Workload> all = select_workloads(ds, def, "");
  if (which == "all") return all;
  std::vector<Workload> out;
  for (const auto& id : rep.workloads)
    for (const auto& w : all)
      if (w.uuid == id) out.push_back(w);
  return out;
}

}  // namespace kh::cli
