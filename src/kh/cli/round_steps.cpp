// The steps of a round (kh round's verbs, and kh agent's loop), on the files of
// ctl/round_manifest.h: each returns the manifest as it left it and a summary for people.
#include "kh/cli/round_steps.h"

#include <chrono>
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "kh/build/kh_home.h"
#include "kh/check/tolerance.h"
#include "kh/cli/gate_options.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/process.h"
#include "kh/core/shell_words.h"
#include "kh/ctl/knowledge_base.h"
#include "kh/ctl/round_brief.h"
#include "kh/spec/dataset.h"
#include "kh/spec/regimes.h"
#include "kh/store/artifact_store.h"
#include "kh/store/records.h"

namespace kh::cli {
namespace {

namespace fs = std::filesystem;
using ctl::RoundManifest;
using ctl::RoundStatus;

constexpr double kSupervisorMinEffect = 0.01;
constexpr auto kPromoteTimeout = std::chrono::hours(24);  // a full gate and replay take minutes  // the gate's default minimum effect
constexpr const char* kBriefFile = "brief.md";
const char* const kTimingPreference[] = {"cupti", "events", "graph", "wall"};


}  // namespace

std::optional<RoundManifest> open_round(const RoundOptions& o) {
  auto rounds = ctl::load_rounds(o.rounds_dir, o.definition);
  if (rounds.empty() || rounds.back().status == RoundStatus::kClosed) return std::nullopt;
  return rounds.back();
}

namespace {

RoundManifest require_open_round(const RoundOptions& o, const char* verb) {
  auto m = open_round(o);
  if (!m)
    fail("kh round {} {}: no open round under {} (kh round start {})", verb, o.definition,
         (fs::path(o.rounds_dir) / o.definition).string(), o.definition);
  return *m;
}

// The knowledge base of the definition's family: --knowledge, else the file of knowledge/ that
// lists the definition.
std::optional<ctl::KnowledgeBase> knowledge_for(const RoundOptions& o) {
  if (!o.knowledge.empty()) return ctl::load_knowledge_base(o.knowledge);
  fs::path dir;
  try {
    dir = kh_home() / "knowledge";
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!fs::is_directory(dir)) return std::nullopt;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    ctl::KnowledgeBase kb = ctl::load_knowledge_base(e.path());
    if (std::find(kb.definitions.begin(), kb.definitions.end(), o.definition) !=
        kb.definitions.end())
      return kb;
  }
  return std::nullopt;
}

// kh state --json's output as the state the knowledge base reads.
// The stored profile `which` names for a round of `definition`: "latest" is the newest profile of
// the retained candidate (the one a round improves), else the definition's newest; anything else
// a profile id or a unique prefix of one.
ProfileRecord chosen_profile(const ArtifactStore& store, const std::string& definition,
                             const std::string& which) {
  const std::vector<ProfileRecord> all = store.profiles(definition);
  if (all.empty())
    fail("kh round start {} --profile {}: the store has no profile of {} (kh profile CAND -w W "
         "records one)",
         definition, which, definition);
  if (which == "latest") {
    if (const auto retained = store.retained(definition))
      for (const auto& p : all)
        if (p.candidate == retained->candidate) return p;
    return all.front();
  }
  std::vector<const ProfileRecord*> hits;
  for (const auto& p : all)
    if (p.id.rfind(which, 0) == 0) hits.push_back(&p);
  if (hits.size() != 1)
    fail("kh round start {} --profile {}: {} stored profiles of {} match (kh profile --list {})",
         definition, which, hits.size(), definition, definition);
  return *hits[0];
}

ctl::BottleneckState state_from_json(const Json& j, const std::string& source) {
  const JsonCursor root(j, source);
  const JsonCursor s = root.at("state");
  ctl::BottleneckState state;
  state.dominant_kernel = s.at("dominant_kernel").as_string();
  state.dominant_share = s.at("dominant_share").as_number();
  state.bottleneck = ctl::bottleneck_from_name(s.at("bottleneck").as_string(), s.where());
  state.evidence = s.at("evidence").as_string();
  if (const auto h = s.find("headroom")) state.headroom = h->as_number();
  return state;
}

void add_retained(const RoundOptions& o, ArtifactStore& store, const Dataset& ds,
                  const Definition& def, RoundManifest& m, ctl::BriefInputs& in) {
  const auto retained = store.retained(o.definition);
  std::map<std::string, double> latencies;
  if (retained) {
    const auto c = store.candidate(retained->candidate);
    m.retained = {{"candidate", retained->candidate},
                  {"name", c ? c->name : ""},
                  {"since", retained->created_at},
                  {"reason", retained->reason}};
    if (c)
      for (const char* method : kTimingPreference) {
        latencies = stored_latencies(store, *c, method);
        if (!latencies.empty()) {
          in.timing_method = method;
          break;
        }
      }
  }
  const RegimePartition p = partition_regimes(def, ds.workloads(o.definition));
  const auto shares = latency_shares(p, latencies);
  for (std::size_t i = 0; i < p.regimes.size(); ++i) {
    ctl::BriefRegime g;
    g.label = p.regimes[i].label;
    g.workloads = static_cast<int>(p.regimes[i].workloads.size());
    for (const auto& s : shares)
      if (s.regime == i && s.measured > 0) {
        g.retained_share = s.share;
        g.retained_mean_seconds = s.latency_sum / s.measured;
      }
    in.regimes.push_back(std::move(g));
  }
}

}  // namespace

