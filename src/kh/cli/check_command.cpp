// `kh check`: judges a solution's outputs for one workload and trial. The outputs come from a
// safetensors file (tensors named "<output>" or "output.<output>"); kh regenerates the same
// inputs from (seed, workload, trial, variant), runs its CPU reference, and applies the
// definition's correctness policy with the official tolerances. Exit status: 0 PASSED, 3 any
// other verdict, 1 a usage or input error.
#include <iostream>

#include <fmt/format.h>

#include "kh/check/checker.h"
#include "kh/cli/commands.h"
#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "kh/ref/cpu_reference.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/trace.h"

namespace kh::cli {
namespace {

constexpr int kExitNotPassed = 3;

struct Options {
  std::string root = ".";
  std::string definition;
  std::string workload;
  std::string outputs;
  std::int64_t trial = 0;
  std::uint64_t seed = kDefaultSeed;
  std::string variant;
  bool official = false;
  bool json = false;
};

OutputSet load_solution_outputs(const Definition& def, const std::string& path) {
  SafetensorsReader reader(path);
  OutputSet outputs;
  for (const auto& decl : def.outputs) {
    std::string key = decl.name;
    if (!reader.find(key)) key = "output." + decl.name;
    if (!reader.find(key))
      fail("{}: no tensor '{}' or 'output.{}' for output '{}' of {}", path, decl.name, decl.name,
           decl.name, def.name);
    outputs.add(decl.name, reader.load(key));
  }
  return outputs;
}

void run(const Options& o) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  InputGenerator gen(def, find_workload(ds, def, o.workload), ds.root(),
                     GeneratorOptions{o.seed, o.variant});
  const InputSet inputs = generate_call_inputs(gen, o.trial);
  const OutputSet reference = run_cpu_reference(def, gen.axes(), inputs);
  const OutputSet solution = load_solution_outputs(def, o.outputs);
  const CheckOptions options = official_options(def, o.official, gen.value_scale());
  const CheckResult r = check_outputs(def, inputs, reference, solution, options);

  if (o.json) {
    const Json j = {{"definition", def.name},
                    {"workload", o.workload},
                    {"trial", o.trial},
                    {"seed", o.seed},
                    {"variant", o.variant},
                    {"official", o.official},
                    {"policy", policy_name(policy_for(def))},
                    {"status", status_name(r.status)},
                    {"max_absolute_error", json_float(r.max_absolute_error)},
                    {"max_relative_error", json_float(r.max_relative_error)},
                    {"matched_ratio", r.matched_ratio},
                    {"message", r.message}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "{}  {} workload {} trial {}  max abs {:.3g} rel {:.3g} matched {:.6f}\n",
        status_name(r.status), def.name, o.workload, o.trial, r.max_absolute_error,
        r.max_relative_error, r.matched_ratio);
    if (!r.message.empty()) std::cout << "  " << r.message << "\n";
  }
  if (r.status != EvalStatus::kPassed) set_exit_code(kExitNotPassed);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "Judge a solution's outputs against the CPU reference");
  cmd->add_option("--root", o->root, "dataset folder")->capture_default_str();
  cmd->add_option("--definition,-d", o->definition, "definition name")->required();
  cmd->add_option("--workload,-w", o->workload, "workload uuid")->required();
  cmd->add_option("--outputs", o->outputs, "safetensors file with the solution's outputs")
      ->required();
  cmd->add_option("--trial", o->trial, "trial number")->capture_default_str();
  cmd->add_option("--seed", o->seed, "generator seed")->capture_default_str();
  cmd->add_option("--variant", o->variant, "adversarial input variant");
  cmd->add_flag("--official", o->official,
                "apply the official rules alone (reject any infinity in a solution)");
  cmd->add_flag("--json", o->json, "print the verdict as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
