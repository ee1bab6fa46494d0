// `kh tune CAND [--param NAME=value]... [--values NAME=a,b]... [--max-configs N] --timing T`: the
// built-in tuner. Every configuration of the candidate's [params] (the grid of ctl/param_search.h;
// --param pins a param, --values narrows one) is swept interleaved on the definition's workloads
// (or --workloads FILE) under one timer, in one sweep of the store, and ranked by mean latency
// over the workloads, counting only configurations correct and timed on all of them. The winner
// is not promoted here. With --gate, a winner other than the defaults is re-measured against them
// in a paired, interleaved kh gate (fresh samples; --gate-options adds gate flags), and its
// verdict is printed with the ranking; the kh promote command that would adopt it is printed in
// any case. Exit 0 when some configuration passed everywhere, 3 otherwise.
#include <unistd.h>

#include <chrono>
#include <sstream>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/process.h"
#include "kh/ctl/param_search.h"
#include "kh/run/memory_backend.h"
#include "kh/run/sweep.h"
#include "kh/spec/dataset.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {
namespace {

constexpr int kExitNoConfiguration = 3;
constexpr int kDefaultMaxConfigs = 64;
constexpr auto kGateTimeout = std::chrono::hours(24);  // rounds x pairs x workloads: minutes

struct Options {
  std::string candidate, definition, workloads_file;
  std::vector<std::string> values;
  std::string gate_options;
  int max_configs = kDefaultMaxConfigs;
  bool json = false, gate = false;
  StoreOptions store;
  EvalCliOptions e;
};

// kh gate of `winner` against `first` (both CAND@params), run by this kh: its JSON. Its progress
// goes to tune-gate.log in the logs folder.
Json gate_winner(const Options& o, const std::string& winner, const std::string& first) {
  std::vector<std::string> argv = {self_executable(),
                                   "gate",
                                   o.candidate + "@" + winner,
                                   "--against",
                                   o.candidate + "@" + first,
                                   "--workloads",
                                   o.workloads_file.empty() ? "all" : o.workloads_file,
                                   "--backend",
                                   o.e.eval.backend,
                                   "--timing",
                                   o.e.timing,
                                   "--root",
                                   o.e.eval.root.string(),
                                   "--cache",
                                   o.e.cache,
                                   "--logs",
                                   o.e.eval.log_dir.string(),
                                   "--store",
                                   o.store.dir,
                                   "--json"};
  std::istringstream words(o.gate_options);
  for (std::string w; words >> w;) argv.push_back(w);
  std::filesystem::create_directories(o.e.eval.log_dir);
  const auto log = o.e.eval.log_dir / "tune-gate.log";
  const ProcessResult r = run_process(argv, kGateTimeout, ProcessOptions{{}, {}, log, {}});
  if (r.output.empty())
    fail("kh tune --gate: kh gate exited with status {} and no result (see {})", r.exit_code,
         log.string());
  return parse_json(r.output, "kh gate's output");
}

void run(Options& o) {
  if (o.candidate.find('@') != std::string::npos || o.candidate.rfind("builtin:", 0) == 0)
    fail("kh tune {}: give a candidate folder (its [params] are the search space)", o.candidate);
  if (o.e.timing.empty())
    fail(
        "kh tune: give --timing (cupti on a GPU, wall on the cpu backend): configurations are "
        "ranked by latency");
  const Candidate base = load_candidate(o.candidate);
  if (base.params.empty()) fail("kh tune {}: the candidate declares no [params]", o.candidate);
  const std::vector<ParamValues> grid = ctl::param_grid(base, o.e.params, o.values);
  if (static_cast<int>(grid.size()) > o.max_configs)
    fail(
        "kh tune {}: {} configurations exceed --max-configs {}; pin params with --param "
        "NAME=value or narrow them with --values NAME=a,b",
        o.candidate, grid.size(), o.max_configs);

  auto store = open_store(o.store);
  const Dataset ds = Dataset::open(o.e.eval.root);
  SweepRequest request;
  for (const ParamValues& params : grid) {
    const ResolvedCandidate c = resolve_candidate_arg(o.candidate + "@" + ctl::param_suffix(params),
                                                      {}, o.definition, o.e.cache);
    check_backend_fits(c, o.e.eval.backend);
    SweepCandidate sc;
    sc.label = ctl::param_suffix(params);
    sc.record = candidate_record(*store, c);
    sc.build = c.build;
    sc.entry = c.candidate.entry.symbol;
    request.candidates.push_back(std::move(sc));
  }
  request.definition = ds.definition(base.definition);
  request.workloads = select_workloads(ds, request.definition, o.workloads_file);
  request.ceilings = resolve_eval_cli_options(o.e, request.definition);
  request.eval = o.e.eval;
  if (request.eval.backend == "cuda") {
    if (visible_cuda_devices() == 0)
      fail("--backend cuda: no CUDA device is visible (no GPU or no driver)");
    request.devices = {o.e.eval.device};  // one device: every configuration on the same GPU
  }
  if (!o.json)
    std::cerr << fmt::format("kh tune: {} configurations of {} on {} workloads\n", grid.size(),
                             base.name, request.workloads.size());
  const SweepOutcome out = run_sweep(*store, request);

  std::vector<ctl::ConfigResults> results;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    ctl::ConfigResults r;
    r.params = grid[i];
    for (const Workload& w : request.workloads) r.latency[w.uuid] = std::nullopt;
    for (const auto& e : latest_per_workload(*store, request.candidates[i].record, out.sweep.id))
      if (e.status == "PASSED" && e.summary) r.latency[e.workload] = e.summary->latency;
    results.push_back(std::move(r));
  }
  const std::vector<ctl::RankedConfig> ranked = ctl::rank_configs(results);
  const bool found = !ranked.empty() && ranked[0].complete;
  const std::string winner = found ? ctl::param_suffix(ranked[0].params) : "";
  const bool default_wins = found && ranked[0].params == grid[0];
  std::optional<Json> gate;
  if (o.gate && found && !default_wins)
    gate = gate_winner(o, winner, ctl::param_suffix(grid[0]));
  const std::string verdict =
      gate ? fmt::format("{} {:+.1f} % [{:+.1f}, {:+.1f}]",
                         (*gate)["overall"]["verdict"].get<std::string>(),
                         100 * ((*gate)["overall"]["objective"]["estimate"].get<double>() - 1),
                         100 * ((*gate)["overall"]["objective"]["lo"].get<double>() - 1),
                         100 * ((*gate)["overall"]["objective"]["hi"].get<double>() - 1))
           : "";

