#include "kh/ctl/round_manifest.h"

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh::ctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifestFile = "manifest.json";

const char* const kStatusNames[] = {"started", "submitting", "submitted", "closed"};

RoundStatus status_from_name(const JsonCursor& c) {
  const std::string name = c.as_string();
  for (int i = 0; i < 4; ++i)
    if (name == kStatusNames[i]) return static_cast<RoundStatus>(i);
  c.fail_here(fmt::format("unknown status \"{}\" (started, submitting, submitted or closed)", name));
}

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::optional<double> number_or_null(const JsonCursor& c, std::string_view key) {
  const auto v = c.find(key);
  return v ? std::optional<double>(v->as_number()) : std::nullopt;
}

std::vector<std::string> strings(const JsonCursor& c) {
  c.expect_array();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < c.size(); ++i) out.push_back(c.at(i).as_string());
  return out;
}

}  // namespace

std::string round_status_name(RoundStatus s) { return kStatusNames[static_cast<int>(s)]; }

Json round_manifest_json(const RoundManifest& m) {
  Json submissions = Json::array();
  for (const auto& s : m.submissions)
    submissions.push_back({{"candidates", s.candidates},
                           {"command", s.command},
                           {"decisions", s.decisions},
                           {"gain", optional_number(s.gain)}});
  return {{"version", kRoundManifestVersion},
          {"definition", m.definition},
          {"round", m.round},
          {"status", round_status_name(m.status)},
          {"created_at", m.created_at},
          {"closed_at", m.closed_at},
          {"state", m.state},
          {"signature", m.signature},
          {"direction", m.direction},
          {"hypothesis", m.hypothesis},
          {"surfaces", m.surfaces},
          {"retained", m.retained},
          {"submissions", submissions},
          {"agent_runs", m.agent_runs},
          {"decision", m.decision ? Json(decision_name(*m.decision)) : Json(nullptr)},
          {"gain", optional_number(m.gain)},
          {"note", m.note}};
}

RoundManifest round_manifest_from_json(const Json& j, const std::string& source) {
  const JsonCursor c(j, source);
  c.expect_object();
  if (const int v = static_cast<int>(c.at("version").as_int()); v != kRoundManifestVersion)
    c.at("version").fail_here(
        fmt::format("manifest version {}; this kh reads version {}", v, kRoundManifestVersion));
  RoundManifest m;
  m.definition = c.at("definition").as_string();
  m.round = static_cast<int>(c.at("round").as_int());
  if (m.round < 1) c.at("round").fail_here(fmt::format("{} is not a round number (1, 2, ...)", m.round));
  m.status = status_from_name(c.at("status"));
  m.created_at = c.at("created_at").as_string();
  m.closed_at = c.at("closed_at").as_string();
  m.state = c.at("state").json();
  m.signature = c.at("signature").as_string();
  m.direction = c.at("direction").as_string();
  m.hypothesis = c.at("hypothesis").as_string();
  m.surfaces = strings(c.at("surfaces"));
  m.retained = c.at("retained").json();
  const JsonCursor subs = c.at("submissions");
  subs.expect_array();
  for (std::size_t i = 0; i < subs.size(); ++i) {
    const JsonCursor s = subs.at(i);
    RoundSubmission r;
    r.candidates = strings(s.at("candidates"));
    r.command = s.at("command").as_string();
    r.decisions = s.at("decisions").json();
    r.gain = number_or_null(s, "gain");
    m.submissions.push_back(std::move(r));
  }
  if (const auto a = c.find("agent_runs")) {
    a->expect_array();
    m.agent_runs = a->json();
  }
  if (const auto d = c.find("decision")) m.decision = decision_from_name(d->as_string(), d->where());
  m.gain = number_or_null(c, "gain");
  m.note = c.at("note").as_string();
  if ((m.status == RoundStatus::kClosed) != m.decision.has_value())
    c.at("decision").fail_here("a closed round has exactly one decision, an open one none");
  return m;
}

fs::path round_dir(const fs::path& rounds_root, const std::string& definition, int round) {
  return rounds_root / definition / fmt::format("{:03d}", round);
}

void save_round(const fs::path& dir, const RoundManifest& m) {
  fs::create_directories(dir);
  write_text_file_atomic(dir / kManifestFile, round_manifest_json(m).dump(2) + "\n");
}

RoundManifest load_round(const fs::path& dir) {
  const fs::path file = dir / kManifestFile;
  if (!fs::exists(file)) fail("{}: no round manifest here (kh round start writes one)", file.string());
  return round_manifest_from_json(read_json_file(file), file.string());
}

std::vector<RoundManifest> load_rounds(const fs::path& rounds_root, const std::string& definition) {
  std::vector<RoundManifest> rounds;
  const fs::path dir = rounds_root / definition;
  if (!fs::is_directory(dir)) return rounds;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::exists(e.path() / kManifestFile)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    RoundManifest m = load_round(d);
    if (m.definition != definition)
      fail("{}: the manifest is for {}, in the folder of {}", (d / kManifestFile).string(),
           m.definition, definition);
    rounds.push_back(std::move(m));
  }
  std::sort(rounds.begin(), rounds.end(),
            [](const RoundManifest& a, const RoundManifest& b) { return a.round < b.round; });
  return rounds;
}

std::vector<RoundRecord> round_history(const std::vector<RoundManifest>& rounds) {
  std::vector<RoundRecord> history;
  for (const auto& m : rounds) {
    if (m.status != RoundStatus::kClosed) continue;
    RoundRecord r;
    r.round = m.round;
    r.state_signature = m.signature;
    r.direction = m.direction;
    r.decision = *m.decision;
    r.gain = m.gain;
    history.push_back(std::move(r));
  }
  return history;
}

}  // namespace kh::ctl
