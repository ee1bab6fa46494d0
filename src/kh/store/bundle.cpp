// Reading a bundle (bundle.h): one transaction per bundle, every row checked against the table it
// names, blobs verified by hash; and the memory/ folder imported once per bundle. Writing one is
// bundle_export.cpp's.
#include "kh/store/bundle.h"

#include <algorithm>
#include <istream>
#include <limits>
#include <memory>
#include <sstream>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/base64.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh {
namespace {

namespace fs = std::filesystem;

// The row tables in dependency order (a row only references rows of tables before it), with
// each one's identity column. candidate_sources and sweep_items go with their parent instead.
struct TableInfo {
  const char* name;
  const char* key;
};
constexpr TableInfo kRowTables[] = {
    {"definitions", "name"},  {"workloads", "uuid"},         {"candidates", "hash"},
    {"builds", "id"},         {"environments", "hash"},      {"ceilings", "hash"},
    {"sweeps", "id"},         {"evaluations", "id"},         {"noise_floors", "id"},
    {"gates", "id"},          {"decisions", "id"},           {"pending_promotions", "id"},
    {"approvals", "pending"}, {"reconnaissance_notes", "id"}, {"profiles", "id"}};
constexpr const char* kChildTables[] = {"candidate_sources", "sweep_items"};

bool is_importable_table(const std::string& t) {
  for (const auto& info : kRowTables)
    if (t == info.name) return true;
  for (const char* c : kChildTables)
    if (t == c) return true;
  return false;
}

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
      if (t == "decisions" && answers_an_answered_promotion(r)) return;
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

  // A decision that answers a pending promotion this store has an answer to already, with
  // another decision (a person elsewhere answered it too): the local answer stands, so the
  // promotion keeps exactly one final decision. Its approval row is then skipped by its key.
  bool answers_an_answered_promotion(const Json& r) {
    const Json text = r.value("evidence", Json());
    if (!text.is_string()) return false;
    const Json evidence = Json::parse(text.get<std::string>(), nullptr, false);
    if (!evidence.is_object() || !evidence.contains("approval") ||
        !evidence.at("approval").is_object())
      return false;
    const Json pending = evidence.at("approval").value("pending", Json());
    if (!pending.is_string()) return false;
    const auto answered = store_.approval(pending.get<std::string>());
    return answered && answered->decision != r.value("id", std::string());
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
