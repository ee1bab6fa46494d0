// `kh eval CAND`: builds a candidate (cached) and judges it on the workloads of its definition,
// each trial in an isolated worker process, with kh's strict checks (or --official rules). Prints
// a table, or JSON with --json; a progress line on a terminal. Exit status 0 when every workload
// PASSED, 3 otherwise, 1 on an input error.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "kh/build/builder.h"
#include "kh/build/candidate.h"
#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/gen/input_generator.h"
#include "kh/roofline/call_cost.h"
#include "kh/run/builtin_candidates.h"
#include "kh/run/evaluation_record.h"
#include "kh/run/evaluator.h"
#include "kh/spec/dataset.h"
#include "kh/spec/trace.h"

namespace kh::cli {
namespace {

constexpr int kExitNotPassed = 3;

struct Options {
  std::string candidate;
  std::string definition;              // builtin candidates only
  std::vector<std::string> workloads;  // uuids or indices; empty: all
  std::string workloads_file;          // JSONL of workloads instead of the dataset's
  bool json = false;
  bool no_store = false;
  StoreOptions store;
  EvalCliOptions e;
};

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [name, value] : w.axes)
    s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s;
}

void run(Options& o) {
  const ResolvedCandidate resolved =
      resolve_candidate_arg(o.candidate, o.e.params, o.definition, o.e.cache);
  check_backend_fits(resolved, o.e.eval.backend);
  const Candidate& cand = resolved.candidate;
  const BuildResult& build = resolved.build;
  const Dataset ds = Dataset::open(o.e.eval.root);
  const Definition& def = ds.definition(cand.definition);
  auto chosen =
      pick_workloads(select_workloads(ds, def, o.workloads_file), o.workloads, def.name);
  std::optional<MachineCeilings> ceilings = resolve_eval_cli_options(o.e, def);
  const EvalOptions& eval = o.e.eval;
  // Workloads the variant cannot be drawn for (GDN zero_length with one sequence) are skipped,
  // said on stderr and listed in the JSON; when it fits none of them, that is an error.
  Json skipped = Json::array();
  const std::size_t picked = chosen.size();
  std::erase_if(chosen, [&](const auto& pick) {
    std::string why = InputGenerator::variant_does_not_apply(def, eval.variant, pick.second);
    if (!why.empty())
      skipped.push_back({{"index", pick.first}, {"workload", pick.second.uuid}, {"reason", why}});
    return !why.empty();
  });
  report_undrawable("kh eval", eval.variant, picked, skipped.size(),
                    skipped.empty() ? "" : skipped.at(0).at("reason").get<std::string>());
  const bool progress = !o.json && isatty(STDERR_FILENO);
  // Every verdict is kept in the store as it arrives (kh show / kh history read it).
  std::unique_ptr<ArtifactStore> store;
  CandidateRecord record;
  if (!o.no_store) {
    store = open_store(o.store);
    record = candidate_record(*store, resolved);
    store->put_definition(def.name, def.to_json());
  }
  auto keep = [&](const Workload& w, const WorkloadVerdict& v) {
    // Without --ceilings, those stored for the GPU the first timed verdict names (read once).
    if (!ceilings && v.timing) ceilings = ceilings_for(v, std::nullopt);
    if (!store) return;
    store->put_workload(def.name, w.uuid, w.to_json());
    VerdictContext ctx{record.hash, def.name, "", 1, evaluation_options_json(eval), ceilings};
    std::optional<EnvironmentRecord> env;
    const EvaluationRecord e = evaluation_record(v, ctx, &env);
    if (env) store->put_environment(*env);
    store->put_evaluation(e);
  };
  std::vector<WorkloadVerdict> verdicts;
  if (!build.ok) {
    for (const auto& [i, w] : chosen) {
      WorkloadVerdict v;
      v.workload = w.uuid;
      v.check.status = EvalStatus::kCompileError;
      v.check.matched_ratio = 0;
      v.check.message = build.log;
      keep(w, v);
      verdicts.push_back(v);
    }
  } else {
    Evaluator evaluator(eval, build.library.string(), cand.entry.symbol);
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      if (progress)
        std::cerr << fmt::format("\r[{}/{}] workload {} ...", k + 1, chosen.size(),
                                 chosen[k].second.uuid)
                  << std::flush;
      verdicts.push_back(evaluator.evaluate(def, chosen[k].second));
      keep(chosen[k].second, verdicts.back());
    }
    if (progress) std::cerr << "\r\033[K" << std::flush;
  }

  std::size_t passed = 0;
  for (const auto& v : verdicts) passed += v.check.passed();
  if (o.json) {
    Json results = Json::array();
    for (std::size_t k = 0; k < verdicts.size(); ++k) {
      const auto& v = verdicts[k];
      results.push_back({{"index", chosen[k].first},
                         {"workload", v.workload},
                         {"axes", chosen[k].second.to_json()["axes"]},
                         {"status", status_name(v.check.status)},
                         {"max_absolute_error", json_float(v.check.max_absolute_error)},
                         {"max_relative_error", json_float(v.check.max_relative_error)},
                         {"matched_ratio", v.check.matched_ratio},
                         {"message", v.check.message},
                         {"trials_run", v.trials_run},
                         {"nondeterministic", v.nondeterministic},
                         {"log_tail", v.log_tail},
                         {"seconds", v.seconds},
                         {"trial_phase_seconds", v.trial_phase_seconds},
                         {"timing", verdict_timing_json(v, ceilings)}});
    }
    const Json report = {{"candidate", cand.name},
                         {"definition", def.name},
                         {"backend", eval.backend},
                         {"official", eval.official},
                         {"reference", uses_python_oracle(eval.oracle, def) ? "python"
                                       : eval.cpu_reference                 ? "cpu"
                                                                            : "auto"},
                         {"trials", eval.trials},
                         {"seed", eval.seed},
                         {"variant", eval.variant},
                         {"build",
                          {{"ok", build.ok},
                           {"cached", build.cached},
                           {"key", build.key},
                           {"library", build.library.string()}}},
                         {"results", results},
                         {"skipped", skipped},
                         {"passed", passed},
                         {"failed", verdicts.size() - passed}};
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} on {} ({} backend{}, {} trials{}): build {} {}\n", cand.name,
                             def.name, eval.backend, eval.official ? ", official rules" : "",
                             eval.trials, eval.variant.empty() ? "" : ", variant " + eval.variant,
                             build.key.substr(0, 12),
                             build.ok ? (build.cached ? "cached" : "built") : "FAILED");
    std::cout << fmt::format("{:>4}  {:<38} {:<22} {:>9} {:>9} {:>9}  {}\n", "#", "workload",
                             "status", "max abs", "max rel", "matched", "axes / note");
    for (std::size_t k = 0; k < verdicts.size(); ++k) {
      const auto& v = verdicts[k];
      std::string note = axes_text(chosen[k].second);
      if (v.nondeterministic) note += "  [nondeterministic]";
      if (v.timing)
        note = fmt::format("{:.2f} us ({}{})  ", v.timing->latency_seconds * 1e6,
                           timing_method_name(v.timing->method),
                           v.timing->throttled_samples
                               ? fmt::format(", {} throttled", v.timing->throttled_samples)
                               : "") +
               note;
      std::cout << fmt::format("{:>4}  {:<38} {:<22} {:>9.3g} {:>9.3g} {:>9.6f}  {}\n",
                               chosen[k].first, v.workload, status_name(v.check.status),
                               v.check.max_absolute_error, v.check.max_relative_error,
                               v.check.matched_ratio, note);
      if (!v.check.passed()) {
        std::string message = v.check.message;
        if (message.size() > 2000) message = message.substr(0, 2000) + " ...";
        std::cout << "        " << message << "\n";
        if (!v.log_tail.empty()) std::cout << "        worker log tail:\n" << v.log_tail << "\n";
      }
    }
    std::cout << fmt::format("{} passed, {} failed\n", passed, verdicts.size() - passed);
  }
  if (passed != verdicts.size()) set_exit_code(kExitNotPassed);
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("eval", "Build a candidate and judge it on its definition's workloads");
  cmd->add_option("candidate", o->candidate,
                  "candidate folder (with candidate.toml), builtin:cpu_reference or "
                  "builtin:definition_reference")
      ->required();
  cmd->add_option("--definition,-d", o->definition, "definition of a builtin candidate");
  add_eval_cli_options(cmd, o->e);
  cmd->add_option("--workload,-w", o->workloads,
                  "workload uuid or index (repeatable; default all)");
  cmd->add_option("--workloads", o->workloads_file,
                  "JSONL file of workloads of the definition (default: the dataset's)");
  cmd->add_option("--device", o->e.eval.device, "CUDA device")->capture_default_str();
  cmd->add_flag("--json", o->json, "print the results as JSON");
  add_store_option(cmd, o->store);
  cmd->add_flag("--no-store", o->no_store, "do not record the results in the store");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
