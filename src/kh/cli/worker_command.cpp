// `kh worker`: the process that runs candidate code, driven by a coordinator over stdin/stdout
// (see run/worker_protocol.h). Not meant to be started by hand.
#include "kh/cli/commands.h"
#include "kh/run/worker_protocol.h"

namespace kh::cli {

void add_worker_command(CLI::App& app) {
  struct Options {
    std::string backend = "cpu";
    int device = 0;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("worker", "Run candidate calls for a coordinator (internal)");
  cmd->group("");  // hidden from the help listing
  cmd->add_option("--backend", o->backend, "cpu or cuda")->capture_default_str();
  cmd->add_option("--device", o->device, "CUDA device")->capture_default_str();
  cmd->callback([o] { set_exit_code(run_worker(o->backend, o->device)); });
}

}  // namespace kh::cli
