// `kh show CAND [--sweep ID|all] [--json]`: one candidate's results from the store — a table of
// its newest result per workload (of its newest sweep by default), the distribution summary, and
// the regime breakdown with each regime's share of its latency.
#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string candidate;
  std::string sweep;
  std::string root = ".";
  bool json = false;
  StoreOptions store;
};

std::string optional_text(const std::optional<double>& v, double scale, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v * scale) : "-";
}

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

void run(const Options& o) {
  auto store = open_store(o.store);
  const CandidateRecord c = resolve_candidate(*store, o.candidate);
  const std::string sweep = o.sweep.empty() ? newest_sweep_of(*store, c) : o.sweep;
  auto evaluations = latest_per_workload(*store, c, sweep);
  const CandidateResults results = candidate_results(*store, c, evaluations);
  const DistributionSummary summary = summarize_distribution(results);

  // Workloads in dataset order when the dataset has the definition, else as stored.
  std::vector<Workload> workloads;
  std::optional<RegimePartition> regimes;
  const Dataset ds = Dataset::open(o.root);
  if (ds.definitions().count(c.definition)) {
    workloads = ds.workloads(c.definition);
    regimes = partition_regimes(ds.definition(c.definition), workloads);
  }
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < workloads.size(); ++i) index[workloads[i].uuid] = i;
  // Dataset order; workloads the dataset does not have (another --workloads file) last.
  std::stable_sort(evaluations.begin(), evaluations.end(), [&](const auto& x, const auto& y) {
    const std::size_t ix = index.count(x.workload) ? index[x.workload] : workloads.size();
    const std::size_t iy = index.count(y.workload) ? index[y.workload] : workloads.size();
    return ix < iy;
  });
  std::map<std::string, double> latency;
  for (const auto& w : results.workloads)
    if (w.timed()) latency[w.workload] = *w.latency;

  if (o.json) {
    Json rows = Json::array();
    for (const auto& e : evaluations) {
      const WorkloadResult* w = results.find(e.workload);
      rows.push_back({{"workload", e.workload},
                      {"index", index.count(e.workload) ? Json(index[e.workload]) : Json(nullptr)},
                      {"status", e.status},
                      {"latency_seconds", optional_json(w->latency)},
                      {"floor_seconds", optional_json(e.floor_seconds)},
                      {"fraction_of_floor", optional_json(e.fraction_of_floor)},
                      {"timing_method", e.timing_method},
                      {"flaky", w->flaky},
                      {"attempt", e.attempt},
                      {"message", e.message},
                      {"evaluation", e.id}});
    }
    Json regime_rows = Json::array();
    if (regimes)
      for (const auto& s : latency_shares(*regimes, latency))
        regime_rows.push_back({{"regime", regimes->regimes[s.regime].label},
                               {"workloads", s.workloads},
                               {"measured", s.measured},
                               {"latency_seconds", s.latency_sum},
                               {"share", s.share}});
    std::cout << Json{{"candidate", c.name},
                      {"hash", c.hash},
                      {"definition", c.definition},
                      {"sweep", sweep},
                      {"summary",
                       {{"workloads", summary.workloads},
                        {"passed", summary.passed},
                        {"failed", summary.failed},
                        {"timed", summary.timed},
                        {"flaky", summary.flaky},
                        {"latency_sum_seconds", summary.latency_sum},
                        {"geomean_latency_seconds", optional_json(summary.geomean_latency)},
                        {"median_latency_seconds", optional_json(summary.median_latency)},
                        {"median_fraction_of_floor",
                         optional_json(summary.median_fraction_of_floor)}}},
                      {"regimes", regime_rows},
                      {"results", rows}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << fmt::format("{} ({}) on {}{}\n", c.name, c.hash.substr(0, 12), c.definition,
                           sweep.empty() ? "" : ", sweep " + sweep.substr(0, 12));
  std::cout << fmt::format("{:>4}  {:<10} {:<20} {:>12} {:>8}  {}\n", "#", "workload", "status",
                           "latency us", "of floor", "note");
  for (const auto& e : evaluations) {
    const WorkloadResult* w = results.find(e.workload);
    std::string note = w->flaky ? "flaky (passed on retry)" : "";
    if (!w->passed()) note = e.message.substr(0, 100);
    std::cout << fmt::format("{:>4}  {:<10} {:<20} {:>12} {:>8}  {}\n",
                             index.count(e.workload) ? std::to_string(index[e.workload]) : "-",
                             e.workload.substr(0, 8), e.status,
                             optional_text(w->latency, 1e6, "{:.2f}"),
                             optional_text(e.fraction_of_floor, 100, "{:.1f}%"), note);
  }
  std::cout << fmt::format(
      "{} workloads: {} passed, {} failed, {} flaky; timed {}: geomean {} us, median {} us, "
      "median {} of floor\n",
      summary.workloads, summary.passed, summary.failed, summary.flaky, summary.timed,
      optional_text(summary.geomean_latency, 1e6, "{:.2f}"),
      optional_text(summary.median_latency, 1e6, "{:.2f}"),
      optional_text(summary.median_fraction_of_floor, 100, "{:.1f}%"));
  if (regimes) {
    std::cout << "regimes:\n";
    for (const auto& s : latency_shares(*regimes, latency))
      std::cout << fmt::format("  {:<44} {:>4} workloads {:>4} timed {:>6.1f}% of latency\n",
                               regimes->regimes[s.regime].label, s.workloads, s.measured,
                               100 * s.share);
  }
}

}  // namespace

void add_show_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("show", "One candidate's results from the store");
  cmd->add_option("candidate", o->candidate, "candidate name or hash prefix")->required();
  cmd->add_option("--sweep", o->sweep,
                  "sweep id (default: the candidate's newest; 'all': every evaluation)");
  cmd->add_option("--root,--dataset", o->root, "dataset folder (workload order, regimes)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
