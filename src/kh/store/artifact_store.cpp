#include "kh/store/artifact_store.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "kh/build/candidate.h"
#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/gpu/sample_stats.h"
#include "kh/store/artifact_store_impl.h"
#include "kh/store/blob_store.h"
#include "kh/store/gate_rows.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh {
namespace {

// Puts insert with "ON CONFLICT DO NOTHING", never "INSERT OR IGNORE": IGNORE would also drop a
// row that breaks NOT NULL or a column type silently; only an existing identity is skipped.

using namespace rows;

void require_identity(const std::string& value, std::string_view what) {
  if (value.empty()) fail("cannot store {} without its identity (empty)", what);
}

// Length-prefixed fields, so no two different inputs hash the same byte stream.
void add_field(Sha256& hash, std::string_view name, std::string_view value) {
  hash.update(name).update(std::string_view("\0", 1));
  hash.update(std::to_string(value.size())).update(std::string_view("\0", 1)).update(value);
}

}  // namespace

ArtifactStore::ArtifactStore(const StoreLocation& where) : impl_(std::make_unique<Impl>(where)) {}
ArtifactStore::~ArtifactStore() = default;

const StoreLocation& ArtifactStore::location() const {
  return impl_->where;
}
int ArtifactStore::schema_version() const {
  return impl_->version;
}
SqliteDb& ArtifactStore::db() {
  return impl_->db;
}

