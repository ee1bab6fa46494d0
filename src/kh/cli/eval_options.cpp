#include "kh/cli/eval_options.h"

#include <iostream>

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/gen/input_generator.h"

namespace kh::cli {

void add_eval_cli_options(CLI::App* cmd, EvalCliOptions& o) {
  cmd->add_option("--root,--dataset", o.eval.root, "dataset folder")->capture_default_str();
  cmd->add_option("--trials", o.eval.trials, "correctness trials per workload")
      ->capture_default_str();
  cmd->add_option("--backend", o.eval.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--seed", o.eval.seed, "generator seed")->capture_default_str();
  cmd->add_option("--variant", o.eval.variant, "adversarial input variant");
  cmd->add_option("--param", o.params, "compile-time parameter NAME=value (repeatable)");
  cmd->add_option("--cache", o.cache, "build cache folder")->capture_default_str();
  cmd->add_option("--logs", o.eval.log_dir, "worker log folder")->capture_default_str();
  cmd->add_option("--call-timeout", o.call_timeout_s, "seconds per candidate call")
      ->capture_default_str();
  cmd->add_option("--workload-timeout", o.workload_timeout_s, "seconds per workload")
      ->capture_default_str();
  cmd->add_flag("--official", o.eval.official,
                "the official rules alone (no poisoning, canaries, input checks, anti-caching)");
  cmd->add_flag("--cpu-reference", o.eval.cpu_reference,
                "judge with the fp64 CPU references on host-drawn inputs even on the cuda backend "
                "(slow; cross-checks the GPU references)");
  cmd->add_option("--oracle", o.eval.oracle,
                  "who judges the outputs: native (kh's references), python (the definition's own "
                  "PyTorch reference, in the Python worker) or auto (native where kh has one)")
      ->check(CLI::IsMember({"auto", "native", "python"}))
      ->capture_default_str();
  cmd->add_flag("--sanitize", o.eval.sanitize, "run the worker under compute-sanitizer memcheck");
  cmd->add_option("--timing", o.timing,
                  "time workloads that pass: cupti (official-aligned span), events or graph on "
                  "the cuda backend; wall on the cpu backend (exercises the flows, not a "
                  "performance number)")
      ->check(CLI::IsMember({"cupti", "events", "graph", "wall"}));
  cmd->add_option("--warmup", o.warmup, "timing: untimed calls (default: the official count)");
  cmd->add_option("--iterations", o.iterations,
                  "timing: timed calls per trial (default: the official count)");
  cmd->add_option("--timing-trials", o.timing_trials,
                  "timing: input sets (default: the official count)");
  cmd->add_option("--ceilings", o.ceilings_file,
                  "machine ceilings JSON for the roofline floor of timings (default: the file "
                  "kh ceilings stored for this GPU, if any)");
}

std::optional<MachineCeilings> resolve_eval_cli_options(EvalCliOptions& o, const Definition& def) {
  if (!o.timing.empty()) {
    o.eval.timing = parse_timing_method(o.timing);
    check_timing_backend(*o.eval.timing, o.eval.backend);
    TimingConfig config = official_timing_config(def.name);
    if (o.warmup >= 0) config.warmup = o.warmup;
    if (o.iterations >= 0) config.iterations = o.iterations;
    if (o.timing_trials >= 0) config.trials = o.timing_trials;
    check_timing_config(config);
    o.eval.timing_config = config;
  }
  o.eval.call_timeout = std::chrono::milliseconds(static_cast<long>(o.call_timeout_s * 1000));
  o.eval.workload_timeout =
      std::chrono::milliseconds(static_cast<long>(o.workload_timeout_s * 1000));
  if (o.ceilings_file.empty()) return std::nullopt;
  return load_ceilings(o.ceilings_file);
}

std::vector<Workload> select_workloads(const Dataset& ds, const Definition& def,
                                       const std::string& file) {
  if (file.empty()) {
    auto all = ds.workloads(def.name);
    if (all.empty()) fail("definition {} has no workloads in {}", def.name, ds.root().string());
    return all;
  }
  std::vector<Workload> out;
  for (auto& r : load_workload_file(file)) {
    if (r.definition != def.name)
      fail("{}: workload {} is for definition {}, not {}", file, r.workload.uuid, r.definition,
           def.name);
    resolve_axes(def, r.workload, file);
    out.push_back(std::move(r.workload));
  }
  if (out.empty()) fail("{}: no workloads", file);
  return out;
}

std::vector<Workload> drawable_workloads(const Definition& def, const std::string& variant,
                                         std::vector<Workload> workloads,
                                         const std::string& command) {
  if (variant.empty()) return workloads;
  std::vector<Workload> kept;
  std::string first_reason;
  for (Workload& w : workloads) {
    std::string why = InputGenerator::variant_does_not_apply(def, variant, w);
    if (why.empty())
      kept.push_back(std::move(w));
    else if (first_reason.empty())
      first_reason = std::move(why);
  }
  report_undrawable(command, variant, workloads.size(), workloads.size() - kept.size(),
                    first_reason);
  return kept;
}

void report_undrawable(const std::string& command, const std::string& variant, std::size_t chosen,
                       std::size_t skipped, const std::string& first_reason) {
  if (skipped == 0) return;
  if (skipped == chosen)
    fail("{}: variant {} fits none of the {} workloads chosen (first: {})", command, variant,
         chosen, first_reason);
  std::cerr << fmt::format("{}: skipping {} workload{} the variant cannot be drawn for ({})\n",
                           command, skipped, skipped == 1 ? "" : "s", first_reason);
}

std::vector<std::pair<std::size_t, Workload>> pick_workloads(const std::vector<Workload>& all,
                                                             const std::vector<std::string>& wanted,
                                                             const std::string& definition) {
  std::vector<std::pair<std::size_t, Workload>> out;
  if (wanted.empty()) {
    for (std::size_t i = 0; i < all.size(); ++i) out.emplace_back(i, all[i]);
    return out;
  }
  for (const auto& w : wanted) {
    bool found = false;
    for (std::size_t i = 0; i < all.size() && !found; ++i) {
      if (all[i].uuid == w || std::to_string(i) == w) {
        out.emplace_back(i, all[i]);
        found = true;
      }
    }
    if (!found)
      fail("--workload {}: no workload of definition {} has that uuid or index", w, definition);
  }
  return out;
}

}  // namespace kh::cli
