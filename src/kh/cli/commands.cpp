#include "kh/cli/commands.h"

namespace kh::cli {
namespace {
int g_exit_code = 0;
}

void set_exit_code(int code) {
  g_exit_code = code;
}
int exit_code() {
  return g_exit_code;
}

void register_commands(CLI::App& app) {
  add_validate_command(app);
  add_gen_command(app);
  add_check_command(app);
  add_build_command(app);
  add_eval_command(app);
  add_ceilings_command(app);
  add_sweep_command(app);
  add_show_command(app);
  add_history_command(app);
  add_compare_command(app);
  add_regimes_command(app);
  add_roofline_command(app);
  add_report_command(app);
  add_store_command(app);
  add_noise_command(app);
  add_gate_command(app);
  add_promote_command(app);
  add_retained_command(app);
  add_approve_command(app);
  add_note_command(app);
  add_state_command(app);
  add_tune_command(app);
  add_round_command(app);
  add_agent_command(app);
  add_profile_command(app);
  add_worker_command(app);
}

}  // namespace kh::cli
