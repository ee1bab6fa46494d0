// The person running kh, as the records that need one see them: who (for the approvals and notes
// a store keeps, which travel between machines, hence the host) and whether one is at the terminal
// (kh agent and kh round submit make promotions wait for approval only when someone is there to
// give it; CI and scripts must not block on a prompt nobody answers).
#pragma once

#include <string>

namespace kh {

/// "user@host": the login name (the password database, else $USER or $LOGNAME, else "uid N")
/// and the host name.
std::string person_name();

/// Whether stdin and stdout are both terminals: a person is at the keyboard.
bool person_at_terminal();

}  // namespace kh
