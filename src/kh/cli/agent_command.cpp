// `kh agent D --cmd 'SHELL COMMAND' [--cmd ...] --rounds N [--budget GPU-MINUTES]`: the
// optimisation loop with an external coding agent, under control. Each round (round_steps.h):
//   1. start (or take up the open, not yet submitted round): state, direction, brief.md;
//   2. run the current agent command in a fresh work folder, rounds/<D>/<NNN>/work/: the brief on
//      stdin and in $KH_BRIEF, a copy of --seed (the retained source, say) in $KH_SEED, and $KH_OUT
//      for the candidate folders it hands back; killed with its process group after
//      --agent-timeout (core/process.h). The store is kept out of its reach: snapshotted before
//      and, if the agent changed it, restored (the round then fails: its candidates are not taken);
//   3. take only the candidate folders under $KH_OUT (a candidate.toml each), copied by content
//      hash into rounds/<D>/<NNN>/candidates/<hash>/, and submit them (kh promote, --promote
//      options); the time spent there counts against --budget. Notes the agent wrote to
//      $KH_OUT/notes.md are recorded in the store for it (kh note's record), since it may not
//      write the store itself;
//   4. close the round: kh promote's best decision, or failed (crash, timeout, nothing handed
//      back, store written) — recorded, never fatal to the loop;
//   5. after a round the supervisor reads the history; any finding moves to the next --cmd (e.g.
//      another model family).
// Stops after --rounds rounds or once the budget is spent. With --approve (the default when a
// person is at the terminal) a promotion kh promote grants waits for kh approve: the loop stops
// there, the round left open, since every later round would be gated against a retained
// candidate about to be replaced; run again, it closes the round with the answer and goes on.
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/round_steps.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "kh/core/sha256.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {
namespace {

namespace fs = std::filesystem;
using ctl::RoundManifest;
using ctl::RoundStatus;
using Clock = std::chrono::steady_clock;

constexpr double kDefaultAgentTimeoutSeconds = 1800;
constexpr double kSupervisorMinEffect = 0.01;

struct Options {
  RoundOptions round;
  std::vector<std::string> commands;
  std::string seed;
  int rounds = 1;
  double budget_minutes = 0;  // 0: no budget
  double agent_timeout = kDefaultAgentTimeoutSeconds;
};

// Runs `command` with sh in `dir`, the brief on stdin, `env` added, in its own process group
// (killed with it after `timeout` seconds); its output is kept in `log`.
ProcessResult run_agent(const std::string& command, const fs::path& dir, const fs::path& brief,
                        std::vector<std::pair<std::string, std::string>> env, double timeout,
                        const fs::path& log) {
  const ProcessResult r =
      run_process({"/bin/sh", "-c", command},
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::duration<double>(timeout)),
                  ProcessOptions{dir, brief, {}, std::move(env)});
  write_text_file_atomic(log, r.output);
  return r;
}

// The store's files as bytes, to put back if an agent touched them.
std::map<fs::path, std::string> snapshot_store(const fs::path& dir) {
  std::map<fs::path, std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files[e.path()] = read_text_file(e.path());
  return files;
}

bool restore_if_changed(const fs::path& dir, const std::map<fs::path, std::string>& before) {
  const auto after = snapshot_store(dir);
  if (after == before) return false;
  for (const auto& [path, bytes] : after)
    if (!before.count(path)) fs::remove(path);
  for (const auto& [path, bytes] : before) write_text_file_atomic(path, bytes);
  return true;
}

// A candidate folder's content hash: its files' relative paths and bytes, in order.
std::string folder_hash(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), dir));
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += f.string() + '\0' + read_text_file(dir / f) + '\0';
  return sha256_hex(all);
}

// The candidate folders the agent handed back, copied by content hash out of its reach.
std::vector<std::string> take_candidates(const fs::path& out, const fs::path& round_dir) {
  std::vector<std::string> taken;
  if (!fs::is_directory(out)) return taken;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(out))
    if (e.is_directory() && fs::exists(e.path() / "candidate.toml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    const fs::path kept = round_dir / "candidates" / folder_hash(d).substr(0, 12);
    if (!fs::exists(kept)) {
      fs::create_directories(kept.parent_path());
      fs::copy(d, kept, fs::copy_options::recursive);
    }
    taken.push_back(kept.string());
  }
  return taken;
}

