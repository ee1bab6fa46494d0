#include "kh/cli/approval_flags.h"

#include "kh/core/person.h"

namespace kh::cli {

void add_approval_flags(CLI::App* cmd, ApprovalFlags& flags) {
  auto* yes = cmd->add_flag("--approve", flags.approve,
                            "a promotion kh promote grants waits as pending for kh approve "
                            "(the default when stdin and stdout are a terminal)");
  auto* no = cmd->add_flag("--no-approve", flags.no_approve,
                           "a promotion kh promote grants takes effect at once (the default "
                           "without a terminal: CI, scripts)");
  yes->excludes(no);
}

bool promotions_wait_for_approval(const ApprovalFlags& flags) {
  if (flags.approve) return true;
  if (flags.no_approve) return false;
  return person_at_terminal();
}

}  // namespace kh::cli
