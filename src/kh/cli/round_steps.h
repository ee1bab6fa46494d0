// The steps of one round of the optimisation loop, shared by `kh round` (one verb each) and
// `kh agent` (the loop): start (state, direction, brief), resume (where it stands), submit (kh
// promote on candidates), close (exactly one decision). The files are ctl/round_manifest.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kh/cli/approval_flags.h"
#include "kh/cli/store_access.h"
#include "kh/ctl/round_manifest.h"
#include "kh/ctl/supervisor.h"

namespace kh::cli {

struct RoundOptions {
  std::string definition, state_file, direction, knowledge, decision, note, promote_options;
  std::string profile;  // start: "latest" or a stored profile's id (prefix), instead of state_file
  std::string rounds_dir = "rounds", root = ".";
  std::vector<std::string> candidates;
  bool json = false;
  StoreOptions store;
  ApprovalFlags approval;  // submit: whether a promotion kh promote grants waits for kh approve
};

struct RoundStep {
  ctl::RoundManifest manifest;
  std::string summary;                           // for people
  std::vector<ctl::SupervisorFinding> findings;  // start: the supervisor on the closed rounds
};

/// The definition's last round when it is not closed.
std::optional<ctl::RoundManifest> open_round(const RoundOptions& o);
/// Refused while the last round is open.
RoundStep start_round(const RoundOptions& o);
RoundStep resume_round(const RoundOptions& o);
/// kh promote on o.candidates with o.promote_options (split into words as a shell would), with --approve when
/// promotions wait for approval (o.approval); its decisions recorded in the open round (a
/// promotion waiting for approval as "pending", with its pending id), its progress in
/// promote-N.log beside the manifest.
RoundStep submit_round(const RoundOptions& o);
/// The best submitted decision, or o.decision (never better than kh promote judged). A pending
/// promotion counts as the answer a person gave it in the store (kh approve): approved, promote;
/// rejected, reject. Refused while one has no answer yet.
RoundStep close_round(const RoundOptions& o);

/// The round's submitted decisions that are promotions still waiting for a person's answer in the
/// store (kh promote's JSON of each).
std::vector<Json> awaiting_approval(const RoundOptions& o, const ctl::RoundManifest& m);
/// "kh approve D ID" for a pending decision of a round.
std::string approve_command(const RoundOptions& o, const Json& pending);

/// rounds_dir/<definition>/<NNN> of the manifest's round.
std::filesystem::path round_folder(const RoundOptions& o, const ctl::RoundManifest& m);

}  // namespace kh::cli
