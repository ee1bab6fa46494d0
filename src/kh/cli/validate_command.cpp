// `kh validate`: loads a dataset folder (kh's shipped data by default), checks every definition
// and workload against each other, and prints one summary line per definition: workload count,
// the range of each var axis, whether kh has structured generators and a native reference.
// `--generate` also draws trial 0 of every workload whose inputs are small enough to be cheap.
#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/core/json_io.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/cpu_reference.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

// --generate skips workloads whose inputs exceed this many bytes (the MoE weights are 1.4 GB).
constexpr std::uint64_t kGenerateByteLimit = 256ull << 20;

struct Options {
  std::string root = ".";
  bool json = false;
  bool generate = false;
};

std::uint64_t input_bytes(const Definition& def, const AxisValues& axes) {
  std::uint64_t total = 0;
  for (const auto& t : def.inputs)
    total += storage_bytes(t.dtype, shape_numel(def.shape_of(t, axes)));
  return total;
}

void run(const Options& o) {
  const Dataset ds = Dataset::open(o.root);
  Json report = Json::object();
  report["root"] = std::filesystem::absolute(o.root).lexically_normal().string();
  Json defs = Json::array();
  std::size_t total_workloads = 0, generated = 0;
  for (const auto& [name, def] : ds.definitions()) {
    const auto workloads = ds.workloads(name);
    total_workloads += workloads.size();
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
    std::size_t def_generated = 0;
    for (const auto& w : workloads) {
      const AxisValues axes = resolve_axes(def, w, name);
      for (const auto& a : def.axes) {
        if (a.is_const) continue;
        auto [it, inserted] = ranges.try_emplace(a.name, axes.at(a.name), axes.at(a.name));
        if (!inserted) {
          it->second.first = std::min(it->second.first, axes.at(a.name));
          it->second.second = std::max(it->second.second, axes.at(a.name));
        }
      }
      if (o.generate && input_bytes(def, axes) <= kGenerateByteLimit) {
        InputGenerator gen(def, w, ds.root());
        gen.generate(0);
        ++def_generated;
      }
    }
    generated += def_generated;
    Json d = Json::object();
    d["definition"] = name;
    d["op_type"] = def.op_type;
    d["workloads"] = workloads.size();
    Json axis_ranges = Json::object();
    for (const auto& [axis, r] : ranges) axis_ranges[axis] = {r.first, r.second};
    d["axis_ranges"] = axis_ranges;
    d["structured_generator"] = make_operator_inputs(def) != nullptr;
    d["cpu_reference"] = find_cpu_reference(name) != nullptr;
    Json variants = Json::array();
    for (const auto& v : InputGenerator::variants(def)) variants.push_back(v.name);
    d["variants"] = variants;
    if (o.generate) d["generated_trial0"] = def_generated;
    defs.push_back(d);
  }
  report["definitions"] = defs;
  report["total_workloads"] = total_workloads;
  report["ok"] = true;

  if (o.json) {
    std::cout << report.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("dataset {}: {} definitions, {} workloads, all valid\n",
                           report["root"].get<std::string>(), ds.definitions().size(),
                           total_workloads);
  for (const auto& d : defs) {
    std::string axes;
    for (auto it = d["axis_ranges"].begin(); it != d["axis_ranges"].end(); ++it) {
      const auto lo = (*it)[0].get<std::int64_t>(), hi = (*it)[1].get<std::int64_t>();
      axes += fmt::format("{}{}={}", axes.empty() ? "" : " ", it.key(),
                          lo == hi ? std::to_string(lo) : fmt::format("{}..{}", lo, hi));
    }
    std::cout << fmt::format("  {:<62} {:>4} workloads  {}  [gen:{} ref:{}]\n",
                             d["definition"].get<std::string>(), d["workloads"].get<std::size_t>(),
                             axes, d["structured_generator"].get<bool>() ? "structured" : "plain",
                             d["cpu_reference"].get<bool>() ? "cpu" : "none");
  }
  if (o.generate) std::cout << fmt::format("generated trial 0 of {} workloads\n", generated);
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("validate", "Check a dataset's definitions and workloads");
  cmd->add_option("--root", opts->root, "dataset folder (definitions/, workloads/)")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print the summary as JSON");
  cmd->add_flag("--generate", opts->generate, "also draw trial 0 of every small workload");
  cmd->callback([opts] { run(*opts); });
}

}  // namespace kh::cli
