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

/// A reconnaissance note recorded with `kh note` (store/records.h NoteRecord).
struct BriefNote {
  std::string created_at;  // ISO 8601 UTC
  std::string author;
  std::string text;
  std::string reference;  // URL or path, "" when none
};

/// At most this many notes go into a brief, the newest; the rest are counted and left to
/// `kh note D --list` (a brief is read whole by an agent with a bounded context).
inline constexpr std::size_t kBriefNotesShown = 40;

struct BriefInputs {
  const Definition* definition = nullptr;
  std::string definition_path;  // the JSON file whose reference is the authority
  Tolerance tolerance{};
  std::string timing_method;  // of the retained candidate's numbers ("" when none)
  std::vector<BriefRegime> regimes;
  std::optional<DirectionChoice> choice;  // null when the direction was given by hand
  std::vector<SupervisorFinding> findings;
  std::vector<BriefNote> recorded_notes;  // the store's notes on the definition, oldest first
  std::string notes;       // rounds/<definition>/notes.md, the reconnaissance kept as a file
  std::string notes_path;  // where `notes` came from
};

std::string render_brief(const RoundManifest& round, const BriefInputs& in);

}  // namespace kh::ctl
