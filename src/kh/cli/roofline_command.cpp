// `kh roofline D [--workloads FILE] [--ceilings FILE] [--trial N] [--seed S] [--json]`: the
// minimal cost of one call of each workload (roofline/call_cost.h: HBM bytes, FLOPs, what was
// counted) drawn from the same inputs a trial uses, and its floor on a machine's ceilings. No GPU
// and no reference are needed, so a result measured elsewhere can be put beside its floor.
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/roofline/call_cost.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string definition, workloads, ceilings, root = ".";
  std::int64_t trial = 0;
  std::uint64_t seed = kDefaultSeed;
  bool json = false;
};

void run(const Options& o) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  std::optional<MachineCeilings> ceilings;
  if (!o.ceilings.empty()) ceilings = load_ceilings(o.ceilings);
  Json rows = Json::array();
  if (!o.json)
    std::cout << fmt::format("{:>4}  {:<36} {:>14} {:>14} {:>5} {:>12}  {}\n", "#", "workload",
                             "bytes", "flops", "kind", "floor us", "counted");
  std::size_t index = 0;
  for (const Workload& w : select_workloads(ds, def, o.workloads)) {
    const InputGenerator generator(def, w, ds.root(), GeneratorOptions{o.seed, ""});
    const CallCost cost =
        minimal_call_cost(def, generator.axes(), generate_call_inputs(generator, o.trial));
    // -1: no ceilings given, no floor.
    const double floor = ceilings ? floor_seconds(cost, *ceilings) : -1;
    if (o.json) {
      Json row = call_cost_json(cost);
      row["workload"] = w.uuid;
      row["index"] = index;
      row["floor_seconds"] = floor >= 0 ? Json(floor) : Json(nullptr);
      rows.push_back(row);
    } else {
      std::cout << fmt::format("{:>4}  {:<36} {:>14.0f} {:>14.0f} {:>5} {:>12}  {}\n", index,
                               w.uuid, cost.bytes, cost.flops, flop_kind_name(cost.kind),
                               floor >= 0 ? fmt::format("{:.3f}", floor * 1e6) : "-", cost.note);
    }
    ++index;
  }
  if (o.json)
    std::cout << Json{{"definition", def.name},
                      {"trial", o.trial},
                      {"seed", o.seed},
                      {"ceilings", ceilings ? Json(ceilings->gpu) : Json(nullptr)},
                      {"workloads", rows}}
                     .dump(2)
              << "\n";
}

}  // namespace

void add_roofline_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "roofline", "Each workload's minimal call cost and its floor on a machine's ceilings");
  cmd->add_option("definition", o->definition, "definition name")->required();
  cmd->add_option("--workloads", o->workloads, "workloads JSONL file (default: the dataset's)");
  cmd->add_option("--ceilings", o->ceilings, "machine ceilings JSON (kh ceilings) for the floors");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_option("--trial", o->trial, "the trial whose inputs are costed")->capture_default_str();
  cmd->add_option("--seed", o->seed, "input seed")->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
