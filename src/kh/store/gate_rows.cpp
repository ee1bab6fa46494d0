#include "kh/store/gate_rows.h"

#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh::rows {

const char* const kNoiseFloorColumns =
    "id, definition, candidate, gpu, timing_method, environment, minimum_effect, "
    "distribution_spread, median_workload_spread, max_workload_spread, workload_spread, options, "
    "created_at";

const char* const kGateColumns =
    "id, definition, candidate_a, candidate_b, stage, gpu, timing_method, environment, objective, "
    "min_effect, estimate, lo, hi, verdict, both_correct, result, samples, options, created_at";

const char* const kDecisionColumns =
    "id, definition, candidate, against, decision, reason, evidence, created_at";

namespace {

// "?1, ?2, ..., ?n"
std::string marks(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += (i > 1 ? ", ?" : "?") + std::to_string(i);
  return out;
}

std::string insert_sql(const char* table, const char* columns, int n) {
  return std::string("INSERT INTO ") + table + " (" + columns + ") VALUES (" + marks(n) +
         ") ON CONFLICT DO NOTHING";
}

}  // namespace

NoiseFloorRecord read_noise_floor(const SqliteDb& db, const Statement& s) {
  NoiseFloorRecord r;
  r.id = s.text(0);
  const std::string where = "noise_floors." + r.id + ".";
  r.definition = s.text(1);
  r.candidate = s.text(2);
  r.gpu = s.text(3);
  r.timing_method = s.text(4);
  r.environment = s.text(5);
  r.minimum_effect = s.real_or_nan(6);
  r.distribution_spread = s.real_or_nan(7);
  r.median_workload_spread = s.real_or_nan(8);
  r.max_workload_spread = s.real_or_nan(9);
  r.workload_spread = stored_json(db, s, 10, where + "workload_spread");
  r.options = stored_json(db, s, 11, where + "options");
  r.created_at = s.text(12);
  return r;
}

GateRecord read_gate(const SqliteDb& db, const Statement& s) {
  GateRecord r;
  r.id = s.text(0);
  const std::string where = "gates." + r.id + ".";
  r.definition = s.text(1);
  r.candidate_a = s.text(2);
  r.candidate_b = s.text(3);
  r.stage = s.text(4);
  r.gpu = s.text(5);
  r.timing_method = s.text(6);
  r.environment = s.text(7);
  r.objective = s.text(8);
  r.min_effect = s.real_or_nan(9);
  r.estimate = s.real_or_nan(10);
  r.lo = s.real_or_nan(11);
  r.hi = s.real_or_nan(12);
  r.verdict = s.text(13);
  r.both_correct = s.int64(14) != 0;
  r.result = stored_json(db, s, 15, where + "result");
  r.samples = stored_json(db, s, 16, where + "samples");
  r.options = stored_json(db, s, 17, where + "options");
  r.created_at = s.text(18);
  return r;
}

DecisionRecord read_decision(const SqliteDb& db, const Statement& s) {
  DecisionRecord r;
  r.id = s.text(0);
  r.definition = s.text(1);
  r.candidate = s.text(2);
  r.against = s.text(3);  // NULL reads as ""
  r.decision = s.text(4);
  r.reason = s.text(5);
  r.evidence = stored_json(db, s, 6, "decisions." + r.id + ".evidence");
  r.created_at = s.text(7);
  return r;
}

std::vector<GateRecord> read_gates(const SqliteDb& db, Statement& s) {
  std::vector<GateRecord> out;
  while (s.step()) out.push_back(read_gate(db, s));
  return out;
}

std::vector<DecisionRecord> read_decisions(const SqliteDb& db, Statement& s) {
  std::vector<DecisionRecord> out;
  while (s.step()) out.push_back(read_decision(db, s));
  return out;
}

std::string insert_noise_floor(SqliteDb& db, NoiseFloorRecord r) {
  for (std::string* text : {&r.definition, &r.gpu, &r.timing_method}) *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = noise_floor_id(r);
  Statement s(db, insert_sql("noise_floors", kNoiseFloorColumns, 13));
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.candidate)
      .bind(4, r.gpu)
      .bind(5, r.timing_method)
      .bind_text_or_null(6, r.environment)
      .bind(7, r.minimum_effect)
      .bind(8, r.distribution_spread)
      .bind(9, r.median_workload_spread)
      .bind(10, r.max_workload_spread)
      .bind(11, json_text(r.workload_spread))
      .bind(12, json_text(r.options))
      .bind(13, r.created_at);
  s.run();
  return r.id;
}

std::string insert_gate(SqliteDb& db, GateRecord r) {
  for (std::string* text : {&r.definition, &r.gpu, &r.timing_method, &r.objective})
    *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = gate_id(r);
  Statement s(db, insert_sql("gates", kGateColumns, 19));
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.candidate_a)
      .bind(4, r.candidate_b)
      .bind(5, r.stage)
      .bind(6, r.gpu)
      .bind(7, r.timing_method)
      .bind_text_or_null(8, r.environment)
      .bind(9, r.objective)
      .bind(10, r.min_effect)
      .bind(11, r.estimate)
      .bind(12, r.lo)
      .bind(13, r.hi)
      .bind(14, r.verdict)
      .bind(15, r.both_correct ? 1 : 0)
      .bind(16, json_text(r.result))
      .bind(17, json_text(r.samples))
      .bind(18, json_text(r.options))
      .bind(19, r.created_at);
  s.run();
  return r.id;
}

std::string insert_decision(SqliteDb& db, DecisionRecord r) {
  for (std::string* text : {&r.definition, &r.reason}) *text = valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = decision_id(r);
  Statement s(db, insert_sql("decisions", kDecisionColumns, 8));
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.candidate)
      .bind_text_or_null(4, r.against)
      .bind(5, r.decision)
      .bind(6, r.reason)
      .bind(7, json_text(r.evidence))
      .bind(8, r.created_at);
  s.run();
  return r.id;
}

}  // namespace kh::rows
