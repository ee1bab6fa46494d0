// kh — the kernel-harness command. One file per verb; this file only wires them together.
#include <iostream>

#include <CLI/CLI.hpp>

#include "kh/cli/commands.h"
#include "kh/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"kh: evaluation harness and optimisation controller for GPU kernels"};
  app.require_subcommand(1);
  kh::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kh::Error& e) {
    std::cerr << "kh: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kh: internal error: " << e.what() << "\n";
    return 2;
  }
  return kh::cli::exit_code();
}
