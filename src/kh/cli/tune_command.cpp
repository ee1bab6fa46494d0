// `kh tune CAND [--param NAME=value]... [--values NAME=a,b]... [--max-configs N] --timing T`: the
// built-in tuner. Every configuration of the candidate's [params] (the grid of ctl/param_search.h;
// --param pins a param, --values narrows one) is swept interleaved on the definition's workloads
// (or --workloads FILE) under one timer, in one sweep of the store, and ranked by mean latency
// over the workloads, counting only configurations correct and timed on all of them. A space
// larger than --max-configs is searched by evolution instead (--search evolve, the default for
// them under --search auto; tune_evolution.h): generations of bred configurations, each swept
// with the incumbent. The winner is not promoted here: a winner other than the defaults is
// re-measured against them in a paired, interleaved kh gate (fresh samples; --gate-options adds
// gate flags; --no-gate skips it), and its verdict is printed with the ranking; the kh promote
// command that would adopt it is printed in any case. Exit 0 when some configuration passed everywhere, 3 otherwise.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/cli/store_access.h"
#include "kh/cli/tune_evolution.h"
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
constexpr int kDefaultGenerations = 4;
constexpr int kDefaultPopulation = 8;
constexpr auto kGateTimeout = std::chrono::hours(24);  // rounds x pairs x workloads: minutes

