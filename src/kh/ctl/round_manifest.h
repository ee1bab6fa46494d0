// A round of the optimisation loop as files: rounds/<definition>/<NNN>/manifest.json says where
// the round stands (started, submitted, closed), what it set out to do (the bottleneck state it
// started from, the direction and hypothesis) and how it ended (exactly one decision); brief.md
// beside it is what a coding agent reads. Every write goes through a temporary file and a rename,
// so a kill never leaves a half-written manifest and `kh round resume` picks up where it stopped.
// The closed rounds of a definition are its history for the knowledge base (never repeat a failed
// direction in the same state) and the supervisor (plateaus, cycles, regressions).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/ctl/supervisor.h"

namespace kh::ctl {

inline constexpr int kRoundManifestVersion = 1;

enum class RoundStatus { kStarted, kSubmitting, kSubmitted, kClosed };

std::string round_status_name(RoundStatus s);

/// One `kh round submit`: the candidates gated, and kh promote's decisions for them.
struct RoundSubmission {
  std::vector<std::string> candidates;
  std::string command;  // the kh promote command line, for a rerun after a kill
  Json decisions = Json::array();  // kh promote --json, once it finished
  std::optional<double> gain;      // the best candidate's relative gain over the retained one
};

struct RoundManifest {
  std::string definition;
  int round = 0;  // 1, 2, ...
  RoundStatus status = RoundStatus::kStarted;
  std::string created_at, closed_at;
  Json state = nullptr;       // kh state --json's "state" (and "kernels"), or null
  std::string signature;      // the state's signature ("" without a profile)
  std::string direction;      // the knowledge-base direction, "" when none applied
  std::string hypothesis;
  std::vector<std::string> surfaces;
  Json retained = nullptr;    // {"candidate", "name", "since", "reason"} or null
  std::vector<RoundSubmission> submissions;
  Json agent_runs = Json::array();  // kh agent: each command run for this round, as it ended
  std::optional<RoundRecord::Decision> decision;  // set when closed
  std::optional<double> gain;
  std::string note;
};

Json round_manifest_json(const RoundManifest& m);
/// Parses a manifest; errors name `source` and the field ("m.json: status: ...").
RoundManifest round_manifest_from_json(const Json& j, const std::string& source);

/// rounds_root/<definition>/<NNN>, NNN the round number in three digits.
std::filesystem::path round_dir(const std::filesystem::path& rounds_root,
                                const std::string& definition, int round);
void save_round(const std::filesystem::path& dir, const RoundManifest& m);
RoundManifest load_round(const std::filesystem::path& dir);

/// Every round of `definition` under rounds_root, oldest first (folders without a manifest are
/// skipped: a round whose first write was killed never existed).
std::vector<RoundManifest> load_rounds(const std::filesystem::path& rounds_root,
                                       const std::string& definition);

/// The closed rounds as the knowledge base and the supervisor read them.
std::vector<RoundRecord> round_history(const std::vector<RoundManifest>& rounds);

}  // namespace kh::ctl
