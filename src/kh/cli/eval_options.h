// The options `kh eval` and `kh sweep` share: where the workloads come from, how candidates are
// built, judged and timed. One definition of each flag, so the two verbs cannot drift apart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kh/roofline/ceilings.h"
#include "kh/run/evaluator.h"
#include "kh/spec/dataset.h"
#include "kh/spec/definition.h"

namespace kh::cli {

struct EvalCliOptions {
  EvalOptions eval;
  std::vector<std::string> params;  // NAME=value for the candidate(s)
  std::string cache = ".kh/builds";
  double call_timeout_s = 10;
  double workload_timeout_s = 300;
  std::string timing;                                    // "", cupti, events, graph, wall
  int warmup = -1, iterations = -1, timing_trials = -1;  // -1: the official count
  std::string ceilings_file;                             // machine ceilings for the roofline floor
};

/// --root/--dataset, --trials, --backend, --seed, --variant, --param, --cache, --logs,
/// --call-timeout, --workload-timeout, --official, --cpu-reference, --oracle, --sanitize, --timing,
/// --warmup, --iterations, --timing-trials, --ceilings.
void add_eval_cli_options(CLI::App* cmd, EvalCliOptions& o);

/// Fills o.eval's timeouts and, with --timing, its method (which must be --backend's:
/// check_timing_backend) and the counts for `def` (official, overridden by the flags). Returns the
/// --ceilings file's ceilings, if one was given.
std::optional<MachineCeilings> resolve_eval_cli_options(EvalCliOptions& o, const Definition& def);

/// The workloads of `def`: the dataset's set when `file` is empty, else the workloads JSONL file
/// (each must be for `def`; their axes are checked). An empty selection is an error.
std::vector<Workload> select_workloads(const Dataset& ds, const Definition& def,
                                       const std::string& file);

/// Says on stderr, as `command`, that `skipped` of the `chosen` workloads are left out because
/// `variant` cannot be drawn for them (`first_reason` is the first one's why); fails when that is
/// all of them. Says nothing when none is.
void report_undrawable(const std::string& command, const std::string& variant, std::size_t chosen,
                       std::size_t skipped, const std::string& first_reason);

/// The workloads of `workloads` that `variant` can be drawn for (all of them without one). Says
/// on stderr, as `command`, how many it leaves out and why; fails when it fits none.
std::vector<Workload> drawable_workloads(const Definition& def, const std::string& variant,
                                         std::vector<Workload> workloads,
                                         const std::string& command);

/// The workloads of `all` that `wanted` names (each a uuid or an index into `all`, as --workload
/// takes them), with their indices; all of them when `wanted` is empty. An unknown one is an error
/// naming `definition`.
std::vector<std::pair<std::size_t, Workload>> pick_workloads(const std::vector<Workload>& all,
                                                             const std::vector<std::string>& wanted,
                                                             const std::string& definition);

}  // namespace kh::cli
