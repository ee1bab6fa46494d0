// `kh store export|import|traces-export|traces-import|info`: the store's memory, moved between
// machines. Bundles (store/bundle.h) carry everything and merge idempotently; traces are the
// FlashInfer-Bench JSONL of evaluations (store/trace_exchange.h).
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/store/bundle.h"
#include "kh/store/trace_exchange.h"

namespace kh::cli {
namespace {

struct Options {
  StoreOptions store;
  std::string since, out, candidate, definition, baseline, sweep;
  std::vector<std::string> sweeps, files;
  bool json = false;
};

// Runs `write` on the --out file (written whole, then renamed) or on stdout.
template <class Write>
void with_output(const std::string& path, Write write) {
  if (path.empty() || path == "-") {
    write(std::cout);
    return;
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) fail("{}: cannot write", tmp);
    write(f);
    if (!f.flush()) fail("{}: write failed", tmp);
  }
  std::filesystem::rename(tmp, path);
}

void export_bundle_command(const Options& o) {
  auto store = open_store(o.store);
  BundleExportOptions options;
  options.since = o.since;
  options.sweeps = o.sweeps;
  with_output(o.out, [&](std::ostream& out) { export_bundle(*store, options, out); });
}

void import_bundle_command(const Options& o) {
  auto store = open_store(o.store);
  Json report = Json::array();
  for (const auto& file : o.files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail("{}: cannot open", file);
    const BundleImportStats s = import_bundle(*store, in, file);
    Json tables = Json::object();
    int seen = 0;
    for (const auto& [name, t] : s.tables) {
      tables[name] = {{"seen", t.seen}, {"added", t.added}};
      seen += t.seen;
    }
    report.push_back({{"file", file},
                      {"rows_seen", seen},
                      {"rows_added", s.rows_added()},
                      {"blobs_seen", s.blobs_seen},
                      {"blobs_added", s.blobs_added},
                      {"tables", tables}});
    if (!o.json)
      std::cout << fmt::format("{}: {} rows, {} new; {} blobs, {} new\n", file, seen,
                               s.rows_added(), s.blobs_seen, s.blobs_added);
  }
  if (o.json) std::cout << report.dump(2) << "\n";
}

void export_traces_command(const Options& o) {
  auto store = open_store(o.store);
  if (o.candidate.empty()) fail("traces-export needs --candidate");
  const CandidateRecord c = resolve_candidate(*store, o.candidate);
  TraceExportOptions options;
  if (!o.baseline.empty()) {
    options.baseline = resolve_candidate(*store, o.baseline);
    options.baseline_evaluations = latest_per_workload(*store, *options.baseline, o.sweep);
  }
  const auto evaluations = latest_per_workload(*store, c, o.sweep);
  with_output(o.out, [&](std::ostream& out) { export_traces(*store, evaluations, options, out); });
}

void import_traces_command(const Options& o) {
  auto store = open_store(o.store);
  Json report = Json::array();
  for (const auto& file : o.files) {
    std::ifstream in(file);
    if (!in) fail("{}: cannot open", file);
    const TraceImportStats s = import_traces(*store, in, file);
    report.push_back({{"file", file},
                      {"lines", s.lines},
                      {"evaluations", s.evaluations},
                      {"without_evaluation", s.without_evaluation}});
    if (!o.json)
      std::cout << fmt::format("{}: {} traces, {} evaluations recorded, {} workload-only\n", file,
                               s.lines, s.evaluations, s.without_evaluation);
  }
  if (o.json) std::cout << report.dump(2) << "\n";
}

void info_command(const Options& o) {
  auto store = open_store(o.store);
  const auto candidates = store->candidates();
  const auto sweeps = store->sweeps();
  int unfinished = 0;
  for (const auto& s : sweeps) unfinished += s.finished_at.empty();
  const Json j = {{"database", store->location().database().string()},
                  {"schema_version", store->schema_version()},
                  {"candidates", candidates.size()},
                  {"sweeps", sweeps.size()},
                  {"unfinished_sweeps", unfinished}};
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} (schema {}): {} candidates, {} sweeps ({} unfinished)\n",
                           store->location().database().string(), store->schema_version(),
                           candidates.size(), sweeps.size(), unfinished);
}

}  // namespace

void add_store_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("store", "Export and import the store's memory");
  cmd->require_subcommand(1);

  auto* ex = cmd->add_subcommand("export", "Write a bundle (everything, or --since / --sweep)");
  ex->add_option("--since", o->since, "only records made at or after this ISO date/time");
  ex->add_option("--sweep", o->sweeps, "only these sweeps (repeatable)");
  ex->add_option("--out,-o", o->out, "bundle file (default: stdout)");
  add_store_option(ex, o->store);
  ex->callback([o] { export_bundle_command(*o); });

  auto* im = cmd->add_subcommand("import", "Merge bundles (importing twice changes nothing)");
  im->add_option("files", o->files, "bundle files")->required();
  im->add_flag("--json", o->json, "print as JSON");
  add_store_option(im, o->store);
  im->callback([o] { import_bundle_command(*o); });

  auto* tx =
      cmd->add_subcommand("traces-export", "A candidate's results as FlashInfer-Bench traces");
  tx->add_option("--candidate", o->candidate, "candidate name or hash prefix")->required();
  tx->add_option("--baseline", o->baseline,
                 "candidate whose latency is written as the reference latency");
  tx->add_option("--sweep", o->sweep, "results of this sweep (default: the newest)");
  tx->add_option("--out,-o", o->out, "JSONL file (default: stdout)");
  add_store_option(tx, o->store);
  tx->callback([o] { export_traces_command(*o); });

  auto* ti = cmd->add_subcommand("traces-import", "Record FlashInfer-Bench trace JSONL files");
  ti->add_option("files", o->files, "trace JSONL files")->required();
  ti->add_flag("--json", o->json, "print as JSON");
  add_store_option(ti, o->store);
  ti->callback([o] { import_traces_command(*o); });

  auto* info = cmd->add_subcommand("info", "What the store holds");
  info->add_flag("--json", o->json, "print as JSON");
  add_store_option(info, o->store);
  info->callback([o] { info_command(*o); });
}

}  // namespace kh::cli
