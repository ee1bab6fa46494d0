#include "kh/ctl/knowledge_base.h"

#include <algorithm>
#include <set>

#include <toml++/toml.h>

#include "kh/core/error.h"

namespace kh::ctl {
namespace {

std::vector<std::string> strings(toml::node_view<const toml::node> node, const std::string& where) {
  std::vector<std::string> out;
  if (!node) return out;
  const toml::array* array = node.as_array();
  if (!array) fail("{}: expected an array of strings", where);
  for (const auto& item : *array) {
    const auto value = item.value<std::string>();
    if (!value) fail("{}: expected an array of strings", where);
    out.push_back(*value);
  }
  return out;
}

}  // namespace

KnowledgeBase load_knowledge_base(const std::filesystem::path& path) {
  toml::table parsed;
  try {
    parsed = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    fail("{}: {} (line {})", path.string(), e.description(), e.source().begin.line);
  }
  const toml::table& root = parsed;  // read-only views from here on
  const std::string file = path.string();
  KnowledgeBase kb;
  const auto family = root["family"].value<std::string>();
  if (!family || family->empty()) fail("{}: 'family' must be a non-empty string", file);
  kb.family = *family;
  const auto version = root["version"].value<int64_t>();
  if (!version || *version < 1) fail("{}: 'version' must be an integer >= 1", file);
  kb.version = static_cast<int>(*version);
  kb.definitions = strings(root["definitions"], file + ": definitions");
  const toml::array* directions = root["direction"].as_array();
  if (!directions || directions->empty())
    fail("{}: no [[direction]] tables (each needs name, classes and hypothesis)", file);
  std::set<std::string> names;
  for (std::size_t i = 0; i < directions->size(); ++i) {
    const toml::table* t = (*directions)[i].as_table();
    const std::string where = fmt::format("{}: direction {}", file, i + 1);
    if (!t) fail("{}: expected a table", where);
    Direction d;
    const auto name = (*t)["name"].value<std::string>();
    if (!name || name->empty()) fail("{}: 'name' must be a non-empty string", where);
    d.name = *name;
    if (!names.insert(d.name).second) fail("{}: the name \"{}\" is used twice", where, d.name);
    const std::string here = fmt::format("{}: direction \"{}\"", file, d.name);
    for (const auto& c : strings((*t)["classes"], here + ": classes"))
      d.classes.push_back(bottleneck_from_name(c, here + ": classes"));
    if (d.classes.empty()) fail("{}: 'classes' must name at least one bottleneck class", here);
    const auto hypothesis = (*t)["hypothesis"].value<std::string>();
    if (!hypothesis || hypothesis->empty())
      fail("{}: 'hypothesis' must be a non-empty string", here);
    d.hypothesis = *hypothesis;
    if (const auto* node = t->get("min_headroom")) {
      const auto v = node->value<double>();
      if (!v || *v < 1.0) fail("{}: 'min_headroom' must be a number >= 1", here);
      d.min_headroom = *v;
    }
    d.surfaces = strings((*t)["surfaces"], here + ": surfaces");
    d.definitions = strings((*t)["definitions"], here + ": definitions");
    for (const auto& def : d.definitions)
      if (std::find(kb.definitions.begin(), kb.definitions.end(), def) == kb.definitions.end())
        fail("{}: definitions: \"{}\" is not one of the family's definitions", here, def);
    kb.directions.push_back(std::move(d));
  }
  return kb;
}

DirectionChoice choose_direction(const KnowledgeBase& kb, const BottleneckState& state,
                                 const std::vector<RoundRecord>& history,
                                 const std::string& definition) {
  DirectionChoice choice;
  const std::string signature = state.signature();
  for (const Direction& d : kb.directions) {
    if (std::find(d.classes.begin(), d.classes.end(), state.bottleneck) == d.classes.end())
      continue;
    if (!definition.empty() && !d.definitions.empty() &&
        std::find(d.definitions.begin(), d.definitions.end(), definition) == d.definitions.end())
      continue;
    if (d.min_headroom && (!state.headroom || *state.headroom < *d.min_headroom)) {
      choice.skipped.push_back(fmt::format("{}: needs headroom >= {}, the call is at {}", d.name,
                                           *d.min_headroom,
                                           state.headroom ? fmt::format("{:.2f}", *state.headroom)
                                                          : std::string("an unknown floor")));
      continue;
    }
    const auto failed = std::find_if(history.begin(), history.end(), [&](const RoundRecord& r) {
      return r.direction == d.name && r.state_signature == signature &&
             (r.decision == RoundRecord::Decision::kReject ||
              r.decision == RoundRecord::Decision::kFailed);
    });
    if (failed != history.end()) {
      choice.skipped.push_back(fmt::format("{}: ended in {} in round {} in this same state", d.name,
                                           decision_name(failed->decision), failed->round));
      continue;
    }
    choice.direction = d;
    choice.reason = fmt::format("{} addresses {} ({})", d.name, bottleneck_name(state.bottleneck),
                                state.evidence);
    return choice;
  }
  choice.reason = choice.skipped.empty()
                      ? fmt::format("no direction of {} addresses {}", kb.family,
                                    bottleneck_name(state.bottleneck))
                      : fmt::format("every direction of {} for {} was passed over", kb.family,
                                    bottleneck_name(state.bottleneck));
  return choice;
}

}  // namespace kh::ctl
