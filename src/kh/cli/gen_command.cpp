// `kh gen`: draws the inputs of one workload and trial and writes them, with the native CPU
// reference's outputs if asked, to a safetensors file: tensors "input.<name>" and "ref.<name>",
// metadata naming the definition, workload, trial, seed and variant. tools/xcheck_reference.py
// feeds such a file to the definition's own PyTorch reference.
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/cpu_reference.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

struct Options {
  std::string root = ".";
  std::string definition;
  std::string workload;
  std::int64_t trial = 0;
  std::uint64_t seed = kDefaultSeed;
  std::string variant;
  std::string out;
  bool reference = false;
  bool json = false;
};

void run(const Options& o) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  const Workload workload = find_workload(ds, def, o.workload);
  InputGenerator gen(def, workload, ds.root(), GeneratorOptions{o.seed, o.variant});
  const InputSet inputs = generate_call_inputs(gen, o.trial);
  NamedTensors tensors;
  std::string absent;
  for (const auto& item : inputs) {
    if (!item.present) {
      absent += (absent.empty() ? "" : ",") + item.name;
      continue;
    }
    tensors.emplace_back("input." + item.name, &item.tensor);
  }
  OutputSet outputs;
  if (o.reference) {
    outputs = run_cpu_reference(def, gen.axes(), inputs);
    for (const auto& item : outputs) {
      tensors.emplace_back("ref." + item.name, &item.tensor);
    }
  }
  write_safetensors(o.out, tensors,
                    {{"definition", def.name},
                     {"workload", workload.uuid},
                     {"trial", std::to_string(o.trial)},
                     {"seed", std::to_string(o.seed)},
                     {"variant", o.variant},
                     {"absent_inputs", absent}});
  if (o.json) {
    Json j = {{"out", o.out},
              {"definition", def.name},
              {"workload", workload.uuid},
              {"trial", o.trial},
              {"seed", o.seed},
              {"variant", o.variant},
              {"tensors", tensors.size()},
              {"reference", o.reference}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("wrote {} tensors of {} workload {} trial {} to {}\n", tensors.size(),
                             def.name, workload.uuid, o.trial, o.out);
  }
}

}  // namespace

void add_gen_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("gen", "Write one workload's inputs (and reference outputs)");
  cmd->add_option("--root", o->root, "dataset folder")->capture_default_str();
  cmd->add_option("--definition,-d", o->definition, "definition name")->required();
  cmd->add_option("--workload,-w", o->workload, "workload uuid")->required();
  cmd->add_option("--trial", o->trial, "trial number")->capture_default_str();
  cmd->add_option("--seed", o->seed, "generator seed")->capture_default_str();
  cmd->add_option("--variant", o->variant, "adversarial input variant");
  cmd->add_option("--out,-o", o->out, "safetensors file to write")->required();
  cmd->add_flag("--reference", o->reference, "also run the native CPU reference");
  cmd->add_flag("--json", o->json, "print what was written as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
