// `kh sweep CAND... [--definition D]`: judges candidates on every workload of their definition
// (the shipped set, or --workloads FILE), one worker per visible GPU (cuda) or per --jobs (cpu),
// candidates interleaved per workload, each result committed to the store as it arrives.
// --resume continues the newest unfinished sweep of the same plan after a kill; --retry-failed
// re-runs its failed items (a pass on retry is flagged flaky). A progress bar with ETA on a
// terminal; --json prints the outcome. Exit status 0 when every item passed, 3 otherwise.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/run/memory_backend.h"
#include "kh/run/sweep.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

constexpr int kExitNotPassed = 3;
constexpr int kProgressBarWidth = 30;

struct Options {
  std::vector<std::string> candidates;
  std::string definition;
  std::string workloads_file;
  int jobs = 1;              // cpu backend: parallel workers
  std::vector<int> devices;  // cuda: devices to use (default: every visible one)
  bool resume = false, retry_failed = false, json = false;
  StoreOptions store;
  EvalCliOptions e;
};

std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

void draw_progress(const SweepProgress& p) {
  const double f = p.total ? static_cast<double>(p.done) / p.total : 1;
  const int filled = static_cast<int>(f * kProgressBarWidth);
  const double eta = p.done ? p.elapsed_seconds / p.done * (p.total - p.done) : 0;
  std::cerr << fmt::format("\r\033[K[{}{}] {}/{} {:.0f}%  {} passed {} failed  eta {}  {} {}",
                           std::string(filled, '='), std::string(kProgressBarWidth - filled, ' '),
                           p.done, p.total, 100 * f, p.passed, p.failed, clock_text(eta),
                           p.candidate, p.workload.substr(0, 8))
            << std::flush;
}

void run(Options& o) {
  auto store = open_store(o.store);
  const Dataset ds = Dataset::open(o.e.eval.root);
  SweepRequest request;
  std::string definition = o.definition;
  for (const auto& arg : o.candidates) {
    const ResolvedCandidate c = resolve_candidate_arg(arg, o.e.params, definition, o.e.cache);
    check_backend_fits(c, o.e.eval.backend);
    if (definition.empty()) definition = c.candidate.definition;
    if (!c.build.ok)
      std::cerr << fmt::format("kh: {} did not build; its workloads are COMPILE_ERROR\n",
                               c.candidate.name);
    SweepCandidate sc;
    sc.label = c.candidate.name;
    sc.record = candidate_record(*store, c);
    sc.build = c.build;
    sc.entry = c.candidate.entry.symbol;
    request.candidates.push_back(std::move(sc));
  }
  request.definition = ds.definition(definition);
  request.workloads = drawable_workloads(request.definition, o.e.eval.variant,
                                         select_workloads(ds, request.definition, o.workloads_file),
                                         "kh sweep");

  request.ceilings = resolve_eval_cli_options(o.e, request.definition);
  request.eval = o.e.eval;
  request.resume = o.resume;
  request.retry_failed = o.retry_failed;
  if (request.eval.backend == "cuda") {
    request.devices = o.devices;
    if (request.devices.empty()) {
      const int n = visible_cuda_devices();
      if (n == 0) fail("--backend cuda: no CUDA device is visible (no GPU or no driver)");
      for (int d = 0; d < n; ++d) request.devices.push_back(d);
    }
  } else {
    if (o.jobs < 1) fail("--jobs {}: expected at least 1", o.jobs);
    request.devices.assign(static_cast<std::size_t>(o.jobs), 0);
  }

  const bool bar = !o.json && isatty(STDERR_FILENO);
  const SweepOutcome out = run_sweep(*store, request, bar ? draw_progress : SweepProgressFn{});
  if (bar) std::cerr << "\r\033[K" << std::flush;

  const int total = static_cast<int>(request.workloads.size() * request.candidates.size());
  if (o.json) {
    Json candidates = Json::array();
    for (const auto& c : request.candidates)
      candidates.push_back({{"name", c.label}, {"hash", c.record.hash}, {"built", c.build.ok}});
    std::cout << Json{{"sweep", out.sweep.id},
                      {"candidates", candidates},
                      {"definition", request.definition.name},
                      {"continued", out.continued},
                      {"finished", !out.sweep.finished_at.empty()},
                      {"items", total},
                      {"ran", out.ran},
                      {"already_done", out.already_done},
                      {"passed", out.passed},
                      {"failed", out.failed},
                      {"flaky", out.flaky},
                      {"devices", request.devices},
                      {"store", store->location().database().string()}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format(
        "sweep {} of {} ({}): {} items, ran {}, {} already done; {} passed, {} failed, {} "
        "flaky\n",
        out.sweep.id.substr(0, 12), request.definition.name, out.continued ? "continued" : "new",
        total, out.ran, out.already_done, out.passed, out.failed, out.flaky);
    for (const auto& c : request.candidates)
      std::cout << fmt::format("  kh show {}  # {}\n", c.record.hash.substr(0, 12), c.label);
  }
  if (out.passed != total) set_exit_code(kExitNotPassed);
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "sweep", "Judge candidates on every workload of a definition, results kept in the store");
  cmd->add_option("candidates", o->candidates,
                  "candidate folders (folder@NAME=value,... for params) or builtin:NAME")
      ->required();
  cmd->add_option("--definition,-d", o->definition,
                  "the definition (required for builtins; else the candidates')");
  add_eval_cli_options(cmd, o->e);
  cmd->add_option("--workloads", o->workloads_file,
                  "workloads JSONL file to sweep instead of the dataset's set");
  cmd->add_option("--devices", o->devices, "cuda: devices to use (default: all visible)");
  cmd->add_option("--jobs,-j", o->jobs, "cpu: parallel workers")->capture_default_str();
  cmd->add_flag("--resume", o->resume, "continue the newest unfinished sweep of the same plan");
  cmd->add_flag("--retry-failed", o->retry_failed,
                "re-run the failed items of the newest sweep of the same plan");
  cmd->add_flag("--json", o->json, "print the outcome as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
