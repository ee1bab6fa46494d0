// Writing a bundle (bundle.h): the rows an export selects and everything they reference, as
// JSON Lines. Reading one back is bundle.cpp's.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <regex>
#include <set>

#include <sqlite3.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/base64.h"
#include "kh/store/bundle.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh {
namespace {

using Keys = std::set<std::string>;

// The records that belong to no sweep (the gate records of schema version 2, the controller's of
// version 3), in dependency order, with the columns of each that name a candidate. Most also name
// a definition, and noise floors and gates an environment. `also`: rows older than `since` that
// must travel anyway because a newer approval names them (SQL over ?1 = since).
struct RecordTableInfo {
  const char* name;
  std::vector<const char*> candidate_columns;
  const char* also = nullptr;
  std::vector<const char*> blob_columns = {};  // blobs the row names, which must travel with it
};
const RecordTableInfo kRecordTables[] = {
    {"noise_floors", {"candidate"}},
    {"gates", {"candidate_a", "candidate_b"}},
    {"decisions",
     {"candidate", "against"},
     "id IN (SELECT decision FROM approvals WHERE created_at >= ?1)"},
    {"pending_promotions",
     {"candidate", "against"},
     "id IN (SELECT pending FROM approvals WHERE created_at >= ?1)"},
    {"approvals", {}},
    {"reconnaissance_notes", {}},
    {"profiles", {"candidate"}, nullptr, {"profile_blob", "ncu_blob"}}};

std::string line_text(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

// Every column of the current row; a non-finite REAL as a string, since JSON has no infinities.
Json row_json(const Statement& s, const std::string& table) {
  Json r = Json::object();
  for (int c = 0; c < s.column_count(); ++c) {
    const std::string name = s.column_name(c);
    switch (s.column_type(c)) {
      case SQLITE_NULL:
        r[name] = nullptr;
        break;
      case SQLITE_INTEGER:
        r[name] = s.int64(c);
        break;
      case SQLITE_FLOAT: {
        const double v = s.real(c);
        if (std::isfinite(v))
          r[name] = v;
        else
          r[name] = v > 0 ? "Infinity" : "-Infinity";
        break;
      }
      case SQLITE_TEXT:
        r[name] = s.text(c);
        break;
      default:
        fail("store table {}: column {} holds a binary value, which bundles do not carry", table,
             name);
    }
  }
  return r;
}

class Exporter {
 public:
  Exporter(ArtifactStore& store, const BundleExportOptions& o)
      : store_(store), db_(store.db()), o_(o) {}

  void write(std::ostream& out) {
    select();
    Json header = {{"format", kBundleFormat},
                   {"version", kBundleVersion},
                   {"schema", database_schema_version(db_)},
                   {"created_at", utc_timestamp()},
                   {"since", o_.since},
                   {"sweeps", o_.sweeps}};
    out << line_text(header) << '\n';
    for (const Json& blob : rows("blobs", "hash", blobs_)) {
      const std::string hash = blob.at("hash").get<std::string>();
      const std::string bytes = store_.blob(hash);
      if (sha256_hex(bytes) != hash)
        fail("{}: blob {} does not hash to its name; the store's blob folder is corrupt",
             store_.location().blobs().string(), hash);
      out << line_text({{"t", "blob"},
                        {"h", hash},
                        {"created_at", blob.at("created_at")},
                        {"b64", base64_encode(bytes)}})
          << '\n';
    }
    emit(out, "definitions", rows("definitions", "name", definitions_));
    emit(out, "workloads", rows("workloads", "uuid", workloads_));
    const auto candidate_rows = rows("candidates", "hash", candidates_);
    emit(out, "candidates", candidate_rows);
    for (const Json& c : candidate_rows)
      emit(out, "candidate_sources",
           query("SELECT * FROM candidate_sources WHERE candidate = ? ORDER BY path",
                 "candidate_sources", {c.at("hash").get<std::string>()}));
    emit(out, "builds", build_rows_);
    emit(out, "environments", rows("environments", "hash", environments_));
    emit(out, "ceilings", rows("ceilings", "hash", ceilings_));
    const auto sweep_rows = rows("sweeps", "id", sweeps_);
    emit(out, "sweeps", sweep_rows);
    for (const Json& s : sweep_rows)
      emit(out, "sweep_items",
           query("SELECT * FROM sweep_items WHERE sweep = ? ORDER BY position", "sweep_items",
                 {s.at("id").get<std::string>()}));
    emit(out, "evaluations", evaluation_rows_);
    for (const auto& [table, rows] : gate_rows_) emit(out, table, rows);
    if (!out) fail("cannot write the bundle: output stream failed");
  }

 private:
  std::vector<Json> query(const std::string& sql, const std::string& table,
                          const std::vector<std::string>& args) {
    Statement s(db_, sql);
    for (std::size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i) + 1, args[i]);
    std::vector<Json> out;
    while (s.step()) out.push_back(row_json(s, table));
    return out;
  }

  Keys keys_since(const std::string& table, const std::string& key) {
    Keys keys;
    if (!o_.sweeps.empty()) return keys;  // only what the chosen sweeps reference
    Statement s(db_, "SELECT " + key + " FROM " + table + " WHERE created_at >= ?");
    s.bind(1, o_.since);
    while (s.step()) keys.insert(s.text(0));
    return keys;
  }

  // The rows with these keys that exist, oldest first.
  std::vector<Json> rows(const std::string& table, const std::string& key, const Keys& keys) {
    std::vector<Json> out;
    Statement s(db_, "SELECT * FROM " + table + " WHERE " + key + " = ?");
    for (const auto& k : keys) {
      s.reset();
      s.bind(1, k);
      if (s.step()) out.push_back(row_json(s, table));
    }
    std::stable_sort(out.begin(), out.end(), [&](const Json& a, const Json& b) {
      return a.at("created_at").get<std::string>() < b.at("created_at").get<std::string>();
    });
    return out;
  }

  static void emit(std::ostream& out, const std::string& table, const std::vector<Json>& rows) {
    for (const Json& r : rows) out << line_text({{"t", table}, {"r", r}}) << '\n';
  }

  static void add(Keys& keys, const Json& value) {
    if (value.is_string() && !value.get<std::string>().empty())
      keys.insert(value.get<std::string>());
  }

  void select() {
    // Evaluations, then everything they reference.
    if (o_.sweeps.empty()) {
      evaluation_rows_ =
          query("SELECT * FROM evaluations WHERE created_at >= ? ORDER BY created_at, id",
                "evaluations", {o_.since});
    } else {
      for (const auto& id : o_.sweeps) {
        Statement s(db_, "SELECT 1 FROM sweeps WHERE id = ?");
        s.bind(1, id);
        if (!s.step()) fail("{}: no sweep {} to export", db_.path().string(), id);
        sweeps_.insert(id);
        for (auto& r : query("SELECT * FROM evaluations WHERE sweep = ? AND created_at >= ? "
                             "ORDER BY created_at, id",
                             "evaluations", {id, o_.since}))
          evaluation_rows_.push_back(std::move(r));
      }
    }
    for (const Json& e : evaluation_rows_) {
      add(candidates_, e.at("candidate"));
      add(environments_, e.at("environment"));
      add(sweeps_, e.at("sweep"));
      add(definitions_, e.at("definition"));
      add(workloads_, e.at("workload"));
    }
    // Gate and controller records: every one since `since` (and what a new approval names), none
    // with chosen sweeps (they belong to no sweep).
    if (o_.sweeps.empty()) {
      for (const auto& info : kRecordTables) {
        auto& rows = gate_rows_.emplace_back(info.name, std::vector<Json>()).second;
        // Oldest first, and in insertion order at equal times, so "the later put wins" holds
        // in the importing store too.
        rows = query(std::string("SELECT * FROM ") + info.name + " WHERE created_at >= ?1" +
                         (info.also ? std::string(" OR ") + info.also : std::string()) +
                         " ORDER BY created_at, rowid",
                     info.name, {o_.since});
        for (const Json& r : rows) {
          for (const char* column : info.candidate_columns) add(candidates_, r.at(column));
          for (const char* column : info.blob_columns) add(blobs_, r.value(column, Json()));
          add(environments_, r.value("environment", Json()));
          add(definitions_, r.value("definition", Json()));
        }
      }
    }
    if (o_.sweeps.empty()) {
      Statement s(db_, "SELECT id FROM sweeps WHERE created_at >= ?1 OR finished_at >= ?1");
      s.bind(1, o_.since);
      while (s.step()) sweeps_.insert(s.text(0));
    }
    for (const Json& sweep : rows("sweeps", "id", sweeps_)) {
      add(definitions_, sweep.at("definition"));
      const Json list = parse_json(sweep.at("candidates").get<std::string>(), "sweeps.candidates");
      for (const Json& c : list) add(candidates_, c);
      for (const Json& item : query("SELECT * FROM sweep_items WHERE sweep = ?", "sweep_items",
                                    {sweep.at("id").get<std::string>()})) {
        add(candidates_, item.at("candidate"));
        add(workloads_, item.at("workload"));
      }
    }
    // Builds: new ones, or with chosen sweeps new builds of the candidates they use.
    for (const Json& b : query("SELECT * FROM builds WHERE created_at >= ? ORDER BY created_at, id",
                               "builds", {o_.since})) {
      const std::string candidate = b.at("candidate").get<std::string>();
      if (!o_.sweeps.empty() && !candidates_.count(candidate)) continue;
      candidates_.insert(candidate);
      add(blobs_, b.at("log_blob"));
      build_rows_.push_back(b);
    }
    for (const auto& k : keys_since("candidates", "hash")) candidates_.insert(k);
    for (const Json& c : rows("candidates", "hash", candidates_)) {
      add(definitions_, c.at("definition"));
      add(blobs_, c.at("manifest_blob"));
    }
    for (const auto& hash : candidates_) {
      Statement s(db_, "SELECT blob FROM candidate_sources WHERE candidate = ?");
      s.bind(1, hash);
      while (s.step()) blobs_.insert(s.text(0));
    }
    for (const auto& k : keys_since("environments", "hash")) environments_.insert(k);
    ceilings_ = keys_since("ceilings", "hash");
    for (const auto& k : keys_since("workloads", "uuid")) workloads_.insert(k);
    for (const Json& w : rows("workloads", "uuid", workloads_))
      add(definitions_, w.at("definition"));
    for (const auto& k : keys_since("definitions", "name")) definitions_.insert(k);
    // Every referenced blob must travel: a row without its blob would be useless at home.
    Keys known;
    for (const Json& b : rows("blobs", "hash", blobs_))
      known.insert(b.at("hash").get<std::string>());
    for (const auto& b : blobs_)
      if (!known.count(b))
        fail("{}: blob {} is referenced but not in the store; cannot export it",
             db_.path().string(), b);
    for (const auto& k : keys_since("blobs", "hash")) blobs_.insert(k);
  }

  ArtifactStore& store_;
  SqliteDb& db_;
  const BundleExportOptions& o_;
  Keys blobs_, definitions_, workloads_, candidates_, environments_, ceilings_, sweeps_;
  std::vector<Json> build_rows_, evaluation_rows_;
  std::vector<std::pair<std::string, std::vector<Json>>> gate_rows_;  // kRecordTables order
};

void check_since(const std::string& since) {
  static const std::regex kPrefix(
      R"(\d{4}(-\d{2}(-\d{2}(T\d{2}(:\d{2}(:\d{2}(\.\d{1,3})?)?)?Z?)?)?)?)");
  if (!since.empty() && !std::regex_match(since, kPrefix))
    fail(
        "bundle export: since \"{}\" is not an ISO 8601 UTC time or a prefix of one "
        "(e.g. 2026-11-29 or 2026-11-29T17:02:03.123Z)",
        since);
}

}  // namespace

void export_bundle(ArtifactStore& store, const BundleExportOptions& options, std::ostream& out) {
  check_since(options.since);
  // One snapshot: rows written by others meanwhile are either all in the bundle or not at all.
  Transaction t(store.db(), Transaction::Mode::kRead);
  Exporter(store, options).write(out);
  t.commit();
}

}  // namespace kh