RoundStep start_round(const RoundOptions& o) {
  const Dataset ds = Dataset::open(o.root);
  const Definition& def = ds.definition(o.definition);
  const auto rounds = ctl::load_rounds(o.rounds_dir, o.definition);
  if (!rounds.empty() && rounds.back().status != RoundStatus::kClosed)
    fail("kh round start {}: round {} is still {} (kh round resume {}, or kh round close it)",
         o.definition, rounds.back().round, ctl::round_status_name(rounds.back().status),
         o.definition);
  const auto history = ctl::round_history(rounds);

  RoundManifest m;
  m.definition = o.definition;
  m.round = rounds.empty() ? 1 : rounds.back().round + 1;
  m.created_at = utc_timestamp();
  ctl::BriefInputs in;
  in.definition = &def;
  in.definition_path = (fs::path("definitions") / def.op_type / (def.name + ".json")).string();
  in.tolerance = official_tolerance(def);
  in.findings = ctl::supervise(history, kSupervisorMinEffect);

  std::optional<ctl::BottleneckState> state;
  if (!o.state_file.empty() && !o.profile.empty())
    fail("kh round start {}: give --state or --profile, not both", o.definition);
  if (!o.state_file.empty() || !o.profile.empty()) {
    std::string source = o.state_file;
    Json j;
    if (!o.profile.empty()) {
      auto store = open_store(o.store);
      const ProfileRecord p = chosen_profile(*store, o.definition, o.profile);
      source = "stored profile " + p.id.substr(0, 12);
      j = parse_json(store->blob(p.profile_blob), source);
    } else {
      j = read_json_file(o.state_file);
    }
    state = state_from_json(j, source);
    m.state = {{"state", j.at("state")}};
    if (j.contains("kernels")) m.state["kernels"] = j.at("kernels");
    m.signature = state->signature();
  }
  const auto kb = knowledge_for(o);
  if (!o.direction.empty()) {
    if (!kb) fail("--direction {}: no knowledge base lists {} (give --knowledge)", o.direction, o.definition);
    const auto it = std::find_if(kb->directions.begin(), kb->directions.end(),
                                 [&](const ctl::Direction& d) { return d.name == o.direction; });
    if (it == kb->directions.end())
      fail("--direction {}: the {} knowledge base has no such direction", o.direction, kb->family);
    m.direction = it->name;
    m.hypothesis = it->hypothesis;
    m.surfaces = it->surfaces;
  } else if (kb && state) {
    in.choice = ctl::choose_direction(*kb, *state, history, o.definition);
    if (in.choice->direction) {
      m.direction = in.choice->direction->name;
      m.hypothesis = in.choice->direction->hypothesis;
      m.surfaces = in.choice->direction->surfaces;
    }
  } else {
    in.choice = ctl::DirectionChoice{std::nullopt,
                                     kb ? "no profile was given (--state)"
                                        : "no knowledge base lists " + o.definition,
                                     {}};
  }
  const auto store = open_store(o.store);
  add_retained(o, *store, ds, def, m, in);
  // Reconnaissance: the store's notes (kh note), and the notes file of earlier rounds if any.
  for (const NoteRecord& n : store->notes(o.definition))
    in.recorded_notes.push_back({n.created_at, n.author, n.text, n.reference});
  const fs::path notes = fs::path(o.rounds_dir) / o.definition / "notes.md";
  if (fs::exists(notes)) {
    in.notes = read_text_file(notes);
    in.notes_path = notes.string();
  }

  // The brief first, the manifest last: a round exists once its manifest does.
  const fs::path dir = ctl::round_dir(o.rounds_dir, o.definition, m.round);
  fs::create_directories(dir);
  write_text_file_atomic(dir / kBriefFile, ctl::render_brief(m, in));
  ctl::save_round(dir, m);
  std::string text = fmt::format(
      "round {} of {} started: {}\n  direction: {}\n  brief: {}\n  next: hand candidates to kh "
      "round submit {} CAND...\n",
      m.round, o.definition, dir.string(),
      m.direction.empty() ? "none (" + (in.choice ? in.choice->reason : "") + ")" : m.direction,
      (dir / kBriefFile).string(), o.definition);
  for (const auto& f : in.findings)
    text += fmt::format("  supervisor: {}: {} ({})\n", ctl::signal_name(f.signal), f.reason,
                        ctl::recommendation_name(f.recommendation));
  return {m, text, in.findings};
}

