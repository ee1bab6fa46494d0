#include "kh/store/store_rows.h"

#include <string>

#include "kh/core/error.h"
#include "kh/store/sqlite_db.h"

namespace kh::rows {

// JSON as stored: invalid UTF-8 (from logs) replaced rather than thrown on.
std::string json_text(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

// Text made valid UTF-8, bad bytes replaced by U+FFFD exactly as json_text would write them.
std::string valid_utf8(const std::string& text) {
  return Json::parse(json_text(Json(text))).get<std::string>();
}

Json stored_json(const SqliteDb& db, const Statement& s, int col, std::string_view what) {
  return parse_json(s.text(col), db.path().string() + ": " + std::string(what));
}

const char* const kCandidateColumns =
    "hash, name, definition, parent, params, manifest_blob, created_at";

const char* const kEvaluationColumns =
    "id, candidate, definition, workload, sweep, attempt, status, max_absolute_error, "
    "max_relative_error, matched_ratio, message, log_tail, trials, nondeterministic, options, "
    "timing_method, latency, median, mean, p95, min, max, n, throttled, samples, cost, "
    "floor_seconds, fraction_of_floor, environment, reference_latency, reference_label, seconds, "
    "created_at";

const char* const kSweepColumns =
    "id, plan_key, definition, candidates, options, created_at, finished_at";

const char* const kSweepItemColumns =
    "sweep, position, candidate, workload, state, attempts, flaky, last_evaluation";

SweepItem read_sweep_item(const Statement& s) {
  SweepItem item;
  item.sweep = s.text(0);
  item.position = s.int32(1);
  item.candidate = s.text(2);
  item.workload = s.text(3);
  item.state = parse_sweep_item_state(s.text(4));
  item.attempts = s.int32(5);
  item.flaky = s.int64(6) != 0;
  item.last_evaluation = s.text(7);
  return item;
}

namespace {

void bind_sweep_item(Statement& s, const SweepItem& item) {
  s.bind(1, item.sweep)
      .bind(2, item.position)
      .bind(3, item.candidate)
      .bind(4, item.workload)
      .bind(5, sweep_item_state_name(item.state))
      .bind(6, item.attempts)
      .bind(7, item.flaky ? 1 : 0)
      .bind(8, item.last_evaluation);
}

}  // namespace

void upsert_sweep_item(SqliteDb& db, const SweepItem& item, bool merge_rule) {
  std::string sql = std::string("INSERT INTO sweep_items (") + kSweepItemColumns +
                    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (sweep, position) DO "
                    "UPDATE SET candidate = excluded.candidate, workload = excluded.workload, "
                    "state = excluded.state, attempts = excluded.attempts, flaky = "
                    "excluded.flaky, last_evaluation = excluded.last_evaluation";
  if (merge_rule)
    sql +=
        " WHERE excluded.attempts > sweep_items.attempts OR (excluded.attempts = "
        "sweep_items.attempts AND sweep_items.state = 'pending' AND excluded.state <> 'pending')";
  Statement s(db, sql);
  bind_sweep_item(s, item);
  s.run();
}

CandidateRecord read_candidate(SqliteDb& db, const Statement& s) {
  CandidateRecord c;
  c.hash = s.text(0);
  c.name = s.text(1);
  c.definition = s.text(2);
  c.parent = s.text(3);
  const Json params = stored_json(db, s, 4, "candidates.params of " + c.hash);
  for (const auto& [k, v] : params.items()) c.params[k] = v.get<std::string>();
  c.manifest_blob = s.text(5);
  c.created_at = s.text(6);
  Statement src(db, "SELECT path, blob FROM candidate_sources WHERE candidate = ? ORDER BY path");
  src.bind(1, c.hash);
  while (src.step()) c.sources[src.text(0)] = src.text(1);
  return c;
}

std::vector<CandidateRecord> read_candidates(SqliteDb& db, Statement& s) {
  std::vector<CandidateRecord> out;
  while (s.step()) out.push_back(read_candidate(db, s));
  return out;
}

EvaluationRecord read_evaluation(SqliteDb& db, const Statement& s) {
  EvaluationRecord e;
  e.id = s.text(0);
  const std::string where = "evaluations." + e.id + ".";
  e.candidate = s.text(1);
  e.definition = s.text(2);
  e.workload = s.text(3);
  e.sweep = s.text(4);
  e.attempt = s.int32(5);
  e.status = s.text(6);
  e.max_absolute_error = s.real_or_nan(7);
  e.max_relative_error = s.real_or_nan(8);
  e.matched_ratio = s.real_or_nan(9);
  e.message = s.text(10);
  e.log_tail = s.text(11);
  e.trials = s.int32(12);
  e.nondeterministic = s.int64(13) != 0;
  e.options = stored_json(db, s, 14, where + "options");
  e.timing_method = s.text(15);
  if (!s.is_null(22)) {  // n: present exactly when the evaluation was timed
    SampleSummary m;
    m.latency = s.real_or_nan(16);
    m.median = s.real_or_nan(17);
    m.mean = s.real_or_nan(18);
    m.p95 = s.real_or_nan(19);
    m.min = s.real_or_nan(20);
    m.max = s.real_or_nan(21);
    m.n = s.int32(22);
    m.throttled = s.int32(23);
    e.summary = m;
  }
  e.samples = stored_json(db, s, 24, where + "samples");
  e.cost = stored_json(db, s, 25, where + "cost");
  e.floor_seconds = s.optional_real(26);
  e.fraction_of_floor = s.optional_real(27);
  e.environment = s.text(28);
  e.reference_latency = s.optional_real(29);
  e.reference_label = s.text(30);
  e.seconds = s.real_or_nan(31);
  e.created_at = s.text(32);
  return e;
}

std::vector<EvaluationRecord> read_evaluations(SqliteDb& db, Statement& s) {
  std::vector<EvaluationRecord> out;
  while (s.step()) out.push_back(read_evaluation(db, s));
  return out;
}

SweepRecord read_sweep(SqliteDb& db, const Statement& s) {
  SweepRecord r;
  r.id = s.text(0);
  r.plan_key = s.text(1);
  r.definition = s.text(2);
  for (const auto& h : stored_json(db, s, 3, "sweeps.candidates of " + r.id))
    r.candidates.push_back(h.get<std::string>());
  r.options = stored_json(db, s, 4, "sweeps.options of " + r.id);
  r.created_at = s.text(5);
  r.finished_at = s.text(6);
  return r;
}

std::vector<SweepRecord> read_sweeps(SqliteDb& db, Statement& s) {
  std::vector<SweepRecord> out;
  while (s.step()) out.push_back(read_sweep(db, s));
  return out;
}

std::optional<SweepItem> sweep_item(SqliteDb& db, const std::string& sweep, int position) {
  Statement s(db, std::string("SELECT ") + kSweepItemColumns +
                      " FROM sweep_items WHERE sweep = ? AND position = ?");
  s.bind(1, sweep).bind(2, position);
  if (!s.step()) return std::nullopt;
  return read_sweep_item(s);
}

// Inserts (or ignores) the evaluation and returns its id.
std::string insert_evaluation(SqliteDb& db, EvaluationRecord e) {
  e.message = valid_utf8(e.message);
  e.log_tail = valid_utf8(e.log_tail);
  e.reference_label = valid_utf8(e.reference_label);
  if (e.created_at.empty()) e.created_at = utc_timestamp();
  if (e.id.empty()) e.id = evaluation_id(e);
  Statement s(db, std::string("INSERT INTO evaluations (") + kEvaluationColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                      "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, "
                      "?29, ?30, ?31, ?32, ?33) ON CONFLICT DO NOTHING");
  s.bind(1, e.id)
      .bind(2, e.candidate)
      .bind(3, e.definition)
      .bind(4, e.workload)
      .bind(5, e.sweep)
      .bind(6, e.attempt)
      .bind(7, e.status)
      .bind(8, e.max_absolute_error)
      .bind(9, e.max_relative_error)
      .bind(10, e.matched_ratio)
      .bind(11, e.message)
      .bind(12, e.log_tail)
      .bind(13, e.trials)
      .bind(14, e.nondeterministic ? 1 : 0)
      .bind(15, json_text(e.options))
      .bind(16, e.timing_method);
  if (e.summary) {
    const SampleSummary& m = *e.summary;
    s.bind(17, m.latency)
        .bind(18, m.median)
        .bind(19, m.mean)
        .bind(20, m.p95)
        .bind(21, m.min)
        .bind(22, m.max)
        .bind(23, m.n)
        .bind(24, m.throttled);
  } else {
    for (int i = 17; i <= 24; ++i) s.bind_null(i);
  }
  s.bind(25, json_text(e.samples))
      .bind(26, json_text(e.cost))
      .bind(27, e.floor_seconds)
      .bind(28, e.fraction_of_floor)
      .bind_text_or_null(29, e.environment)
      .bind(30, e.reference_latency)
      .bind(31, e.reference_label)
      .bind(32, e.seconds)
      .bind(33, e.created_at);
  s.run();
  return e.id;
}

}  // namespace kh::rows
