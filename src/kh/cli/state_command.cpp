// `kh state PROFILE.csv [--launch I ...] [--span-us X] [--floor-us Y | -d D -w UUID|INDEX]
// [--ceilings FILE] [--knowledge FILE] [--json]`: the controller's view of one call profiled by
// Nsight Compute (ncu --csv --metrics <the list kh state --metrics prints>): each kernel's
// metrics, the bottleneck state (ctl/bottleneck_state.h) and, with a knowledge base, the direction
// a round would take. The launches of one call are chosen by their position in the file (default:
// all of them). The floor is given, or computed as kh roofline does for the profiled workload.
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/ctl/bottleneck_state.h"
#include "kh/ctl/knowledge_base.h"
#include "kh/ctl/ncu_csv.h"
#include "kh/roofline/call_cost.h"
#include "kh/roofline/ceilings.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string profile, ceilings, knowledge;
  std::string definition, workload, workloads_file, root = ".";
  std::vector<int> launches;
  double span_us = 0, floor_us = 0;
  bool json = false, metrics = false;
};

// The roofline floor of the profiled workload (trial 0's inputs) on `ceilings`.
double workload_floor(const Options& o, const MachineCeilings& ceilings) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  const Workload chosen =
      pick_workloads(select_workloads(ds, def, o.workloads_file), {o.workload}, def.name)[0].second;
  const InputGenerator generator(def, chosen, ds.root(), GeneratorOptions{kDefaultSeed, ""});
  const CallCost cost =
      minimal_call_cost(def, generator.axes(), generate_call_inputs(generator, 0));
  return floor_seconds(cost, ceilings);
}

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string cell(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

Json kernel_json(const ctl::KernelProfile& k) {
  return {{"name", k.name},
          {"duration_seconds", k.duration_seconds},
          {"sm_throughput_pct", optional_json(k.sm_throughput_pct)},
          {"memory_throughput_pct", optional_json(k.memory_throughput_pct)},
          {"dram_throughput_pct", optional_json(k.dram_throughput_pct)},
          {"registers_per_thread", optional_json(k.registers_per_thread)},
          {"dynamic_smem_bytes", optional_json(k.dynamic_smem_bytes)},
          {"theoretical_occupancy_pct", optional_json(k.theoretical_occupancy_pct)},
          {"achieved_occupancy_pct", optional_json(k.achieved_occupancy_pct)},
          {"waves_per_sm", optional_json(k.waves_per_sm)},
          {"local_memory_bytes", optional_json(k.local_memory_bytes)},
          {"sectors_per_request", optional_json(k.sectors_per_request)},
          {"tensor_pipe_pct", optional_json(k.tensor_pipe_pct)},
          {"occupancy_limiter", k.occupancy_limiter ? Json(*k.occupancy_limiter) : Json(nullptr)}};
}

void run(const Options& o) {
  if (o.metrics) {
    for (const auto& m : ctl::kNcuMetrics) std::cout << m << "\n";
    return;
  }
  if (o.profile.empty()) fail("kh state: give the ncu CSV of one call (or --metrics)");
  const auto all = ctl::parse_ncu_csv(read_text_file(o.profile), o.profile);
  ctl::CallProfile call;
  if (o.launches.empty()) call.kernels = all;
  for (int i : o.launches) {
    if (i < 0 || i >= static_cast<int>(all.size()))
      fail("--launch {}: {} holds launches 0 to {}", i, o.profile, all.size() - 1);
    call.kernels.push_back(all[i]);
  }
  if (o.span_us > 0) call.span_seconds = o.span_us * 1e-6;
  std::optional<double> floor, empty;
  std::optional<MachineCeilings> ceilings;
  if (!o.ceilings.empty()) {
    ceilings = load_ceilings(o.ceilings);
    empty = ceilings->empty_kernel_seconds;
  }
  if (o.floor_us > 0) floor = o.floor_us * 1e-6;
  if (!o.workload.empty()) {
    if (o.floor_us > 0) fail("kh state: give --floor-us or --workload, not both");
    if (o.definition.empty() || !ceilings)
      fail("kh state --workload {}: the floor also needs --definition and --ceilings", o.workload);
    floor = workload_floor(o, *ceilings);
  }
  const ctl::BottleneckState state = ctl::classify(call, floor, empty);
  std::optional<ctl::DirectionChoice> choice;
  if (!o.knowledge.empty())
    choice = ctl::choose_direction(ctl::load_knowledge_base(o.knowledge), state, {}, o.definition);

  if (o.json) {
    Json kernels = Json::array();
    for (const auto& k : call.kernels) kernels.push_back(kernel_json(k));
    Json out = {{"profile", o.profile},
                {"kernels", kernels},
                {"span_seconds", call.span()},
                {"floor_seconds", optional_json(floor)},
                {"state",
                 {{"dominant_kernel", state.dominant_kernel},
                  {"dominant_share", state.dominant_share},
                  {"bottleneck", ctl::bottleneck_name(state.bottleneck)},
                  {"evidence", state.evidence},
                  {"headroom", optional_json(state.headroom)},
                  {"signature", state.signature()}}}};
    if (choice)
      out["direction"] = {
          {"name", choice->direction ? Json(choice->direction->name) : Json(nullptr)},
          {"hypothesis", choice->direction ? Json(choice->direction->hypothesis) : Json(nullptr)},
          {"reason", choice->reason},
          {"skipped", choice->skipped}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<28} {:>9} {:>6} {:>6} {:>6} {:>6} {:>5} {:>8} {:>9} {:>7} {:>6}\n",
                           "kernel", "us", "SM%", "mem%", "waves", "occ%", "regs", "smem KB",
                           "spill B", "sect/rq", "tc%");
  for (const auto& k : call.kernels)
    std::cout << fmt::format(
        "{:<28} {:>9.2f} {:>6} {:>6} {:>6} {:>6} {:>5} {:>8} {:>9} {:>7} {:>6}\n",
        k.name.substr(0, k.name.find('(')).substr(0, 28), k.duration_seconds * 1e6,
        cell(k.sm_throughput_pct, "{:.0f}"), cell(k.memory_throughput_pct, "{:.0f}"),
        cell(k.waves_per_sm, "{:.2f}"), cell(k.achieved_occupancy_pct, "{:.0f}"),
        cell(k.registers_per_thread, "{:.0f}"),
        cell(k.dynamic_smem_bytes ? std::optional<double>(*k.dynamic_smem_bytes / 1024)
                                  : std::nullopt,
             "{:.1f}"),
        cell(k.local_memory_bytes, "{:.0f}"), cell(k.sectors_per_request, "{:.1f}"),
        cell(k.tensor_pipe_pct, "{:.0f}"));
  std::cout << fmt::format("\nstate: {} in {} ({:.0f}% of the kernel time): {}\n",
                           ctl::bottleneck_name(state.bottleneck), state.dominant_kernel,
                           100 * state.dominant_share, state.evidence);
  if (state.headroom) std::cout << fmt::format("headroom: {:.2f}x the floor\n", *state.headroom);
  if (choice) {
    std::cout << "direction: "
              << (choice->direction ? choice->direction->name : std::string("none")) << " — "
              << choice->reason << "\n";
    for (const auto& s : choice->skipped) std::cout << "  passed over: " << s << "\n";
  }
}

}  // namespace

void add_state_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "state", "The bottleneck state of one call from an Nsight Compute CSV, and its direction");
  cmd->add_option("profile", o->profile, "ncu --csv output (details page) of one call");
  cmd->add_option("--launch", o->launches,
                  "position of a launch of the call in the file (repeatable; default: all)");
  cmd->add_option("--span-us", o->span_us, "the call's span from a timeline (gaps count)");
  cmd->add_option("--floor-us", o->floor_us, "the workload's roofline floor (kh roofline)");
  cmd->add_option("--definition,-d", o->definition, "the profiled definition (for --workload)");
  cmd->add_option("--workload,-w", o->workload,
                  "the profiled workload (uuid or index): its floor on --ceilings, as kh roofline");
  cmd->add_option("--workloads", o->workloads_file,
                  "workloads JSONL file (default: the dataset's)");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_option("--ceilings", o->ceilings, "machine ceilings JSON: the empty-kernel span");
  cmd->add_option("--knowledge", o->knowledge, "knowledge base (knowledge/<family>.toml)");
  cmd->add_flag("--metrics", o->metrics, "print the metric list to pass to ncu --metrics");
  cmd->add_flag("--json", o->json, "print as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
