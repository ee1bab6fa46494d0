// The rows of the artifact store (store/artifact_store.h), as plain values: what sweeps write,
// what queries and reports read, what bundles carry. Identities are content hashes (hex sha256)
// so that the same thing recorded on two machines is one row after an import.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/core/json_io.h"

namespace kh {

/// A candidate as judged: its manifest and sources as blobs. `hash` covers the definition, the
/// manifest text, every source (path and bytes) and the param values, so a parameterised variant
/// is its own candidate.
struct CandidateRecord {
  std::string hash;
  std::string name;
  std::string definition;
  std::string parent;                          // hash of the candidate it was derived from, or ""
  std::map<std::string, std::string> params;   // compile-time param values
  std::string manifest_blob;                   // blob hash of candidate.toml ("" for builtins)
  std::map<std::string, std::string> sources;  // relative path -> blob hash
  std::string created_at;                      // ISO 8601 UTC, first time recorded
};

struct BuildRecord {
  std::string id;         // hash of (candidate, key, created_at)
  std::string candidate;  // CandidateRecord::hash
  std::string key;        // the build cache key
  bool ok = false;
  bool cached = false;
  std::string log_blob;  // blob hash of the compiler log ("" when empty)
  double seconds = 0;
  std::string created_at;
};

/// The device a timing was taken on (call_timer.h DeviceEnvironment as JSON); hash of the JSON.
struct EnvironmentRecord {
  std::string hash;
  Json environment;
};

/// `kh ceilings` output for one GPU (roofline/ceilings.h as JSON).
struct CeilingsRecord {
  std::string hash;  // of the JSON
  std::string gpu;
  Json ceilings;
  std::string created_at;
};

/// Summary of a timing's samples, all trials pooled except `latency` (the official mean over
/// trials of per-trial medians).
struct SampleSummary {
  double latency = 0;  // seconds, the official summary
  double median = 0, mean = 0, p95 = 0, min = 0, max = 0;
  int n = 0;
  int throttled = 0;
};

/// One candidate judged on one workload: the folded verdict over its trials and, when it passed
/// and was timed, every sample. `id` hashes every other field, so importing it twice is a no-op.
struct EvaluationRecord {
  std::string id;
  std::string candidate;  // CandidateRecord::hash
  std::string definition;
  std::string workload;  // uuid
  std::string sweep;     // SweepRecord::id, or "" for a lone evaluation
  int attempt = 1;       // 1 for the first run of a sweep item, 2.. for retries
  std::string status;    // "PASSED", "INCORRECT_NUMERICAL", ... (spec/trace.h names)
  double max_absolute_error = 0, max_relative_error = 0, matched_ratio = 0;
  std::string message;
  std::string log_tail;
  int trials = 0;  // correctness trials run
  bool nondeterministic = false;
  Json options;               // {"backend","official","seed","variant","trials","reference"}
  std::string timing_method;  // "" when not timed
  std::optional<SampleSummary> summary;  // when timed
  // Columnar, or null:
  // {"seconds":[[trial 0...],...],"sm_clock_mhz":[[...]],"throttle_reasons":[[...]]}
  Json samples;
  Json cost;  // roofline cost of one call, or null
  std::optional<double> floor_seconds;
  std::optional<double> fraction_of_floor;
  std::string environment;  // EnvironmentRecord::hash, or ""
  // From an imported FlashInfer-Bench trace: the latency of the reference it was compared with,
  // and what that reference was.
  std::optional<double> reference_latency;
  std::string reference_label;
  double seconds = 0;  // wall time spent judging it
  std::string created_at;
};

/// A sweep: candidates x workloads of one definition under fixed options. `plan_key` hashes the
/// plan (candidate hashes in order, definition, workload uuids, options) and is how --resume and
/// --retry-failed find it again.
struct SweepRecord {
  std::string id;
  std::string plan_key;
  std::string definition;
  std::vector<std::string> candidates;  // hashes, in the interleaving order
  Json options;
  std::string created_at;
  std::string finished_at;  // "" while unfinished
};

/// An A/A measurement of one candidate (kh noise): the spread the machine puts on it. `id`
/// hashes every other field (noise_floor_id).
struct NoiseFloorRecord {
  std::string id;             // filled by put when empty: sha256 of the canonical JSON without id
  std::string definition;     // the definition the candidate implements
  std::string candidate;      // candidates.hash: the candidate measured against itself
  std::string gpu;            // GPU name from the environment; "cpu" for the cpu backend
  std::string timing_method;  // "cupti" | "events" | "graph" | "wall"
  std::string environment;    // environments.hash, "" when none
  double minimum_effect = 0;  // the minimum effect later gates default to
  double distribution_spread = 0;         // relative half-width of the overall A/A interval
  double median_workload_spread = 0;      // median over workloads of their relative half-widths
  double max_workload_spread = 0;         // the largest workload relative half-width
  Json workload_spread = Json::object();  // uuid -> relative half-width
  Json options = Json::object();          // rounds, iterations, statistics knobs
  std::string created_at;                 // ISO 8601 UTC, filled by put when empty
};

/// One paired gate: candidate B (challenger) judged against A (baseline or retained). `id`
/// hashes every other field (gate_id).
struct GateRecord {
  std::string id;                        // filled by put when empty, as NoiseFloorRecord::id
  std::string definition;                // the definition both candidates implement
  std::string candidate_a, candidate_b;  // candidates.hash: baseline A, challenger B
  std::string stage;  // "aa" (noise), "gate" (kh gate), "representative", "full", "remeasured"
  std::string gpu;    // GPU name, as NoiseFloorRecord::gpu
  std::string timing_method;            // as NoiseFloorRecord::timing_method
  std::string environment;              // environments.hash, "" when none
  std::string objective;                // "mean_latency" | "mean_speedup"
  double min_effect = 0;                // the minimum effect the verdict was judged with
  double estimate = 1, lo = 1, hi = 1;  // overall speedup of B over A and its interval
  std::string verdict;                  // overall: "win" | "tie" | "loss"
  bool both_correct = true;             // both candidates passed correctness on every workload
  Json result = Json::object();         // the full judged result (per workload and group), opaque
  Json samples = Json::array();         // raw paired samples, opaque here
  Json options = Json::object();        // rounds, iterations, statistics knobs
  std::string created_at;               // ISO 8601 UTC, filled by put when empty
};

/// The one decision a candidate got from kh promote. `id` hashes every other field
/// (decision_id). The retained candidate of a definition is the one promoted last.
struct DecisionRecord {
  std::string id;                  // filled by put when empty, as NoiseFloorRecord::id
  std::string definition;          // the definition the candidate implements
  std::string candidate;           // candidates.hash
  std::string against;             // the retained candidate it was judged against, "" if none
  std::string decision;            // "promote" | "archive" | "reject"
  std::string reason;              // one line for people
  Json evidence = Json::object();  // lines, gate ids, replay summary; opaque here
  std::string created_at;          // ISO 8601 UTC, filled by put when empty
};

/// A promotion kh promote granted that waits for a person (`kh promote --approve`, schema version
/// 3): the decision it would have been, kept out of `decisions` so the retained candidate does
/// not change until `kh approve` turns it into exactly one final decision (an ApprovalRecord and
/// the DecisionRecord it names). `id` hashes every other field (pending_promotion_id).
struct PendingPromotionRecord {
  std::string id;                  // filled by put when empty, as NoiseFloorRecord::id
  std::string definition;          // the definition the candidate implements
  std::string candidate;           // candidates.hash
  std::string against;             // the retained candidate it was gated against, "" if none
  std::string reason;              // kh promote's promote reason ("promote: +2.8 % [...] ...")
  Json evidence = Json::object();  // the would-be decision's evidence, as DecisionRecord's
  std::string requested_by;        // who ran kh promote: "user@host"
  std::string created_at;          // ISO 8601 UTC, filled by put when empty
};

/// A person's answer to a pending promotion: approved (its decision is "promote") or rejected
/// ("reject"). Its identity is the pending promotion: one answer each, by the schema.
struct ApprovalRecord {
  std::string pending;   // pending_promotions.id
  std::string decision;  // decisions.id of the final decision this answer recorded
  bool approved = false;
  std::string decided_by;  // "user@host"
  std::string note;        // why, "" when none was given
  std::string created_at;  // ISO 8601 UTC, the decision's created_at
};

/// A reconnaissance note on a definition (`kh note`, schema version 3): what was learned and
/// where, read back into the next round's brief. `id` hashes every other field (note_id).
struct NoteRecord {
  std::string id;          // filled by put when empty, as NoiseFloorRecord::id
  std::string definition;  // the definition it is about
  std::string text;
  std::string reference;   // a URL or a path, "" when none
  std::string author;      // "user@host", or the agent command that handed it back
  std::string created_at;  // ISO 8601 UTC, filled by put when empty
};

/// One call profiled by `kh profile` (schema version 4): the CUPTI timeline and Nsight Compute
/// metrics of a candidate on a workload, and the bottleneck state kh read from them. The files
/// themselves are blobs (profile.json, and ncu.csv when Nsight Compute ran); the columns are
/// what listing and choosing a profile need. `id` hashes every other field (profile_id).
struct ProfileRecord {
  std::string id;           // filled by put when empty
  std::string definition;
  std::string candidate;    // CandidateRecord::hash
  std::string workload;     // uuid
  std::string gpu;          // the device's name, "" when the profile does not say
  double span_seconds = 0;  // the call's span on the timeline
  std::string bottleneck;   // ctl bottleneck class name
  std::string signature;    // the state's signature (class@dominant kernel)
  std::string profile_blob; // blob hash of profile.json
  std::string ncu_blob;     // blob hash of ncu.csv, "" without Nsight Compute
  std::string created_at;   // ISO 8601 UTC, filled by put when empty
};

enum class SweepItemState { kPending, kPassed, kFailed };

struct SweepItem {
  std::string sweep;
  int position = 0;  // order of execution: workload-major, candidates interleaved
  std::string candidate;
  std::string workload;
  SweepItemState state = SweepItemState::kPending;
  int attempts = 0;
  bool flaky = false;           // failed, then passed on a retry
  std::string last_evaluation;  // EvaluationRecord::id of the latest attempt, or ""
};

std::string_view sweep_item_state_name(SweepItemState s);  // "pending" | "passed" | "failed"
SweepItemState parse_sweep_item_state(std::string_view name);

/// Now, as ISO 8601 UTC with milliseconds ("2026-11-29T17:02:03.123Z").
std::string utc_timestamp();

/// Every field of the evaluation except `id`, as JSON in declaration order (absent optionals and
/// NaN as null): the canonical form its id hashes.
Json evaluation_identity_json(const EvaluationRecord& e);
/// EvaluationRecord::id: sha256 hex of evaluation_identity_json(e).dump(). Every stored value
/// reads back exactly, so the id of a record read from the store recomputes to itself.
std::string evaluation_id(const EvaluationRecord& e);

/// The ids of the gate records, as evaluation_id: sha256 hex of a JSON object of every field
/// except `id` (NaN as null), so a record read from the store recomputes its id.
std::string noise_floor_id(const NoiseFloorRecord& r);
std::string gate_id(const GateRecord& r);
std::string decision_id(const DecisionRecord& r);
std::string pending_promotion_id(const PendingPromotionRecord& r);
std::string note_id(const NoteRecord& r);
std::string profile_id(const ProfileRecord& r);

}  // namespace kh