// $KH_OUT/notes.md, recorded as a note of the definition by the agent's command.
bool record_agent_notes(const RoundOptions& ro, const fs::path& out, const std::string& command,
                        const fs::path& round_dir) {
  const fs::path file = out / "notes.md";
  if (!fs::is_regular_file(file)) return false;
  std::string text = read_text_file(file);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return false;
  text = text.substr(0, text.find_last_not_of(" \t\r\n") + 1);
  text = text.substr(text.find_first_not_of(" \t\r\n"));
  NoteRecord n;
  n.definition = ro.definition;
  n.text = text;
  n.reference = round_dir.string();
  n.author = "kh agent: " + command;
  open_store(ro.store)->put_note(n);
  return true;
}

// The round's promotions waiting for a person: said on stderr, added to the summary.
bool stop_for_approval(const RoundOptions& ro, const RoundManifest& m, const std::string& command,
                       Json& summary) {
  const auto waiting = awaiting_approval(ro, m);
  if (waiting.empty()) return false;
  Json pending = Json::array();
  for (const Json& d : waiting) {
    const std::string approve = approve_command(ro, d);
    std::cerr << fmt::format(
        "kh agent: round {} of {}: the promotion of {} waits for approval: {} (or --reject), "
        "then run kh agent again to close the round and go on\n",
        m.round, ro.definition, d.value("name", std::string("?")), approve);
    pending.push_back({{"id", d.value("id", std::string())},
                       {"candidate", d.value("candidate", std::string())},
                       {"name", d.value("name", std::string())},
                       {"reason", d.value("reason", std::string())},
                       {"approve", approve}});
  }
  summary.push_back({{"round", m.round},
                     {"agent", command},
                     {"decision", "pending"},
                     {"note", "waiting for approval"},
                     {"pending", pending}});
  return true;
}

