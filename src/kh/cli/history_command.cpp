// `kh history [--definition D] [--json]`: the candidates in the store, newest first, each with its
// best finished sweep (most workloads passed, then the lowest geometric-mean latency).
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"

namespace kh::cli {
namespace {

struct Options {
  std::string definition;
  bool json = false;
  StoreOptions store;
};

struct BestSweep {
  std::string sweep;
  DistributionSummary summary;
};

bool better(const DistributionSummary& x, const DistributionSummary& y) {
  if (x.passed != y.passed) return x.passed > y.passed;
  if (x.geomean_latency && y.geomean_latency) return *x.geomean_latency < *y.geomean_latency;
  return x.geomean_latency.has_value();
}

std::optional<BestSweep> best_sweep(const ArtifactStore& store, const CandidateRecord& c,
                                    const std::vector<SweepRecord>& sweeps) {
  std::optional<BestSweep> best;
  for (const auto& s : sweeps) {
    if (s.finished_at.empty()) continue;
    if (std::find(s.candidates.begin(), s.candidates.end(), c.hash) == s.candidates.end()) continue;
    const auto results = candidate_results(store, c, latest_per_workload(store, c, s.id));
    const DistributionSummary summary = summarize_distribution(results);
    if (!best || better(summary, best->summary)) best = BestSweep{s.id, summary};
  }
  return best;
}

void run(const Options& o) {
  auto store = open_store(o.store);
  const auto candidates = store->candidates(o.definition);
  const auto sweeps = store->sweeps(o.definition);
  Json rows = Json::array();
  if (!o.json)
    std::cout << fmt::format("{:<12}  {:<32} {:<24} {:<12} {:>9} {:>14} {:>9}\n", "hash", "name",
                             "created", "best sweep", "passed", "geomean us", "of floor");
  for (const auto& c : candidates) {
    const auto best = best_sweep(*store, c, sweeps);
    if (o.json) {
      Json row = {{"hash", c.hash},
                  {"name", c.name},
                  {"definition", c.definition},
                  {"created_at", c.created_at},
                  {"parent", c.parent},
                  {"params", c.params},
                  {"best_sweep", nullptr}};
      if (best) {
        const auto& s = best->summary;
        row["best_sweep"] = {
            {"sweep", best->sweep},
            {"workloads", s.workloads},
            {"passed", s.passed},
            {"flaky", s.flaky},
            {"geomean_latency_seconds", s.geomean_latency ? Json(*s.geomean_latency) : Json()},
            {"median_fraction_of_floor",
             s.median_fraction_of_floor ? Json(*s.median_fraction_of_floor) : Json()}};
      }
      rows.push_back(row);
      continue;
    }
    std::string passed = "-", geomean = "-", floor = "-", sweep = "-";
    if (best) {
      const auto& s = best->summary;
      sweep = best->sweep.substr(0, 12);
      passed = fmt::format("{}/{}", s.passed, s.workloads);
      if (s.geomean_latency) geomean = fmt::format("{:.2f}", *s.geomean_latency * 1e6);
      if (s.median_fraction_of_floor)
        floor = fmt::format("{:.1f}%", *s.median_fraction_of_floor * 100);
    }
    std::cout << fmt::format("{:<12}  {:<32} {:<24} {:<12} {:>9} {:>14} {:>9}\n",
                             c.hash.substr(0, 12), c.name.substr(0, 32), c.created_at, sweep,
                             passed, geomean, floor);
  }
  if (o.json) std::cout << rows.dump(2) << "\n";
}

}  // namespace

void add_history_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("history", "Candidates in the store with their best sweep");
  cmd->add_option("--definition,-d", o->definition, "only this definition's candidates");
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
