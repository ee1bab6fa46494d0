// `kh compare A B [--sweep ID] [--json]`: per-workload latency ratios of B against A (a / b: above
// 1 means B is faster) and the breakdown per regime, from each candidate's newest results (of
// one sweep with --sweep, which is how an interleaved sweep's pair is compared).
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string a, b, sweep, root = ".";
  bool json = false;
  StoreOptions store;
};

std::string ratio_text(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}x", *v) : "-";
}

void run(const Options& o) {
  auto store = open_store(o.store);
  const CandidateRecord a = resolve_candidate(*store, o.a);
  const CandidateRecord b = resolve_candidate(*store, o.b);
  if (a.definition != b.definition)
    fail("{} is for {} and {} for {}: only candidates of one definition compare", a.name,
         a.definition, b.name, b.definition);
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(a.definition);
  const auto workloads = ds.workloads(def.name);
  const RegimePartition partition = partition_regimes(def, workloads);
  const auto ra = candidate_results(*store, a, latest_per_workload(*store, a, o.sweep));
  const auto rb = candidate_results(*store, b, latest_per_workload(*store, b, o.sweep));
  const Comparison c = compare_candidates(partition, workloads, ra, rb);
  if (o.json) {
    std::cout << comparison_json(c, partition).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} ({}) vs {} ({}) on {}: speedup = latency A / latency B\n", a.name,
                           a.hash.substr(0, 12), b.name, b.hash.substr(0, 12), def.name);
  std::cout << fmt::format("{:>4}  {:<10} {:>12} {:>12} {:>9}  {}\n", "#", "workload", "A us",
                           "B us", "speedup", "regime");
  for (std::size_t i = 0; i < c.workloads.size(); ++i) {
    const auto& w = c.workloads[i];
    auto us = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.2f}", *v * 1e6) : std::string("-");
    };
    std::cout << fmt::format("{:>4}  {:<10} {:>12} {:>12} {:>9}  {}\n", i, w.workload.substr(0, 8),
                             us(w.a), us(w.b), ratio_text(w.speedup),
                             w.regime ? partition.regimes[*w.regime].label : "-");
  }
  std::cout << "regimes:\n";
  for (const auto& r : c.regimes)
    std::cout << fmt::format("  {:<44} {:>4} compared  geomean {:>8}  min {:>8}  max {:>8}\n",
                             partition.regimes[r.regime].label, r.compared,
                             ratio_text(r.geomean_speedup), ratio_text(r.min_speedup),
                             ratio_text(r.max_speedup));
  std::cout << fmt::format("{} compared: geomean speedup {}; {} passed only by {}, {} only by {}\n",
                           c.compared, ratio_text(c.geomean_speedup), c.a_only_passed, a.name,
                           c.b_only_passed, b.name);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("compare", "Per-workload and per-regime speedup of B over A");
  cmd->add_option("a", o->a, "candidate A (name or hash prefix)")->required();
  cmd->add_option("b", o->b, "candidate B (name or hash prefix)")->required();
  cmd->add_option("--sweep", o->sweep, "compare the results of this sweep");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