std::string ArtifactStore::put_blob(std::string_view bytes) {
  // The file first, then its row: a row always has its file.
  const std::string hash = impl_->blobs.put(bytes);
  Statement s(impl_->db,
              "INSERT INTO blobs (hash, size, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, hash).bind(2, static_cast<std::int64_t>(bytes.size())).bind(3, utc_timestamp()).run();
  return hash;
}

std::string ArtifactStore::blob(const std::string& hash) const {
  return impl_->blobs.get(hash);
}
bool ArtifactStore::has_blob(const std::string& hash) const {
  return impl_->blobs.has(hash);
}

void ArtifactStore::put_definition(const std::string& name, const Json& definition) {
  require_identity(name, "a definition");
  Statement s(
      impl_->db,
      "INSERT INTO definitions (name, json, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, name).bind(2, json_text(definition)).bind(3, utc_timestamp()).run();
}

void ArtifactStore::put_workload(const std::string& definition, const std::string& uuid,
                                 const Json& workload) {
  require_identity(uuid, "a workload");
  Statement s(impl_->db,
              "INSERT INTO workloads (uuid, definition, json, created_at) "
              "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, uuid).bind(2, definition).bind(3, json_text(workload)).bind(4, utc_timestamp()).run();
}

std::optional<Json> ArtifactStore::workload_json(const std::string& uuid) const {
  Statement s(impl_->db, "SELECT json FROM workloads WHERE uuid = ?");
  s.bind(1, uuid);
  if (!s.step()) return std::nullopt;
  return stored_json(impl_->db, s, 0, "workloads.json of " + uuid);
}

std::optional<Json> ArtifactStore::definition_json(const std::string& name) const {
  Statement s(impl_->db, "SELECT json FROM definitions WHERE name = ?");
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return stored_json(impl_->db, s, 0, "definitions.json of " + name);
}

void ArtifactStore::put_candidate(const CandidateRecord& c) {
  require_identity(c.hash, "a candidate");
  Json params = Json::object();
  for (const auto& [k, v] : c.params) params[k] = v;
  Transaction t(impl_->db);
  Statement s(impl_->db, std::string("INSERT INTO candidates (") + kCandidateColumns +
                             ") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, c.hash)
      .bind(2, c.name)
      .bind(3, c.definition)
      .bind(4, c.parent)
      .bind(5, json_text(params))
      .bind(6, c.manifest_blob)
      .bind(7, c.created_at.empty() ? utc_timestamp() : c.created_at)
      .run();
  Statement src(impl_->db,
                "INSERT INTO candidate_sources (candidate, path, blob) VALUES (?, ?, ?) ON "
                "CONFLICT DO NOTHING");
  for (const auto& [path, blob] : c.sources) {
    src.reset();
    src.bind(1, c.hash).bind(2, path).bind(3, blob).run();
  }
  t.commit();
}

std::optional<CandidateRecord> ArtifactStore::candidate(const std::string& hash) const {
  Statement s(impl_->db,
              std::string("SELECT ") + kCandidateColumns + " FROM candidates WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  return read_candidate(impl_->db, s);
}

std::vector<CandidateRecord> ArtifactStore::find_candidates(const std::string& name_or_hash) const {
  std::string prefix = name_or_hash;
  std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  const bool hex = prefix.size() >= 6 && prefix.size() <= 64 &&
                   std::all_of(prefix.begin(), prefix.end(), [](char ch) {
                     return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
                   });
  // A range on the primary key: every hash with this prefix sorts in [prefix, prefix + "g").
  Statement s(impl_->db, std::string("SELECT ") + kCandidateColumns +
                             " FROM candidates WHERE name = ?1 OR (?2 AND hash >= ?3 AND hash < "
                             "?4) ORDER BY created_at DESC, hash");
  s.bind(1, name_or_hash).bind(2, hex ? 1 : 0).bind(3, prefix).bind(4, prefix + "g");
  return read_candidates(impl_->db, s);
}

std::vector<CandidateRecord> ArtifactStore::candidates(const std::string& definition) const {
  Statement s(impl_->db, std::string("SELECT ") + kCandidateColumns +
                             " FROM candidates WHERE ?1 = '' OR definition = ?1 "
                             "ORDER BY created_at DESC, hash");
  s.bind(1, definition);
  return read_candidates(impl_->db, s);
}

void ArtifactStore::put_build(const BuildRecord& b) {
  BuildRecord r = b;
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = sha256_hex(r.candidate + "\n" + r.key + "\n" + r.created_at);
  Statement s(impl_->db,
              "INSERT INTO builds (id, candidate, key, ok, cached, log_blob, seconds, "
              "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, r.id)
      .bind(2, r.candidate)
      .bind(3, r.key)
      .bind(4, r.ok ? 1 : 0)
      .bind(5, r.cached ? 1 : 0)
      .bind(6, r.log_blob)
      .bind(7, r.seconds)
      .bind(8, r.created_at)
      .run();
}

std::vector<BuildRecord> ArtifactStore::builds(const std::string& candidate) const {
  Statement s(impl_->db,
              "SELECT id, candidate, key, ok, cached, log_blob, seconds, created_at FROM builds "
              "WHERE candidate = ? ORDER BY created_at, id");
  s.bind(1, candidate);
  std::vector<BuildRecord> out;
  while (s.step()) {
    BuildRecord b;
    b.id = s.text(0);
    b.candidate = s.text(1);
    b.key = s.text(2);
    b.ok = s.int64(3) != 0;
    b.cached = s.int64(4) != 0;
    b.log_blob = s.text(5);
    b.seconds = s.real_or_nan(6);
    b.created_at = s.text(7);
    out.push_back(std::move(b));
  }
  return out;
}

void ArtifactStore::put_environment(const EnvironmentRecord& e) {
  const std::string text = json_text(e.environment);
  Statement s(
      impl_->db,
      "INSERT INTO environments (hash, json, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, e.hash.empty() ? sha256_hex(text) : e.hash).bind(2, text).bind(3, utc_timestamp());
  s.run();
}

std::optional<EnvironmentRecord> ArtifactStore::environment(const std::string& hash) const {
  Statement s(impl_->db, "SELECT json FROM environments WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  return EnvironmentRecord{hash, stored_json(impl_->db, s, 0, "environments.json of " + hash)};
}

void ArtifactStore::put_ceilings(const CeilingsRecord& c) {
  const std::string text = json_text(c.ceilings);
  Statement s(impl_->db,
              "INSERT INTO ceilings (hash, gpu, json, created_at) VALUES (?, ?, ?, ?) ON CONFLICT "
              "DO NOTHING");
  s.bind(1, c.hash.empty() ? sha256_hex(text) : c.hash)
      .bind(2, c.gpu)
      .bind(3, text)
      .bind(4, c.created_at.empty() ? utc_timestamp() : c.created_at)
      .run();
}

std::optional<CeilingsRecord> ArtifactStore::latest_ceilings(const std::string& gpu) const {
  Statement s(impl_->db,
              "SELECT hash, gpu, json, created_at FROM ceilings WHERE gpu = ? "
              "ORDER BY created_at DESC, hash DESC LIMIT 1");
  s.bind(1, gpu);
  if (!s.step()) return std::nullopt;
  CeilingsRecord c;
  c.hash = s.text(0);
  c.gpu = s.text(1);
  c.ceilings = stored_json(impl_->db, s, 2, "ceilings.json of " + c.hash);
  c.created_at = s.text(3);
  return c;
}

void ArtifactStore::put_evaluation(const EvaluationRecord& e) {
  insert_evaluation(impl_->db, e);
}

std::vector<EvaluationRecord> ArtifactStore::evaluations_of_candidate(
    const std::string& candidate) const {
  Statement s(impl_->db, std::string("SELECT ") + kEvaluationColumns +
                             " FROM evaluations WHERE candidate = ? ORDER BY created_at, id");
  s.bind(1, candidate);
  return read_evaluations(impl_->db, s);
}

std::vector<EvaluationRecord> ArtifactStore::evaluations_of_sweep(const std::string& sweep) const {
  Statement s(impl_->db, std::string("SELECT ") + kEvaluationColumns +
                             " FROM evaluations WHERE sweep = ? ORDER BY created_at, id");
  s.bind(1, sweep);
  return read_evaluations(impl_->db, s);
}

void ArtifactStore::put_sweep(const SweepRecord& r) {
  require_identity(r.id, "a sweep");
  Json candidates = Json::array();
  for (const auto& h : r.candidates) candidates.push_back(h);
  Statement s(impl_->db, std::string("INSERT INTO sweeps (") + kSweepColumns +
                             ") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  s.bind(1, r.id)
      .bind(2, r.plan_key)
      .bind(3, r.definition)
      .bind(4, json_text(candidates))
      .bind(5, json_text(r.options))
      .bind(6, r.created_at.empty() ? utc_timestamp() : r.created_at)
      .bind(7, r.finished_at)
      .run();
}

std::optional<SweepRecord> ArtifactStore::sweep(const std::string& id) const {
  Statement s(impl_->db, std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_sweep(impl_->db, s);
}

std::optional<SweepRecord> ArtifactStore::latest_sweep(const std::string& plan_key) const {
  Statement s(impl_->db, std::string("SELECT ") + kSweepColumns +
                             " FROM sweeps WHERE plan_key = ? "
                             "ORDER BY created_at DESC, rowid DESC LIMIT 1");
  s.bind(1, plan_key);
  if (!s.step()) return std::nullopt;
  return read_sweep(impl_->db, s);
}

std::vector<SweepRecord> ArtifactStore::sweeps(const std::string& definition) const {
  Statement s(impl_->db, std::string("SELECT ") + kSweepColumns +
                             " FROM sweeps WHERE ?1 = '' OR definition = ?1 "
                             "ORDER BY created_at DESC, rowid DESC");
  s.bind(1, definition);
  return read_sweeps(impl_->db, s);
}

void ArtifactStore::finish_sweep(const std::string& id, const std::string& finished_at) {
  Statement s(impl_->db, "UPDATE sweeps SET finished_at = ? WHERE id = ?");
  s.bind(1, finished_at).bind(2, id).run();
  if (impl_->db.changes() == 0)
    fail("{}: cannot finish sweep {}: no such sweep", impl_->db.path().string(), id);
}

void ArtifactStore::put_sweep_item(const SweepItem& item) {
  upsert_sweep_item(impl_->db, item, /*merge_rule=*/true);
}

std::vector<SweepItem> ArtifactStore::sweep_items(const std::string& sweep) const {
  Statement s(impl_->db, std::string("SELECT ") + kSweepItemColumns +
                             " FROM sweep_items WHERE sweep = ? ORDER BY position");
  s.bind(1, sweep);
  std::vector<SweepItem> out;
  while (s.step()) out.push_back(read_sweep_item(s));
  return out;
}

void ArtifactStore::record_attempt(const SweepItem& item, const EvaluationRecord& e) {
  EvaluationRecord ev = e;
  if (ev.sweep.empty()) ev.sweep = item.sweep;
  if (ev.sweep != item.sweep)
    fail("evaluation of sweep {} recorded as an attempt of an item of sweep {}", ev.sweep,
         item.sweep);
  // IMMEDIATE: the item is read and then written, and no other writer may come between.
  Transaction t(impl_->db);
  const std::string id = insert_evaluation(impl_->db, ev);
  const SweepItem base = sweep_item(impl_->db, item.sweep, item.position).value_or(item);
  SweepItem next = base;
  const bool passed = ev.status == "PASSED";
  next.attempts = base.attempts + 1;
  next.flaky = base.flaky || (passed && base.state == SweepItemState::kFailed);
  next.state = passed ? SweepItemState::kPassed : SweepItemState::kFailed;
  next.last_evaluation = id;
  upsert_sweep_item(impl_->db, next, /*merge_rule=*/false);
  t.commit();
}

std::string ArtifactStore::put_noise_floor(const NoiseFloorRecord& r) {
  return insert_noise_floor(impl_->db, r);
}

std::optional<NoiseFloorRecord> ArtifactStore::latest_noise_floor(
    const std::string& definition, const std::string& gpu, const std::string& timing_method) const {
  Statement s(impl_->db, std::string("SELECT ") + kNoiseFloorColumns +
                             " FROM noise_floors WHERE definition = ? AND gpu = ? AND "
                             "timing_method = ? ORDER BY created_at DESC, rowid DESC LIMIT 1");
  s.bind(1, definition).bind(2, gpu).bind(3, timing_method);
  if (!s.step()) return std::nullopt;
  return read_noise_floor(impl_->db, s);
}

std::string ArtifactStore::put_gate(const GateRecord& r) {
  return insert_gate(impl_->db, r);
}

std::optional<GateRecord> ArtifactStore::gate(const std::string& id) const {
  Statement s(impl_->db, std::string("SELECT ") + kGateColumns + " FROM gates WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_gate(impl_->db, s);
}

std::vector<GateRecord> ArtifactStore::gates(const std::string& definition) const {
  Statement s(impl_->db, std::string("SELECT ") + kGateColumns +
                             " FROM gates WHERE ?1 = '' OR definition = ?1 "
                             "ORDER BY created_at DESC, rowid DESC");
  s.bind(1, definition);
  return read_gates(impl_->db, s);
}

std::string ArtifactStore::put_decision(const DecisionRecord& r) {
  return insert_decision(impl_->db, r);
}

std::vector<DecisionRecord> ArtifactStore::decisions(const std::string& definition,
                                                     const std::string& candidate) const {
  Statement s(impl_->db, std::string("SELECT ") + kDecisionColumns +
                             " FROM decisions WHERE (?1 = '' OR definition = ?1) AND "
                             "(?2 = '' OR candidate = ?2) ORDER BY created_at DESC, rowid DESC");
  s.bind(1, definition).bind(2, candidate);
  return read_decisions(impl_->db, s);
}

std::optional<DecisionRecord> ArtifactStore::retained(const std::string& definition) const {
  Statement s(impl_->db, std::string("SELECT ") + kDecisionColumns +
                             " FROM decisions WHERE definition = ? AND decision = 'promote' "
                             "ORDER BY created_at DESC, rowid DESC LIMIT 1");
  s.bind(1, definition);
  if (!s.step()) return std::nullopt;
  return read_decision(impl_->db, s);
}

bool ArtifactStore::bundle_imported(const std::string& hash) const {
  Statement s(impl_->db, "SELECT 1 FROM imported_bundles WHERE hash = ?");
  s.bind(1, hash);
  return s.step();
}

void ArtifactStore::mark_bundle_imported(const std::string& hash, const std::string& source) {
  Statement s(impl_->db,
              "INSERT INTO imported_bundles (hash, source, imported_at) VALUES (?, ?, ?) ON "
              "CONFLICT DO NOTHING");
  s.bind(1, hash).bind(2, source).bind(3, utc_timestamp()).run();
}

CandidateRecord record_candidate(ArtifactStore& store, const Candidate& c,
                                 const std::map<std::string, std::string>& params) {
  CandidateRecord r;
  r.name = c.name;
  r.definition = c.definition;
  const std::string manifest = c.manifest.empty() ? "" : read_text_file(c.manifest);
  Sha256 hash;
  add_field(hash, "definition", c.definition);
  add_field(hash, "manifest", manifest);
  if (!c.manifest.empty()) r.manifest_blob = store.put_blob(manifest);
  const std::set<std::string> sources(c.sources.begin(), c.sources.end());  // sorted, once each
  for (const auto& path : sources) {
    const std::string bytes = read_text_file(c.dir / path);
    add_field(hash, "source", path);
    add_field(hash, "content", bytes);
    r.sources[path] = store.put_blob(bytes);
  }
  for (const auto& [name, value] : params) add_field(hash, "param", name + "=" + value);
  r.params = params;
  r.hash = hash.hex_digest();
  r.created_at = utc_timestamp();
  store.put_candidate(r);
  // The stored row: recorded before, it keeps its first created_at.
  return *store.candidate(r.hash);
}

SampleSummary summarize_samples(const std::vector<std::vector<double>>& trials, int throttled) {
  SampleSummary s;
  s.throttled = throttled;
  std::vector<double> pooled, trial_medians;
  for (const auto& trial : trials) {
    if (trial.empty()) continue;  // a trial without samples has no median to contribute
    trial_medians.push_back(median_of(trial));
    pooled.insert(pooled.end(), trial.begin(), trial.end());
  }
  if (pooled.empty()) return s;
  // The official summary, computed as gpu/sample_stats.cpp summarize_timing computes it.
  s.latency = mean_of(trial_medians);
  std::sort(pooled.begin(), pooled.end());
  s.mean = mean_of(pooled);
  const std::size_t n = pooled.size();
  s.median = median_of(pooled);
  // Nearest rank: the smallest value with at least 95% of the samples at or below it.
  const std::size_t rank = (95 * n + 99) / 100;  // ceil(0.95 n), in integers
  s.p95 = pooled[std::max<std::size_t>(rank, 1) - 1];
  s.min = pooled.front();
  s.max = pooled.back();
  s.n = static_cast<int>(n);
  return s;
}

}  // namespace kh
