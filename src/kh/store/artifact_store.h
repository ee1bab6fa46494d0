// The artifact store: one SQLite database (WAL, foreign keys, versioned schema) plus a
// content-addressed blob folder, by default .kh/store.db and .kh/blobs/. Every put is its own
// transaction, so a killed process loses at most what it had not yet put; several kh processes
// may write at once (WAL, busy timeout, BEGIN IMMEDIATE). Puts are idempotent: a row whose
// identity exists already is left as it is (sweep items are the exception: see put_sweep_item).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kh/store/records.h"

namespace kh {

class SqliteDb;
class BlobStore;

/// Where the store lives: `dir`/store.db and `dir`/blobs/.
struct StoreLocation {
  std::filesystem::path dir = ".kh";
  std::filesystem::path database() const { return dir / "store.db"; }
  std::filesystem::path blobs() const { return dir / "blobs"; }
};

class ArtifactStore {
 public:
  /// Opens (creating if needed) and migrates the store to the current schema. A database whose
  /// schema is newer than this binary knows is refused with an error naming both versions; it is
  /// never modified.
  explicit ArtifactStore(const StoreLocation& where);
  ~ArtifactStore();
  ArtifactStore(const ArtifactStore&) = delete;
  ArtifactStore& operator=(const ArtifactStore&) = delete;

  const StoreLocation& location() const;
  int schema_version() const;

  // Blobs: bytes in, hash out; the same bytes are stored once.
  std::string put_blob(std::string_view bytes);
  std::string blob(const std::string& hash) const;  // throws if absent
  bool has_blob(const std::string& hash) const;

  // Definitions and workloads, as their FlashInfer JSON (identity: name / uuid).
  void put_definition(const std::string& name, const Json& definition);
  void put_workload(const std::string& definition, const std::string& uuid, const Json& workload);
  std::optional<Json> workload_json(const std::string& uuid) const;
  std::optional<Json> definition_json(const std::string& name) const;

  void put_candidate(const CandidateRecord& c);
  std::optional<CandidateRecord> candidate(const std::string& hash) const;
  /// Candidates whose name is `name` or whose hash starts with `name` (>= 6 hex digits), newest
  /// first.
  std::vector<CandidateRecord> find_candidates(const std::string& name_or_hash) const;
  std::vector<CandidateRecord> candidates(const std::string& definition = "") const;

  /// `id` and `created_at` are filled in when empty (id: sha256 of candidate, key, created_at).
  void put_build(const BuildRecord& b);
  std::vector<BuildRecord> builds(const std::string& candidate) const;  // oldest first
  void put_environment(const EnvironmentRecord& e);
  std::optional<EnvironmentRecord> environment(const std::string& hash) const;
  void put_ceilings(const CeilingsRecord& c);
  std::optional<CeilingsRecord> latest_ceilings(const std::string& gpu) const;

  /// `created_at` is filled in when empty, then `id` when empty (records.h evaluation_id: the
  /// sha256 of the record's canonical JSON without id). Text that is not valid UTF-8 (a compiler
  /// log) has the bad bytes replaced by U+FFFD first, so the record reads back as it was hashed.
  void put_evaluation(const EvaluationRecord& e);
  std::vector<EvaluationRecord> evaluations_of_candidate(const std::string& candidate) const;
  std::vector<EvaluationRecord> evaluations_of_sweep(const std::string& sweep) const;

  void put_sweep(const SweepRecord& s);
  std::optional<SweepRecord> sweep(const std::string& id) const;
  /// The newest sweep with this plan key, if any.
  std::optional<SweepRecord> latest_sweep(const std::string& plan_key) const;
  std::vector<SweepRecord> sweeps(const std::string& definition = "") const;  // newest first
  void finish_sweep(const std::string& id, const std::string& finished_at);
  /// Inserts the item, or replaces the stored one when this one has more attempts or a later
  /// state (pending < failed/passed at equal attempts): merging two copies keeps the furthest.
  void put_sweep_item(const SweepItem& item);
  std::vector<SweepItem> sweep_items(const std::string& sweep) const;  // by position
  /// Records an attempt of a sweep item and its evaluation in one transaction: the item's state,
  /// attempts and last_evaluation are updated (flaky set when it passes after a failure).
  void record_attempt(const SweepItem& item, const EvaluationRecord& e);

