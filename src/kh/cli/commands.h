// Registration of the kh verbs. Each verb lives in its own file and adds a CLI11 subcommand whose
// callback runs the verb; the callback sets the process exit code through set_exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace kh::cli {

void register_commands(CLI::App& app);
void set_exit_code(int code);
int exit_code();

void add_validate_command(CLI::App& app);
void add_gen_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_build_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_worker_command(CLI::App& app);
void add_ceilings_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_show_command(CLI::App& app);
void add_history_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_regimes_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_store_command(CLI::App& app);
void add_noise_command(CLI::App& app);
void add_gate_command(CLI::App& app);
void add_promote_command(CLI::App& app);
void add_retained_command(CLI::App& app);
void add_approve_command(CLI::App& app);
void add_note_command(CLI::App& app);
void add_state_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_round_command(CLI::App& app);
void add_agent_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_roofline_command(CLI::App& app);

}  // namespace kh::cli
