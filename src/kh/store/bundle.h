// Memory that travels: a bundle carries store rows and blobs from one machine's store to another
// (results made on a borrowed GPU machine come home; memory/ keeps the project's history).
//
// Format: JSON Lines, versioned. The first line is a header
//   {"format":"kh-bundle","version":1,"schema":<store schema version>,"created_at":"...",
//    "since":"...","sweeps":[...]}
// then one record per line in dependency order: blobs as
//   {"t":"blob","h":"<sha256 hex>","created_at":"...","b64":"<base64 bytes>"}
// then rows as {"t":"<table>","r":{<column>: <value>, ...}} for definitions, workloads,
// candidates, candidate_sources, builds, environments, ceilings, sweeps, sweep_items,
// evaluations, (store schema 2 on) noise_floors, gates and decisions, and (schema 3 on)
// pending_promotions, approvals and reconnaissance_notes, in that order. A row is the table's
// columns as stored (schema.cpp), JSON text columns as strings; a non-finite REAL is "Infinity"
// or "-Infinity" (NaN is null, as stored). "schema" is the exporting store's version: a bundle of
// an older schema (1: no gate records; 2: no pending promotions or notes) imports into a newer
// store unchanged.
//
// Import is idempotent and all-or-nothing: one transaction per bundle, rows inserted unless their
// identity exists (sweep items merged by ArtifactStore::put_sweep_item's rule; a sweep's
// finished_at filled in when the bundle has it), blob hashes verified. A promotion waiting for
// approval travels pending and its answer (approval + decision) travels after it; a decision
// answering a promotion the importing store has answered otherwise is skipped, so each keeps
// one final decision. A bundle of a newer format version or store schema is refused.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "kh/store/artifact_store.h"

namespace kh {

inline constexpr const char* kBundleFormat = "kh-bundle";
inline constexpr int kBundleVersion = 1;
inline constexpr const char* kBundleExtension = ".khb";

struct BundleExportOptions {
  /// Only what was recorded at or after this ISO 8601 UTC time, or a prefix of one
  /// ("2026-11-29"); "" for everything. What an exported row references (candidate, environment,
  /// blobs, sweep, definition, workload) is included however old it is.
  std::string since;
  /// Only these sweeps: their items and evaluations and what those reference. Empty: all rows.
  /// Noise floors, gates, decisions, pending promotions, approvals and notes belong to no sweep:
  /// with sweeps chosen none is exported; without, every one recorded since `since` is (and the
  /// pending promotion and decision a new approval names, however old), with the candidates (and
  /// their blobs), environments and definitions it names.
  std::vector<std::string> sweeps;
};

struct BundleTableStats {
  int seen = 0;   // rows in the bundle
  int added = 0;  // rows inserted, or merged into (a sweep item that got further, a finished sweep)
};

struct BundleImportStats {
  std::map<std::string, BundleTableStats> tables;  // by table name
  int blobs_seen = 0;
  int blobs_added = 0;
  int rows_added() const;  // over all tables, blobs not counted
};

/// Writes the store's rows selected by `options` as a bundle.
void export_bundle(ArtifactStore& store, const BundleExportOptions& options, std::ostream& out);

/// Imports a bundle in one transaction; `source_name` names it in errors ("memory/x.khb:12: ...").
BundleImportStats import_bundle(ArtifactStore& store, std::istream& in,
                                const std::string& source_name);

/// Imports each *.khb file of `dir` (in name order) not imported before, tracked by the file's
/// content hash, and returns how many it imported. A missing folder imports nothing.
int import_memory_dir(ArtifactStore& store, const std::filesystem::path& dir);

}  // namespace kh
