// The brief of a round: one Markdown file a coding agent (or a person) reads before changing a
// kernel — the correctness contract and packaging rules, the retained candidate and where its time
// goes by regime, the profile and the bottleneck state, the one direction this round takes and
// why, the supervisor's findings over earlier rounds, the reconnaissance notes, the permitted
// surfaces, and how the round is judged and closed. Pure text assembly: kh round gathers the
// inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kh/check/tolerance.h"
#include "kh/ctl/knowledge_base.h"
#include "kh/ctl/round_manifest.h"
#include "kh/ctl/supervisor.h"
#include "kh/spec/definition.h"

namespace kh::ctl {

struct BriefRegime {
  std::string label;
  int workloads = 0;
  std::optional<double> retained_share;       // of the retained candidate's total latency
  std::optional<double> retained_mean_seconds;  // its mean latency in the regime
};

struct BriefInputs {
  const Definition* definition = nullptr;
  std::string definition_path;  // the JSON file whose reference is the authority
  Tolerance tolerance{};
  std::string timing_method;  // of the retained candidate's numbers ("" when none)
  std::vector<BriefRegime> regimes;
  std::optional<DirectionChoice> choice;  // null when the direction was given by hand
  std::vector<SupervisorFinding> findings;
  std::string notes;  // rounds/<definition>/notes.md, the reconnaissance so far
};

std::string render_brief(const RoundManifest& round, const BriefInputs& in);

}  // namespace kh::ctl
