// `kh gate CAND --against retained|CAND2`: a paired gate of CAND (B) against the retained
// candidate of its definition or another candidate (A): both checked for correctness, then timed
// in one worker on the same inputs, interleaved in random order over rounds; per-workload and
// per-regime speedups with intervals, win/tie/loss against the minimum effect with Holm control.
// The gate is stored (kh promote decides; a gate alone decides nothing). Exit status 0 when both
// were correct everywhere, 3 otherwise.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/gate_options.h"
#include "kh/cli/gate_records.h"
#include "kh/cli/gate_progress.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/gate/representative_set.h"
#include "kh/gate/timing_modes.h"

namespace kh::cli {
namespace {

constexpr int kExitNotCorrect = 3;

struct Options {
  std::string candidate;
  std::string against = "retained";
  std::string definition;
  std::string workloads = "representative";
  bool json = false;
  StoreOptions store;
  GateCliOptions g;
};

void run(Options& o) {
  auto store = open_store(o.store);
  const ResolvedCandidate b = resolve_candidate_arg(o.candidate, o.g.e.params, o.definition,
                                                    o.g.e.cache);
  check_backend_fits(b, o.g.e.eval.backend);
  const CandidateRecord b_record = candidate_record(*store, b);
  const Dataset ds = Dataset::open(o.g.e.eval.root);
  const Definition def = ds.definition(b.candidate.definition);

  ResolvedCandidate a;
  if (o.against == "retained") {
    const auto retained = store->retained(def.name);
    if (!retained)
      fail("definition {} has no retained candidate yet: kh promote a first one, or gate against "
           "a candidate (--against FOLDER)",
           def.name);
    a = rebuild_stored_candidate(*store, retained->candidate, o.g.e.cache).resolved;
  } else {
    a = resolve_candidate_arg(o.against, {}, def.name, o.g.e.cache);
  }
  check_backend_fits(a, o.g.e.eval.backend);
  const CandidateRecord a_record = candidate_record(*store, a);

  GateSetup setup = resolve_gate_setup(o.g, def, *store);
  const RepresentativeSet rep =
      dataset_representatives(ds, def, *store, a_record, setup.method);
  const std::vector<Workload> workloads = drawable_workloads(
      def, o.g.e.eval.variant, gate_workloads(o.workloads, ds, def, rep), "kh gate");
  std::vector<WorkloadGroup> groups;
  for (const auto& g : rep.groups) groups.push_back(g.group);
  std::cerr << fmt::format(
        "kh gate: {} (B) against {} (A) on {} workloads of {}, {} timer on {}, {} rounds x {} "
        "pairs, order seed {}, minimum effect {:g} ({})\n",
        b.candidate.name, a.candidate.name, workloads.size(), def.name, setup.method, setup.gpu,
        setup.run.rounds, setup.run.pairs_per_round, setup.run.order_seed,
        setup.statistics.min_effect, setup.min_effect_source);

  ProgressLine progress(isatty(STDERR_FILENO), o.json && isatty(STDERR_FILENO));
  const PairedRun run = run_paired(def, workloads, gate_side(a), gate_side(b), setup.run,
                                   [&](const PairedRunProgress& p) {
                                     progress.show(p.phase, fmt::format("{} {}/{}", p.phase, p.done, p.total));
                                   });
  progress.clear();
  const PairedGateResult result = judge_run(run, groups, setup.objective, setup.statistics);
  if (const std::string modes = timing_modes_warning(fast_modes(run.samples)); !modes.empty())
    std::cerr << "kh gate: " << modes << "\n";
  const GateRecord record =
      store_gate(*store, def, a_record.hash, b_record.hash, "gate", setup, run, result);
  if (o.json) {
    std::cout << gate_report_json(record, run).dump(2) << "\n";
  } else {
    std::cout << fmt::format("gate {}: {} vs {} (speedup of B over A; + is faster)\n",
                             record.id.substr(0, 12), b.candidate.name, a.candidate.name)
              << gate_text(result, run);
  }
  if (!result.both_correct) set_exit_code(kExitNotCorrect);
}

}  // namespace

void add_gate_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "gate", "Paired, interleaved timing of a candidate against the retained one or another");
  cmd->add_option("candidate", o->candidate, "candidate folder (folder@NAME=value) or builtin:NAME")
      ->required();
  cmd->add_option("--against", o->against,
                  "retained (the definition's retained candidate) or a candidate folder")
      ->capture_default_str();
  cmd->add_option("--definition,-d", o->definition, "the definition (required for builtins)");
  cmd->add_option("--workloads", o->workloads,
                  "representative, all, or a workloads JSONL file")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the gate as JSON");
  add_gate_cli_options(cmd, o->g);
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
