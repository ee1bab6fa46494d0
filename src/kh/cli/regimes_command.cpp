// `kh regimes D [--candidate C] [--json]`: the regimes of a definition's workloads (spec/regimes.h)
// with their workload counts and, for a candidate with results in the store, each regime's share
// of its latency.
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string definition, candidate, root = ".";
  bool json = false;
  StoreOptions store;
};

void run(const Options& o) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  const auto workloads = ds.workloads(def.name);
  const RegimePartition p = partition_regimes(def, workloads);
  std::map<std::string, double> latency;
  std::string candidate;
  if (!o.candidate.empty()) {
    auto store = open_store(o.store);
    const CandidateRecord c = resolve_candidate(*store, o.candidate);
    candidate = c.name;
    for (const auto& w : candidate_results(*store, c, latest_per_workload(*store, c)).workloads)
      if (w.timed()) latency[w.workload] = *w.latency;
  }
  const auto shares = latency_shares(p, latency);
  if (o.json) {
    Json rows = Json::array();
    for (const auto& s : shares) {
      const Regime& r = p.regimes[s.regime];
      Json bands = Json::array();
      for (const auto& b : r.bands) bands.push_back({{"axis", b.axis}, {"lo", b.lo}, {"hi", b.hi}});
      Json row = {{"label", r.label}, {"bands", bands}, {"workloads", r.workloads}};
      if (!candidate.empty()) {
        row["measured"] = s.measured;
        row["latency_seconds"] = s.latency_sum;
        row["share"] = s.share;
      }
      rows.push_back(row);
    }
    std::cout << Json{{"definition", def.name},
                      {"axes", p.axes},
                      {"band_base", kRegimeBandBase},
                      {"candidate", candidate},
                      {"regimes", rows}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << fmt::format(
      "{}: {} workloads in {} regimes over {} (bands x{})\n", def.name, workloads.size(),
      p.regimes.size(),
      p.axes.empty() ? std::string("no varying axis") : fmt::format("{}", fmt::join(p.axes, ", ")),
      kRegimeBandBase);
  for (const auto& s : shares)
    std::cout << fmt::format("  {:<48} {:>4} workloads{}\n", p.regimes[s.regime].label, s.workloads,
                             candidate.empty()
                                 ? ""
                                 : fmt::format("  {:>4} timed  {:>6.1f}% of {}'s latency",
                                               s.measured, 100 * s.share, candidate));
}

}  // namespace

void add_regimes_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("regimes", "A definition's workloads in regimes of its axes");
  cmd->add_option("definition", o->definition, "definition name")->required();
  cmd->add_option("--candidate", o->candidate, "show this candidate's latency share per regime");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
