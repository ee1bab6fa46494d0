// A knowledge base: per operator family, a versioned TOML file (knowledge/<family>.toml) mapping
// bottleneck classes to optimisation directions, each with its preconditions and the hypothesis a
// round tests. Selection proposes one direction per round and never proposes again a direction
// that failed in the same state; once the state changes, it may.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kh/ctl/bottleneck_state.h"
#include "kh/ctl/supervisor.h"

namespace kh::ctl {

struct Direction {
  std::string name;                    // unique in its file: what the store records
  std::vector<Bottleneck> classes;     // the states it addresses
  std::string hypothesis;              // what a round in this direction expects, and why
  std::optional<double> min_headroom;  // only when the call is at least this far from its floor
  std::vector<std::string> surfaces;   // files or routes it changes, for the brief
  std::vector<std::string> definitions;  // the family's definitions it is for (empty: all of them)
};

struct KnowledgeBase {
  std::string family;  // "attention", "gdn", "moe"
  int version = 0;
  std::vector<std::string> definitions;  // definitions of the family
  std::vector<Direction> directions;     // in order of preference
};

/// Reads and checks a knowledge-base file; errors name the file, the field and the value.
KnowledgeBase load_knowledge_base(const std::filesystem::path& path);

struct DirectionChoice {
  std::optional<Direction> direction;  // none: every applicable direction failed here
  std::string reason;                  // why this one, or why none
  std::vector<std::string> skipped;    // "name: why" for each applicable one passed over
};

/// The first direction of `kb` for `definition` (empty: any) that addresses `state`, meets its
/// preconditions and did not end in a reject or a failure in a round of `history` with the same
/// state signature.
DirectionChoice choose_direction(const KnowledgeBase& kb, const BottleneckState& state,
                                 const std::vector<RoundRecord>& history,
                                 const std::string& definition = "");

}  // namespace kh::ctl