  // Gate records (schema version 2). Each put fills `created_at` when empty, then `id` when empty
  // (records.h noise_floor_id / gate_id / decision_id: sha256 of the record's canonical JSON
  // without id); the same record put twice is one row. Candidates must be stored first. Each
  // returns the record's id (as filled in).
  std::string put_noise_floor(const NoiseFloorRecord& r);
  /// The newest noise floor of this definition, GPU and timing method, if any.
  std::optional<NoiseFloorRecord> latest_noise_floor(const std::string& definition,
                                                     const std::string& gpu,
                                                     const std::string& timing_method) const;
  std::string put_gate(const GateRecord& r);
  std::optional<GateRecord> gate(const std::string& id) const;
  std::vector<GateRecord> gates(const std::string& definition = "") const;  // newest first
  std::string put_decision(const DecisionRecord& r);
  /// Decisions of this definition and candidate ("" for any), newest first.
  std::vector<DecisionRecord> decisions(const std::string& definition = "",
                                        const std::string& candidate = "") const;
  /// The retained candidate of a definition: its newest "promote" decision (archive and reject
  /// decisions do not change it), or nullopt when nothing was promoted. Equal created_at: the
  /// later put wins.
  std::optional<DecisionRecord> retained(const std::string& definition) const;

  // Records of schema version 3 (controller_store.cpp): promotions waiting for a person, the
  // answers they got, reconnaissance notes. Puts fill `created_at`, then `id`, when empty
  // (records.h pending_promotion_id / note_id), are idempotent and return the id; candidates first.
  std::string put_pending_promotion(const PendingPromotionRecord& r);
  std::optional<PendingPromotionRecord> pending_promotion(const std::string& id) const;
  /// Pending promotions of this definition ("" for any), oldest first; with `unanswered`, only
  /// those that have no approval yet (the ones still waiting).
  std::vector<PendingPromotionRecord> pending_promotions(const std::string& definition = "",
                                                         bool unanswered = true) const;
  /// Records a person's answer; the decision it names must be stored already (a foreign key
  /// checks it). The same answer again is a no-op; a different answer to an answered promotion
  /// is refused. See store/promotion_approval.h, which writes both in one transaction.
  void put_approval(const ApprovalRecord& r);
  std::optional<ApprovalRecord> approval(const std::string& pending) const;
  std::string put_note(const NoteRecord& r);
  std::vector<NoteRecord> notes(const std::string& definition) const;  // oldest first

  // Profiles of schema version 4 (profile_store.cpp): `kh profile`'s calls, their files as blobs
  // (put them first). put_profile fills created_at, then id, when empty; the same profile.json of
  // the same candidate and workload again returns the stored id.
  std::string put_profile(const ProfileRecord& r);
  std::optional<ProfileRecord> profile(const std::string& id) const;
  /// Profiles of this definition ("" for any) and candidate ("" for any), newest first.
  std::vector<ProfileRecord> profiles(const std::string& definition = "",
                                      const std::string& candidate = "") const;

  /// Bundles already imported (by content hash), so memory/ is imported once.
  bool bundle_imported(const std::string& hash) const;
  void mark_bundle_imported(const std::string& hash, const std::string& source);

  /// The underlying database, for bundle export/import (store/bundle.h).
  SqliteDb& db();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Content hash of a candidate folder as CandidateRecord::hash defines it, and its record with
/// every source put as a blob.
struct Candidate;
CandidateRecord record_candidate(ArtifactStore& store, const Candidate& c,
                                 const std::map<std::string, std::string>& params);

/// The summary of timing samples: `trials` holds each trial's seconds.
SampleSummary summarize_samples(const std::vector<std::vector<double>>& trials, int throttled);

}  // namespace kh