  if (o.json) {
    Json rows = Json::array();
    for (const auto& r : ranked)
      rows.push_back({{"params", r.params},
                      {"complete", r.complete},
                      {"mean_seconds", r.mean_seconds ? Json(*r.mean_seconds) : Json(nullptr)},
                      {"speedup_over_first", r.speedup ? Json(*r.speedup) : Json(nullptr)},
                      {"workloads_without_timed_pass", r.failed}});
    std::cout << Json{{"candidate", base.name},
                      {"definition", request.definition.name},
                      {"sweep", out.sweep.id},
                      {"timing", o.e.timing},
                      {"configurations", rows},
                      {"winner", found ? Json(ranked[0].params) : Json(nullptr)},
                      {"winner_is_first", default_wins},
                      {"gate", gate ? *gate : Json(nullptr)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{:>4}  {:<48} {:>12} {:>9}  {}\n", "rank", "configuration", "mean us",
                             "speedup", "note");
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto& r = ranked[i];
      std::cout << fmt::format(
          "{:>4}  {:<48} {:>12} {:>9}  {}\n", i + 1, ctl::param_suffix(r.params),
          r.mean_seconds ? fmt::format("{:.3f}", *r.mean_seconds * 1e6) : "-",
          r.speedup ? fmt::format("{:.3f}x", *r.speedup) : "-",
          r.complete ? (r.params == grid[0] ? "first (defaults)" : "")
                     : fmt::format("{} workload(s) without a timed pass", r.failed));
    }
    if (!found)
      std::cout << "no configuration passed and was timed on every workload\n";
    else if (default_wins)
      std::cout << "the first configuration (the defaults) is the fastest\n";
    else if (gate)
      std::cout << fmt::format(
          "fastest: {}; gated against the first configuration (fresh samples, paired): {}\n"
          "  to adopt it: kh promote {}@{} --backend {} --timing {}\n",
          winner, verdict, o.candidate, winner, o.e.eval.backend, o.e.timing);
    else
      std::cout << fmt::format(
          "fastest: {}; gate it before adopting it (fresh samples, paired):\n  kh promote "
          "{}@{} --backend {} --timing {}\n",
          winner, o.candidate, winner, o.e.eval.backend, o.e.timing);
  }
  if (!found) set_exit_code(kExitNoConfiguration);
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "tune", "Search a candidate's [params]: every configuration swept and ranked by latency");
  cmd->add_option("candidate", o->candidate, "candidate folder")->required();
  cmd->add_option("--definition,-d", o->definition, "the definition (default: the candidate's)");
  add_eval_cli_options(cmd, o->e);
  cmd->add_option("--values", o->values,
                  "NAME=a,b,...: search only these allowed values of a param (repeatable)");
  cmd->add_option("--max-configs", o->max_configs, "refuse larger grids")->capture_default_str();
  cmd->add_option("--workloads", o->workloads_file,
                  "workloads JSONL file (default: the dataset's)");
  cmd->add_flag("--gate", o->gate,
                "re-measure a winner other than the defaults against them in a paired kh gate");
  cmd->add_option("--gate-options", o->gate_options,
                  "more kh gate flags for --gate, one string (\"--rounds 4 --pairs 8\")");
  cmd->add_flag("--json", o->json, "print the ranking as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
