// --approve / --no-approve of the loop's verbs (kh round submit, kh agent): whether a promotion
// kh promote grants waits as pending until a person answers it with kh approve. Neither given:
// it waits when a person is at the terminal (core/person.h), and never in CI or a script, where
// nobody would answer.
#pragma once

#include <CLI/CLI.hpp>

namespace kh::cli {

struct ApprovalFlags {
  bool approve = false;     // --approve
  bool no_approve = false;  // --no-approve
};

void add_approval_flags(CLI::App* cmd, ApprovalFlags& flags);

/// The choice the flags make, or the terminal's default.
bool promotions_wait_for_approval(const ApprovalFlags& flags);

}  // namespace kh::cli
