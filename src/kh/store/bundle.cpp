#include "kh/store/bundle.h"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <memory>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>

#include <sqlite3.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/base64.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh {
namespace {

namespace fs = std::filesystem;
using Keys = std::set<std::string>;

// The row tables in dependency order (a row only references rows of tables before it), with
// each one's identity column. candidate_sources and sweep_items go with their parent instead.
struct TableInfo {
  const char* name;
  const char* key;
};
constexpr TableInfo kRowTables[] = {
    {"definitions", "name"},  {"workloads", "uuid"}, {"candidates", "hash"}, {"builds", "id"},
    {"environments", "hash"}, {"ceilings", "hash"},  {"sweeps", "id"},       {"evaluations", "id"},
    {"noise_floors", "id"},   {"gates", "id"},       {"decisions", "id"}};
// The gate records (schema version 2) and the columns of each that name a candidate. Each also
// names its definition, and noise floors and gates an environment.
struct GateTableInfo {
  const char* name;
  std::vector<const char*> candidate_columns;
};
const GateTableInfo kGateTables[] = {{"noise_floors", {"candidate"}},
                                     {"gates", {"candidate_a", "candidate_b"}},
                                     {"decisions", {"candidate", "against"}}};
constexpr const char* kChildTables[] = {"candidate_sources", "sweep_items"};

bool is_importable_table(const std::string& t) {
  for (const auto& info : kRowTables)
    if (t == info.name) return true;
  for (const char* c : kChildTables)
    if (t == c) return true;
  return false;
}

std::string line_text(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

// --- export -------------------------------------------------------------------------------------

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
    // Gate records: every one since `since`, none with chosen sweeps (they belong to no sweep).
    if (o_.sweeps.empty()) {
      for (const auto& info : kGateTables) {
        auto& rows = gate_rows_.emplace_back(info.name, std::vector<Json>()).second;
        // Oldest first, and in insertion order at equal times, so "the later put wins" holds
        // in the importing store too.
        rows = query(std::string("SELECT * FROM ") + info.name +
                         " WHERE created_at >= ? ORDER BY created_at, rowid",
                     info.name, {o_.since});
        for (const Json& r : rows) {
          for (const char* column : info.candidate_columns) add(candidates_, r.at(column));
          add(environments_, r.value("environment", Json()));
          add(definitions_, r.at("definition"));
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
  std::vector<std::pair<std::string, std::vector<Json>>> gate_rows_;  // kGateTables order
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

// --- import -------------------------------------------------------------------------------------

class Importer {
 public:
  Importer(ArtifactStore& store, std::string source) : store_(store), source_(std::move(source)) {}

  BundleImportStats run(std::istream& in) {
    std::string line;
    if (!std::getline(in, line))
      fail("{}: empty; expected a {} header line", source_, kBundleFormat);
    line_ = 1;
    check_header(parse_json(line, where()));
    Transaction t(store_.db());
    while (std::getline(in, line)) {
      ++line_;
      if (line.empty() || line == "\r") continue;
      record(parse_json(line, where()));
    }
    if (in.bad()) fail("{}: read error after line {}", source_, line_);
    t.commit();
    return stats_;
  }

 private:
  std::string where() const { return source_ + ":" + std::to_string(line_); }

  void check_header(const Json& h) {
    if (!h.is_object() || h.value("format", Json()) != kBundleFormat)
      fail("{}: not a kh bundle (the first line must be a header with \"format\": \"{}\")", where(),
           kBundleFormat);
    const Json version = h.value("version", Json());
    if (!version.is_number_integer() || version.get<int>() < 1)
      fail("{}: header: version must be a positive integer, got {}", where(),
           json_type_name(version));
    if (version.get<int>() > kBundleVersion)
      fail("{}: bundle format version {} is newer than this kh reads ({}); update kh", where(),
           version.get<int>(), kBundleVersion);
    const Json schema = h.value("schema", Json());
    if (!schema.is_number_integer())
      fail("{}: header: schema must be an integer, got {}", where(), json_type_name(schema));
    if (schema.get<int>() > store_.schema_version())
      fail("{}: bundle written with store schema {}, newer than this kh's {}; update kh", where(),
           schema.get<int>(), store_.schema_version());
  }

  void record(const Json& j) {
    if (!j.is_object() || !j.contains("t") || !j.at("t").is_string())
      fail("{}: expected a record {{\"t\": ..., ...}}", where());
    const std::string t = j.at("t").get<std::string>();
    if (t == "blob") return blob(j);
    if (!is_importable_table(t)) fail("{}: unknown record type \"{}\"", where(), t);
    if (!j.contains("r") || !j.at("r").is_object())
      fail("{}: {} record without an object \"r\"", where(), t);
    const Json& r = j.at("r");
    BundleTableStats& st = stats_.tables[t];
    ++st.seen;
    try {
      if (t == "sweep_items") {
        store_.put_sweep_item(sweep_item(r));
        st.added += store_.db().changes();
        return;
      }
      insert(t, r);
      int added = store_.db().changes();
      // A sweep finished elsewhere: the finishing time travels too.
      if (t == "sweeps" && added == 0 && r.value("finished_at", Json("")) != "") {
        Statement s(store_.db(),
                    "UPDATE sweeps SET finished_at = ? WHERE id = ? AND finished_at = ''");
        s.bind(1, r.at("finished_at").get<std::string>()).bind(2, r.at("id").get<std::string>());
        s.run();
        added = store_.db().changes();
      }
      st.added += added;
    } catch (const Error& e) {
      fail("{}: {} row: {}", where(), t, e.what());
    } catch (const nlohmann::json::exception& e) {
      fail("{}: {} row: {}", where(), t, e.what());
    }
  }

  void blob(const Json& j) {
    ++stats_.blobs_seen;
    if (!j.contains("h") || !j.at("h").is_string() || !j.contains("b64") ||
        !j.at("b64").is_string())
      fail("{}: blob record needs string fields \"h\" and \"b64\"", where());
    const std::string hash = j.at("h").get<std::string>();
    const std::string bytes = base64_decode(j.at("b64").get<std::string>(), where());
    const std::string actual = sha256_hex(bytes);
    if (actual != hash)
      fail("{}: blob {}: its bytes hash to {}; the bundle is corrupt or was tampered with", where(),
           hash, actual);
    // The row first, with the bundle's created_at, so put_blob's own row insert is a no-op.
    Json row = {{"hash", hash},
                {"size", static_cast<std::int64_t>(bytes.size())},
                {"created_at", j.value("created_at", Json(utc_timestamp()))}};
    insert("blobs", row);
    stats_.blobs_added += store_.db().changes();
    store_.put_blob(bytes);
  }

  SweepItem sweep_item(const Json& r) {
    SweepItem item;
    item.sweep = r.at("sweep").get<std::string>();
    item.position = r.at("position").get<int>();
    item.candidate = r.at("candidate").get<std::string>();
    item.workload = r.at("workload").get<std::string>();
    item.state = parse_sweep_item_state(r.at("state").get<std::string>());
    item.attempts = r.at("attempts").get<int>();
    item.flaky = r.at("flaky").get<std::int64_t>() != 0;
    item.last_evaluation = r.value("last_evaluation", std::string());
    return item;
  }

  // Column name -> declared type, for checking names and decoding values.
  const std::map<std::string, std::string>& columns(const std::string& table) {
    auto it = columns_.find(table);
    if (it != columns_.end()) return it->second;
    std::map<std::string, std::string> cols;
    Statement s(store_.db(), "SELECT name, type FROM pragma_table_info(?)");
    s.bind(1, table);
    while (s.step()) cols[s.text(0)] = s.text(1);
    return columns_[table] = std::move(cols);
  }

  void insert(const std::string& table, const Json& r) {
    const auto& cols = columns(table);
    std::string names, marks;
    std::vector<std::pair<const Json*, std::string>> values;  // value, declared type
    for (const auto& [name, value] : r.items()) {
      const auto col = cols.find(name);
      if (col == cols.end()) fail("table {} has no column \"{}\"", table, name);
      names += (names.empty() ? "" : ", ") + name;
      marks += marks.empty() ? "?" : ", ?";
      values.emplace_back(&value, col->second);
    }
    const std::string sql =
        "INSERT INTO " + table + " (" + names + ") VALUES (" + marks + ") ON CONFLICT DO NOTHING";
    auto& statement = statements_[sql];
    if (!statement) statement = std::make_unique<Statement>(store_.db(), sql);
    Statement& s = *statement;
    s.reset();
    for (std::size_t i = 0; i < values.size(); ++i)
      bind(s, static_cast<int>(i) + 1, *values[i].first, values[i].second);
    s.run();
  }

  static void bind(Statement& s, int index, const Json& v, const std::string& type) {
    if (v.is_null()) {
      s.bind_null(index);
    } else if (v.is_boolean()) {
      s.bind(index, v.get<bool>() ? 1 : 0);
    } else if (v.is_number_integer()) {
      s.bind(index, v.get<std::int64_t>());
    } else if (v.is_number_float()) {
      s.bind(index, v.get<double>());
    } else if (v.is_string()) {
      const std::string text = v.get<std::string>();
      constexpr double kInf = std::numeric_limits<double>::infinity();
      if (type == "REAL" && text == "Infinity")
        s.bind(index, kInf);
      else if (type == "REAL" && text == "-Infinity")
        s.bind(index, -kInf);
      else
        s.bind(index, text);
    } else {
      fail("parameter {}: expected a string, number or null, got {}", index, json_type_name(v));
    }
  }

  ArtifactStore& store_;
  std::string source_;
  int line_ = 0;
  BundleImportStats stats_;
  std::map<std::string, std::map<std::string, std::string>> columns_;
  std::map<std::string, std::unique_ptr<Statement>> statements_;
};

}  // namespace

int BundleImportStats::rows_added() const {
  int n = 0;
  for (const auto& [table, s] : tables) n += s.added;
  return n;
}

void export_bundle(ArtifactStore& store, const BundleExportOptions& options, std::ostream& out) {
  check_since(options.since);
  // One snapshot: rows written by others meanwhile are either all in the bundle or not at all.
  Transaction t(store.db(), Transaction::Mode::kRead);
  Exporter(store, options).write(out);
  t.commit();
}

BundleImportStats import_bundle(ArtifactStore& store, std::istream& in,
                                const std::string& source_name) {
  return Importer(store, source_name).run(in);
}

int import_memory_dir(ArtifactStore& store, const fs::path& dir) {
  if (!fs::is_directory(dir)) return 0;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == kBundleExtension)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  int imported = 0;
  for (const auto& path : files) {
    const std::string bytes = read_text_file(path);
    const std::string hash = sha256_hex(bytes);
    // Checked inside the (exclusive) transaction: two kh processes starting at once import each
    // bundle once between them.
    Transaction t(store.db());
    if (store.bundle_imported(hash)) continue;
    std::istringstream in(bytes);
    import_bundle(store, in, path.string());
    store.mark_bundle_imported(hash, path.string());
    t.commit();
    ++imported;
  }
  return imported;
}

}  // namespace kh