struct Options {
  std::string candidate, definition, workloads_file;
  std::vector<std::string> values;
  std::string gate_options;
  std::string search = "auto";  // auto | grid | evolve
  int max_configs = kDefaultMaxConfigs;
  int generations = kDefaultGenerations, population = kDefaultPopulation;
  std::uint64_t search_seed = 1;
  bool json = false, gate = true;  // every winner other than the defaults is gated (--no-gate)
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

// The configurations of `base` (same name, manifest and sources) the store has measured under
// `timing` on every one of `workloads`, inside `space`, with their mean latency, fastest first:
// the evolutionary search's initial population. Their means come from earlier sweeps, so they
// only order the first parents; the best of them is re-measured in the first generation.
std::vector<std::pair<ParamValues, double>> stored_configs(const ArtifactStore& store,
                                                           const Candidate& base,
                                                           const CandidateRecord& reference,
                                                           const ctl::ParamChoices& space,
                                                           const std::vector<Workload>& workloads,
                                                           const std::string& timing) {
  std::vector<std::pair<ParamValues, double>> out;
  for (const CandidateRecord& r : store.candidates(base.definition)) {
    if (r.name != base.name || r.manifest_blob != reference.manifest_blob ||
        r.sources != reference.sources || r.params.size() != space.size())
      continue;
    bool inside = true;
    for (const auto& [name, value] : r.params) {
      const auto it = space.find(name);
      inside = inside && it != space.end() &&
               std::find(it->second.begin(), it->second.end(), value) != it->second.end();
    }
    if (!inside) continue;
    std::map<std::string, double> latency;
    for (const auto& e : latest_per_workload(store, r))
      if (e.status == "PASSED" && e.summary && e.timing_method == timing)
        latency[e.workload] = e.summary->latency;
    double sum = 0;
    bool complete = true;
    for (const Workload& w : workloads) {
      const auto it = latency.find(w.uuid);
      complete = complete && it != latency.end();
      if (complete) sum += it->second;
    }
    if (complete && !workloads.empty())
      out.emplace_back(r.params, sum / static_cast<double>(workloads.size()));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

// --search evolve: generations (tune_evolution.h), then the report and the optional gate of the
// winner against the defaults, as for the grid.
void run_evolutionary(const Options& o, const Candidate& base, const ctl::ParamChoices& space,
                      std::size_t space_size, const ParamValues& defaults, std::size_t workloads,
                      std::vector<std::pair<ParamValues, double>> stored,
                      const MeasureConfigs& measure) {
  EvolutionPlan plan;
  plan.space = space;
  plan.defaults = defaults;
  plan.generations = o.generations;
  plan.population = o.population;
  plan.seed = o.search_seed;
  plan.stored = std::move(stored);
  if (!o.json)
    std::cerr << fmt::format(
        "kh tune: evolutionary search of {} configurations of {} on {} workloads: {} "
        "generation(s) of {}, {} configuration(s) from the store\n",
        space_size, base.name, workloads, plan.generations, plan.population, plan.stored.size());
  const EvolutionResult result = run_evolution(plan, measure, o.json ? nullptr : &std::cerr);
  const std::string winner = ctl::param_suffix(result.winner);
  const bool default_wins = result.found && result.winner == defaults;
  std::optional<Json> gate;
  if (o.gate && result.found && !default_wins)
    gate = gate_winner(o, winner, ctl::param_suffix(defaults));
  std::vector<const ctl::Scored*> order;
  for (const auto& s : result.population) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const ctl::Scored* a, const ctl::Scored* b) {
    if (a->estimate_seconds.has_value() != b->estimate_seconds.has_value())
      return a->estimate_seconds.has_value();
    return a->estimate_seconds && *a->estimate_seconds < *b->estimate_seconds;
  });
  if (o.json) {
    Json configs = Json::array(), generations = Json::array();
    for (const auto* s : order)
      configs.push_back({{"params", s->params},
                         {"generation", s->generation},
                         {"complete", s->estimate_seconds.has_value()},
                         {"estimate_seconds",
                          s->estimate_seconds ? Json(*s->estimate_seconds) : Json(nullptr)}});
    for (const auto& g : result.generations)
      generations.push_back({{"generation", g.generation},
                             {"sweep", g.sweep},
                             {"configurations", g.configurations},
                             {"incumbent", g.incumbent},
                             {"incumbent_estimate_seconds", g.incumbent_estimate_seconds
                                                                ? Json(*g.incumbent_estimate_seconds)
                                                                : Json(nullptr)}});
    std::cout << Json{{"candidate", base.name},
                      {"definition", base.definition},
                      {"search", "evolve"},
                      {"space", space_size},
                      {"stored_configurations", plan.stored.size()},
                      {"timing", o.e.timing},
                      {"generations", generations},
                      {"configurations", configs},
                      {"winner", result.found ? Json(result.winner) : Json(nullptr)},
                      {"winner_is_first", default_wins},
                      {"gate", gate ? *gate : Json(nullptr)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{:>4}  {:<48} {:>4} {:>12}\n", "rank", "configuration", "gen",
                             "estimate us");
    for (std::size_t i = 0; i < order.size(); ++i)
      std::cout << fmt::format("{:>4}  {:<48} {:>4} {:>12}\n", i + 1,
                               ctl::param_suffix(order[i]->params), order[i]->generation,
                               order[i]->estimate_seconds
                                   ? fmt::format("{:.3f}", *order[i]->estimate_seconds * 1e6)
                                   : "not timed");
    if (!result.found)
      std::cout << "no configuration passed and was timed on every workload\n";
    else if (default_wins)
      std::cout << "the defaults stayed the incumbent: no bred configuration beat them\n";
    else
      std::cout << fmt::format(
          "fastest: {} (beat the incumbent in the same sweep){}\n  to adopt it: kh promote "
          "{}@{} --backend {} --timing {}\n",
          winner,
          gate ? fmt::format("; gated against the defaults (fresh samples, paired): {} {:+.1f} %",
                             (*gate)["overall"]["verdict"].get<std::string>(),
                             100 * ((*gate)["overall"]["objective"]["estimate"].get<double>() - 1))
               : "; gate it before adopting it",
          o.candidate, winner, o.e.eval.backend, o.e.timing);
  }
  if (!result.found) set_exit_code(kExitNoConfiguration);
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
  const ctl::ParamChoices space = ctl::param_choices(base, o.e.params, o.values);
  const std::size_t space_size = ctl::grid_size(space);
  if (o.search != "auto" && o.search != "grid" && o.search != "evolve")
    fail("kh tune --search {}: expected auto, grid or evolve", o.search);
  const bool evolve =
      o.search == "evolve" || (o.search == "auto" && space_size > static_cast<std::size_t>(o.max_configs));
  if (!evolve && space_size > static_cast<std::size_t>(o.max_configs))
    fail(
        "kh tune {}: {} configurations exceed --max-configs {}; pin params with --param "
        "NAME=value, narrow them with --values NAME=a,b, or search them with --search evolve",
        o.candidate, space_size, o.max_configs);
  if (evolve && (o.generations < 1 || o.population < 1))
    fail("kh tune: --generations and --population must be at least 1");
  const std::vector<ParamValues> grid = evolve ? std::vector<ParamValues>{}
                                               : ctl::param_grid(base, o.e.params, o.values);
  ParamValues defaults;
  for (const auto& [name, values] : space) defaults[name] = values.front();

  auto store = open_store(o.store);
  const Dataset ds = Dataset::open(o.e.eval.root);
  const Definition definition = ds.definition(base.definition);
  const std::vector<Workload> workloads = drawable_workloads(
      definition, o.e.eval.variant, select_workloads(ds, definition, o.workloads_file), "kh tune");
  const auto ceilings = resolve_eval_cli_options(o.e, definition);
  if (o.e.eval.backend == "cuda" && visible_cuda_devices() == 0)
    fail("--backend cuda: no CUDA device is visible (no GPU or no driver)");
  auto resolved = [&](const ParamValues& params) {
    return resolve_candidate_arg(o.candidate + "@" + ctl::param_suffix(params), {}, o.definition,
                                 o.e.cache);
  };
  // One interleaved sweep of `configs` on one device, ranked: what both searches are made of.
  auto measure = [&](const std::vector<ParamValues>& configs, std::string& sweep_id) {
    SweepRequest request;
    for (const ParamValues& params : configs) {
      const ResolvedCandidate c = resolved(params);
      check_backend_fits(c, o.e.eval.backend);
      SweepCandidate sc;
      sc.label = ctl::param_suffix(params);
      sc.record = candidate_record(*store, c);
      sc.build = c.build;
      sc.entry = c.candidate.entry.symbol;
      request.candidates.push_back(std::move(sc));
    }
    request.definition = definition;
    request.workloads = workloads;
    request.ceilings = ceilings;
    request.eval = o.e.eval;
    if (request.eval.backend == "cuda") request.devices = {o.e.eval.device};  // one GPU for all
    const SweepOutcome out = run_sweep(*store, request);
    sweep_id = out.sweep.id;
    std::vector<ctl::ConfigResults> results;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      ctl::ConfigResults r;
      r.params = configs[i];
      for (const Workload& w : workloads) r.latency[w.uuid] = std::nullopt;
      for (const auto& e : latest_per_workload(*store, request.candidates[i].record, out.sweep.id))
        if (e.status == "PASSED" && e.summary) r.latency[e.workload] = e.summary->latency;
      results.push_back(std::move(r));
    }
    return ctl::rank_configs(results);
  };
  if (evolve) {
    run_evolutionary(o, base, space, space_size, defaults, workloads.size(),
                     stored_configs(*store, base, candidate_record(*store, resolved(defaults)),
                                    space, workloads, o.e.timing),
                     measure);
    return;
  }
  if (!o.json)
    std::cerr << fmt::format("kh tune: {} configurations of {} on {} workloads\n", grid.size(),
                             base.name, workloads.size());
  std::string sweep_id;
  const std::vector<ctl::RankedConfig> ranked = measure(grid, sweep_id);
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
                      {"definition", definition.name},
                      {"search", "grid"},
                      {"sweep", sweep_id},
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
  cmd->add_option("--max-configs", o->max_configs,
                  "largest space swept whole (larger ones are searched by evolution under "
                  "--search auto)")
      ->capture_default_str();
  cmd->add_option("--search", o->search, "auto (grid up to --max-configs, else evolve), grid or evolve")
      ->capture_default_str();
  cmd->add_option("--generations", o->generations, "evolve: generations")->capture_default_str();
  cmd->add_option("--population", o->population,
                  "evolve: configurations bred per generation (and parents kept)")
      ->capture_default_str();
  cmd->add_option("--search-seed", o->search_seed, "evolve: the breeding's random seed")
      ->capture_default_str();
  cmd->add_option("--workloads", o->workloads_file,
                  "workloads JSONL file (default: the dataset's)");
  cmd->add_flag("--gate,!--no-gate", o->gate,
                "re-measure a winner other than the defaults against them in a paired kh gate "
                "(the default; --no-gate only ranks)");
  cmd->add_option("--gate-options", o->gate_options,
                  "more kh gate flags for --gate, one string (\"--rounds 4 --pairs 8\")");
  cmd->add_flag("--json", o->json, "print the ranking as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