RoundStep resume_round(const RoundOptions& o) {
  const auto rounds = ctl::load_rounds(o.rounds_dir, o.definition);
  if (rounds.empty()) fail("kh round resume {}: no round yet (kh round start {})", o.definition, o.definition);
  const RoundManifest m = rounds.back();
  const fs::path dir = ctl::round_dir(o.rounds_dir, o.definition, m.round);
  std::string next;
  switch (m.status) {
    case RoundStatus::kStarted:
      next = fmt::format("read {}, then kh round submit {} CAND...", (dir / kBriefFile).string(),
                         o.definition);
      break;
    case RoundStatus::kSubmitting:
      next = "a submission was interrupted; rerun it: " + m.submissions.back().command;
      break;
    case RoundStatus::kSubmitted:
      next = fmt::format("kh round submit {} more candidates, or kh round close {}", o.definition,
                         o.definition);
      for (const Json& d : awaiting_approval(o, m))
        next = fmt::format("{} awaits approval: {} (or --reject), then kh round close {}",
                           d.value("name", std::string("a candidate")), approve_command(o, d),
                           o.definition);
      break;
    case RoundStatus::kClosed:
      next = fmt::format("closed ({}); kh round start {} begins round {}",
                         ctl::decision_name(*m.decision), o.definition, m.round + 1);
      break;
  }
  return {m,
          fmt::format("round {} of {}: {}, direction {}\n  next: {}\n", m.round, o.definition,
                      ctl::round_status_name(m.status), m.direction.empty() ? "none" : m.direction,
                      next),
          {}};
}

namespace {

// The relative gain in a promote decision's reason ("+2.8 % [2.2, 3.4] over ..."), if any.
std::optional<double> gain_of(const Json& decision) {
  static const std::regex number(R"(([+-]?\d+(\.\d+)?) %)");
  std::smatch match;
  const std::string reason = decision.value("reason", std::string());
  if (std::regex_search(reason, match, number)) return std::stod(match[1].str()) / 100;
  return std::nullopt;
}

int decision_rank(const std::string& d) {  // higher is better
  return d == "promote" ? 3 : d == "archive" ? 2 : d == "reject" ? 1 : 0;
}

constexpr const char* kPending = "pending";  // kh promote --approve's label for a waiting promotion

bool is_pending(const Json& d) {
  return d.value("decision", std::string()) == kPending;
}

// The store's answer to a pending decision of the round; refuses an id the store does not know
// (the round was submitted with another --store).
std::optional<ApprovalRecord> answer_of(const ArtifactStore& store, const RoundOptions& o,
                                        const Json& d) {
  const std::string id = d.value("id", std::string());
  if (!store.pending_promotion(id))
    fail(
        "kh round {}: pending promotion {} of {} is not in the store {} (submitted with another "
        "--store?)",
        o.definition, id.substr(0, 12), d.value("name", std::string("?")), o.store.dir);
  return store.approval(id);
}

}  // namespace

std::string approve_command(const RoundOptions& o, const Json& pending) {
  return fmt::format(
      "kh approve {} {}{}", o.definition, pending.value("id", std::string()).substr(0, 12),
      o.store.dir == StoreOptions{}.dir ? "" : " --store " + shell_quote(o.store.dir));
}

std::vector<Json> awaiting_approval(const RoundOptions& o, const RoundManifest& m) {
  std::vector<Json> waiting;
  bool any = false;
  for (const auto& s : m.submissions)
    for (const auto& d : s.decisions) any = any || is_pending(d);
  if (!any) return waiting;
  const auto store = open_store(o.store);
  for (const auto& s : m.submissions)
    for (const auto& d : s.decisions)
      if (is_pending(d) && !answer_of(*store, o, d)) waiting.push_back(d);
  return waiting;
}