void run(Options& o) {
  if (o.commands.empty()) fail("kh agent {}: give at least one --cmd", o.round.definition);
  if (o.rounds < 1) fail("--rounds {}: at least 1", o.rounds);
  // Decided once, for every round: the terminal does not change during the loop.
  const bool wait = promotions_wait_for_approval(o.round.approval);
  o.round.approval = {wait, !wait};
  if (wait)
    std::cerr << "kh agent: promotions wait for a person's approval (kh approve; --no-approve "
                 "turns it off)\n";
  std::size_t agent = 0;
  double spent_seconds = 0;
  Json summary = Json::array();
  bool stopped_for_approval = false;
  for (int k = 0; k < o.rounds; ++k) {
    if (o.budget_minutes > 0 && spent_seconds >= o.budget_minutes * 60) {
      std::cerr << fmt::format("kh agent: the budget of {:g} GPU minutes is spent ({:.1f} s)\n",
                               o.budget_minutes, spent_seconds);
      break;
    }
    RoundOptions ro = o.round;
    std::optional<RoundManifest> open = open_round(ro);
    if (open && open->status == RoundStatus::kSubmitting)
      fail("kh agent: round {} of {} was interrupted while submitting; rerun: {}", open->round,
           ro.definition, open->submissions.back().command);
    if (open && open->status == RoundStatus::kSubmitted &&
        stop_for_approval(ro, *open, o.commands[agent], summary)) {
      stopped_for_approval = true;
      break;
    }
    RoundManifest m = open ? *open : start_round(ro).manifest;
    const fs::path dir = round_folder(ro, m);
    std::string failure;
    if (m.status == RoundStatus::kStarted) {
      const fs::path work = dir / "work";
      fs::remove_all(work);
      fs::create_directories(work / "out");
      if (!o.seed.empty()) fs::copy(o.seed, work / "seed", fs::copy_options::recursive);
      const fs::path store_dir = ro.store.dir;
      const auto before = snapshot_store(store_dir);
      std::cerr << fmt::format("kh agent: round {} of {}: running agent {} ({})\n", m.round,
                               ro.definition, agent + 1, o.commands[agent]);
      const ProcessResult a = run_agent(
          o.commands[agent], work, fs::absolute(dir / "brief.md"),
          {{"KH_BRIEF", fs::absolute(dir / "brief.md").string()},
           {"KH_ROUND", std::to_string(m.round)},
           {"KH_DEFINITION", ro.definition},
           {"KH_OUT", fs::absolute(work / "out").string()},
           {"KH_SEED", fs::absolute(work / "seed").string()}},
          o.agent_timeout, dir / fmt::format("agent-{}.log", m.agent_runs.size() + 1));
      const int exit_code = a.signal ? 128 + a.signal : a.exit_code;  // as a shell reports it
      const bool wrote_store = restore_if_changed(store_dir, before);
      std::vector<std::string> candidates;
      if (wrote_store)
        failure = "the agent changed the store: restored, its candidates not taken";
      else if (a.timed_out)
        failure = fmt::format("the agent timed out after {:g} s", o.agent_timeout);
      else
        candidates = take_candidates(work / "out", dir);
      if (failure.empty() && candidates.empty())
        failure = !a.ok() ? fmt::format("the agent failed (exit {}) and handed back nothing",
                                        exit_code)
                          : "the agent handed back no candidate";
      // What a store writer wrote is gone, its notes with it; the others' notes are kept.
      const bool noted =
          !wrote_store && record_agent_notes(ro, work / "out", o.commands[agent], dir);
      m = ctl::load_round(dir);
      m.agent_runs.push_back({{"command", o.commands[agent]},
                              {"exit_code", exit_code},
                              {"timed_out", a.timed_out},
                              {"seconds", a.seconds},
                              {"wrote_store", wrote_store},
                              {"notes", noted},
                              {"candidates", candidates}});
      ctl::save_round(dir, m);
      if (!candidates.empty()) {
        ro.candidates = candidates;
        const auto t0 = Clock::now();
        m = submit_round(ro).manifest;
        spent_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        if (stop_for_approval(ro, m, o.commands[agent], summary)) {
          stopped_for_approval = true;
          break;
        }
      }
    }
    ro.decision = "";
    bool judged = false;
    for (const auto& s : m.submissions)
      for (const auto& d : s.decisions) {
        const std::string label = d.value("decision", std::string());
        // "pending": a promotion a person answered meanwhile; close_round takes the answer.
        judged = judged || label == "promote" || label == "archive" || label == "reject" ||
                 label == "pending";
      }
    if (!judged) {
      ro.decision = "failed";
      ro.note = failure.empty() ? "no candidate could be judged" : failure;
    }
    const RoundStep closed = close_round(ro);
    std::cerr << "kh agent: " << closed.summary;
    summary.push_back({{"round", closed.manifest.round},
                       {"agent", o.commands[agent]},
                       {"decision", ctl::decision_name(*closed.manifest.decision)},
                       {"note", closed.manifest.note}});
    const auto findings =
        ctl::supervise(ctl::round_history(ctl::load_rounds(ro.rounds_dir, ro.definition)),
                       kSupervisorMinEffect);
    if (!findings.empty() && agent + 1 < o.commands.size()) {
      ++agent;
      std::cerr << fmt::format("kh agent: supervisor: {} ({}); next agent: {}\n",
                               ctl::signal_name(findings.front().signal), findings.front().reason,
                               o.commands[agent]);
    }
  }
  if (o.round.json)
    std::cout << Json{{"definition", o.round.definition},
                      {"rounds", summary},
                      {"awaiting_approval", stopped_for_approval},
                      {"submission_seconds", spent_seconds}}
                     .dump(2)
              << "\n";
  else
    for (const auto& s : summary)
      std::cout << fmt::format("round {}: {} ({})\n", s["round"].get<int>(),
                               s["decision"].get<std::string>(), s["note"].get<std::string>());
}

}  // namespace

void add_agent_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "agent", "Run coding-agent commands round after round, under budgets, gating what they hand back");
  cmd->add_option("definition", o->round.definition, "the definition")->required();
  cmd->add_option("--cmd", o->commands,
                  "agent shell command (repeatable: the next is used on a supervisor finding)")
      ->required();
  cmd->add_option("--rounds", o->rounds, "rounds to run")->capture_default_str();
  cmd->add_option("--budget", o->budget_minutes,
                  "GPU minutes (time spent gating) after which no round starts (0: none)");
  cmd->add_option("--agent-timeout", o->agent_timeout, "seconds an agent command may run")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "a candidate folder copied into each work folder ($KH_SEED)");
  cmd->add_option("--state", o->round.state_file, "kh state --json for each round's start");
  cmd->add_option("--profile", o->round.profile,
                  "a stored kh profile for each round's start instead of --state (latest: the "
                  "retained candidate's newest)");
  cmd->add_option("--knowledge", o->round.knowledge, "knowledge base (default: the family's)");
  cmd->add_option("--promote", o->round.promote_options,
                  "kh promote's options, one string split into words as a shell would");
  add_approval_flags(cmd, o->round.approval);
  cmd->add_option("--rounds-dir", o->round.rounds_dir, "where rounds live")->capture_default_str();
  cmd->add_option("--root,--dataset", o->round.root, "dataset folder")->capture_default_str();
  add_store_option(cmd, o->round.store);
  cmd->add_flag("--json", o->round.json, "print the rounds as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
