// `kh report D [--candidates A B ...] [--out DIR]`: a Markdown report (report/markdown_report.h)
// of candidates on a definition's workloads, from the store: by default the candidates of the
// definition's newest sweep, each with that sweep's results; the first is the baseline.
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/report/markdown_report.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string definition, sweep, out, root = ".";
  std::vector<std::string> candidates;
  bool json = false;
  StoreOptions store;
};

void run(const Options& o) {
  auto store = open_store(o.store);
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  std::string sweep = o.sweep;
  std::vector<CandidateRecord> chosen;
  if (o.candidates.empty()) {
    const auto sweeps = store->sweeps(def.name);
    if (sweeps.empty())
      fail("definition {} has no sweep in {}; run kh sweep or name --candidates", def.name,
           store->location().database().string());
    const SweepRecord& s = sweep.empty() ? sweeps.front() : *store->sweep(sweep);
    sweep = s.id;
    for (const auto& h : s.candidates) chosen.push_back(*store->candidate(h));
  } else {
    for (const auto& name : o.candidates) chosen.push_back(resolve_candidate(*store, name));
  }
  ReportInput in;
  in.definition = def.name;
  in.workloads = ds.workloads(def.name);
  in.partition = partition_regimes(def, in.workloads);
  for (const auto& c : chosen) {
    if (c.definition != def.name)
      fail("candidate {} is for {}, not {}", c.name, c.definition, def.name);
    const auto evaluations = latest_per_workload(*store, c, sweep);
    for (const auto& e : evaluations)
      if (e.floor_seconds) in.floor_seconds[e.workload] = *e.floor_seconds;
    in.candidates.push_back(candidate_results(*store, c, evaluations));
  }
  const std::filesystem::path dir = o.out.empty()
                                        ? std::filesystem::path(o.store.dir) / "reports" / def.name
                                        : std::filesystem::path(o.out);
  write_report(in, dir);
  if (o.json)
    std::cout << Json{{"report", (dir / "report.md").string()}, {"sweep", sweep}}.dump(2) << "\n";
  else
    std::cout << (dir / "report.md").string() << "\n";
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("report", "Markdown report with plots of candidates on a definition");
  cmd->add_option("definition", o->definition, "definition name")->required();
  cmd->add_option("--candidates", o->candidates,
                  "candidates (name or hash prefix; the first is the baseline); default: those of "
                  "the newest sweep");
  cmd->add_option("--sweep", o->sweep, "results of this sweep");
  cmd->add_option("--out,-o", o->out, "output folder (default: <store>/reports/<definition>)");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_flag("--json", o->json, "print the report path as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