RoundStep submit_round(const RoundOptions& o) {
  RoundManifest m = require_open_round(o, "submit");
  if (o.candidates.empty()) fail("kh round submit {}: give the candidate folders", o.definition);
  const fs::path dir = ctl::round_dir(o.rounds_dir, o.definition, m.round);
  std::vector<std::string> argv = {self_executable(), "promote"};
  argv.insert(argv.end(), o.candidates.begin(), o.candidates.end());
  for (const auto& w : shell_words(o.promote_options, "--promote")) argv.push_back(w);
  const bool wait = promotions_wait_for_approval(o.approval);
  if (wait) argv.push_back("--approve");
  argv.insert(argv.end(), {"--store", o.store.dir, "--json"});
  ctl::RoundSubmission s;
  s.candidates = o.candidates;
  for (const auto& a : argv) s.command += (s.command.empty() ? "" : " ") + shell_quote(a);
  m.submissions.push_back(s);
  m.status = RoundStatus::kSubmitting;  // a kill from here on leaves the command to rerun
  ctl::save_round(dir, m);

  // kh promote's progress goes to a log beside the manifest; its stdout is the decisions.
  const fs::path log = dir / fmt::format("promote-{}.log", m.submissions.size());
  const ProcessResult run = run_process(argv, kPromoteTimeout, ProcessOptions{{}, {}, log, {}});
  Json decisions;
  try {
    decisions = parse_json(run.output, "kh promote's output");
  } catch (const Error& e) {
    decisions = Json::array(
        {{{"decision", "failed"},
          {"reason", fmt::format("kh promote exited with status {} and no decisions (see {})",
                                 run.exit_code, log.string())}}});
  }
  auto& last = m.submissions.back();
  last.decisions = decisions;
  for (const auto& d : decisions)
    if (d.value("decision", std::string()) == "promote" ||
        d.value("decision", std::string()) == "archive" || is_pending(d))
      if (const auto g = gain_of(d); g && (!last.gain || *g > *last.gain)) last.gain = g;
  m.status = RoundStatus::kSubmitted;
  ctl::save_round(dir, m);
  std::string text =
      fmt::format("round {} of {}: submitted {} candidate(s){}\n", m.round, o.definition,
                  o.candidates.size(), wait ? ", promotions waiting for approval" : "");
  std::string approvals;
  for (const auto& d : decisions) {
    text += fmt::format("  {}: {} — {}\n", d.value("name", std::string("?")),
                        d.value("decision", std::string("?")), d.value("reason", std::string()));
    if (is_pending(d)) approvals += fmt::format("{} (or --reject), then ", approve_command(o, d));
  }
  text += fmt::format("  next: {}kh round close {}\n", approvals, o.definition);
  return {m, text, {}};
}

RoundStep close_round(const RoundOptions& o) {
  RoundManifest m = require_open_round(o, "close");
  if (m.status == RoundStatus::kSubmitting)
    fail("kh round close {}: round {}'s submission was interrupted; rerun it first: {}",
         o.definition, m.round, m.submissions.back().command);
  // A pending promotion takes the answer a person gave it; without one the round cannot close.
  std::unique_ptr<ArtifactStore> store;
  for (auto& s : m.submissions)
    for (auto& d : s.decisions) {
      if (!is_pending(d)) continue;
      if (!store) store = open_store(o.store);
      const auto answer = answer_of(*store, o, d);
      if (!answer)
        fail(
            "kh round close {}: round {}'s promotion of {} waits for approval: {} (or --reject), "
            "then close",
            o.definition, m.round, d.value("name", std::string("?")), approve_command(o, d));
      d["decision"] = answer->approved ? "promote" : "reject";
      d["approval"] = {{"approved", answer->approved},
                       {"by", answer->decided_by},
                       {"at", answer->created_at},
                       {"note", answer->note},
                       {"decision", answer->decision}};
    }
  std::string best;
  std::optional<double> gain;
  for (const auto& s : m.submissions)
    for (const auto& d : s.decisions) {
      const std::string label = d.value("decision", std::string());
      if (decision_rank(label) > decision_rank(best)) {
        best = label;
        gain = s.gain;
      }
    }
  std::string label = o.decision;
  if (label.empty()) {
    if (best.empty())
      fail("kh round close {}: no candidate was judged in round {}: give --decision failed (or "
           "reject) and a --note saying why",
           o.definition, m.round);
    label = best;
  } else if (!best.empty() && decision_rank(label) > decision_rank(best)) {
    fail("--decision {}: round {}'s best submitted decision is {}; a round cannot close better "
         "than kh promote judged it",
         label, m.round, best);
  }
  m.decision = ctl::decision_from_name(label, "--decision");
  m.gain = gain;
  m.note = o.note;
  m.status = RoundStatus::kClosed;
  m.closed_at = utc_timestamp();
  ctl::save_round(ctl::round_dir(o.rounds_dir, o.definition, m.round), m);
  return {m,
          fmt::format("round {} of {} closed: {}{}\n", m.round, o.definition, label,
                      m.direction.empty() ? "" : " (direction " + m.direction + ")"),
          {}};
}

std::filesystem::path round_folder(const RoundOptions& o, const ctl::RoundManifest& m) {
  return ctl::round_dir(o.rounds_dir, o.definition, m.round);
}

}  // namespace kh::cli
