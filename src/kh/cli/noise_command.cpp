// `kh noise CAND`: the noise floor of this GPU and timer for a definition: the candidate gated
// against itself (A/A: the library loaded in both slots of one worker, interleaved as a real
// gate).
// Per-workload and distribution-level spreads are stored; later gates on this definition, GPU
// and timer take their minimum effect from the newest floor.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/gate_options.h"
#include "kh/cli/gate_progress.h"
#include "kh/cli/gate_records.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/gate/noise_floor.h"

namespace kh::cli {
namespace {

struct Options {
  std::string candidate;
  std::string definition;
  std::string workloads = "all";
  bool json = false;
  StoreOptions store;
  GateCliOptions g;
};

void run(Options& o) {
  auto store = open_store(o.store);
  const ResolvedCandidate c =
      resolve_candidate_arg(o.candidate, o.g.e.params, o.definition, o.g.e.cache);
  check_backend_fits(c, o.g.e.eval.backend);
  const CandidateRecord record = candidate_record(*store, c);
  const Dataset ds = Dataset::open(o.g.e.eval.root);
  const Definition def = ds.definition(c.candidate.definition);
  // An A/A gate judges against no minimum effect of its own: the spread is what it measures.
  const bool own_min_effect = o.g.min_effect < 0;
  if (own_min_effect) o.g.min_effect = kMinimumEffectFloor;
  GateSetup setup = resolve_gate_setup(o.g, def, *store);
  if (own_min_effect) setup.min_effect_source = "A/A: the smallest minimum effect (kMinimumEffectFloor)";
  setup.run.same_candidate = true;
  const std::vector<Workload> workloads = drawable_workloads(
      def, o.g.e.eval.variant,
      gate_workloads(o.workloads, ds, def,
                     o.workloads == "representative"
                         ? dataset_representatives(ds, def, *store, record, setup.method)
                         : RepresentativeSet{}),
      "kh noise");
  std::cerr << fmt::format("kh noise: {} against itself on {} workloads of {}, {} timer on {}, "
                             "{} rounds x {} pairs, order seed {}\n",
                             c.candidate.name, workloads.size(), def.name, setup.method, setup.gpu,
                             setup.run.rounds, setup.run.pairs_per_round, setup.run.order_seed);
  ProgressLine progress(isatty(STDERR_FILENO), o.json && isatty(STDERR_FILENO));
  const GateSide side = gate_side(c);
  const PairedRun run = run_paired(def, workloads, side, side, setup.run,
                                   [&](const PairedRunProgress& p) {
                                     progress.show(p.phase, fmt::format("{} {}/{}", p.phase, p.done, p.total));
                                   });
  progress.clear();
  const PairedGateResult aa = judge_run(run, {}, setup.objective, setup.statistics);
  const GateRecord gate = store_gate(*store, def, record.hash, record.hash, "aa", setup, run, aa);
  if (!aa.both_correct) {
    std::cout << gate_text(aa, run);
    fail("kh noise: {} is not correct on every workload; a noise floor needs a correct candidate",
         c.candidate.name);
  }
  const NoiseFloor floor = noise_floor_from(aa);
  NoiseFloorRecord nf;
  nf.definition = def.name;
  nf.candidate = record.hash;
  nf.gpu = setup.gpu;
  nf.timing_method = setup.method;
  nf.environment = gate.environment;
  nf.minimum_effect = floor.minimum_effect();
  nf.distribution_spread = floor.distribution_spread;
  nf.median_workload_spread = floor.median_workload_spread;
  nf.max_workload_spread = floor.max_workload_spread;
  nf.workload_spread = floor.workload_spread;
  nf.options = {{"gate", gate.id}, {"rounds", setup.run.rounds},
                {"pairs_per_round", setup.run.pairs_per_round}, {"order_seed", setup.run.order_seed}};
  nf.created_at = utc_timestamp();
  nf.id = store->put_noise_floor(nf);
  if (o.json) {
    std::cout << Json{{"id", nf.id},
                      {"gate", gate.id},
                      {"definition", def.name},
                      {"candidate", record.hash},
                      {"gpu", nf.gpu},
                      {"timing_method", nf.timing_method},
                      {"minimum_effect", nf.minimum_effect},
                      {"distribution_spread", nf.distribution_spread},
                      {"median_workload_spread", nf.median_workload_spread},
                      {"max_workload_spread", nf.max_workload_spread},
                      {"workload_spread", nf.workload_spread},
                      {"aa", gate_report_json(gate, run)}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << fmt::format(
      "noise floor {} of {} on {} ({} timer), from A/A gate {}:\n"
      "  distribution: +-{:.2f} %   per workload: median +-{:.2f} %, max +-{:.2f} %\n"
      "  A/A overall {}; {} workloads called win or loss (expected: none)\n"
      "  minimum effect for later gates: {:.2f} %\n",
      nf.id.substr(0, 12), def.name, nf.gpu, nf.timing_method, gate.id.substr(0, 12),
      100 * nf.distribution_spread, 100 * nf.median_workload_spread, 100 * nf.max_workload_spread,
      verdict_name(aa.overall.verdict),
      std::count_if(aa.workloads.begin(), aa.workloads.end(),
                    [](const WorkloadGate& w) { return w.verdict != Verdict::kTie; }),
      100 * nf.minimum_effect);
}

}  // namespace

void add_noise_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "noise", "Measure the noise floor: a candidate gated against itself (A/A), stored per GPU");
  cmd->add_option("candidate", o->candidate, "candidate folder (folder@NAME=value) or builtin:NAME")
      ->required();
  cmd->add_option("definition", o->definition, "the definition (required for builtins)");
  cmd->add_option("--workloads", o->workloads, "all, representative, or a workloads JSONL file")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the floor as JSON");
  add_gate_cli_options(cmd, o->g);
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
