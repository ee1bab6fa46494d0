#include "kh/store/sqlite_db.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <sqlite3.h>

#include "kh/core/error.h"

namespace kh {

SqliteDb::SqliteDb(const std::filesystem::path& path, const BeforeWrite& before_write)
    : path_(path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  // FULLMUTEX: a store may be shared by threads (sweep lanes); SQLite then serialises the calls.
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.string().c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    fail("{}: cannot open SQLite database: {}", path.string(), message);
  }
  try {
    sqlite3_extended_result_codes(db_, 1);
    // Neither of these writes the file: the timeout and foreign keys are per connection.
    sqlite3_busy_timeout(db_, 30'000);
    exec("PRAGMA foreign_keys = ON");
    if (before_write) before_write(*this);
    // WAL lets readers run beside one writer; NORMAL is durable across a process kill (only an
    // OS crash may lose the last commits), which is what the store promises.
    enable_wal();
    exec("PRAGMA synchronous = NORMAL");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void SqliteDb::enable_wal() {
  // The switch takes an exclusive lock and, unlike other statements, fails at once instead of
  // waiting on the busy handler while another process holds the file (say, one creating the same
  // store right now): retry for as long as the busy timeout would have waited.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const int rc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
      fail_sql(rc, "PRAGMA journal_mode = WAL");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

SqliteDb::~SqliteDb() {
  if (db_) sqlite3_close(db_);
}

void SqliteDb::fail_sql(int code, std::string_view sql) const {
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  if (message == "not an error" || message.empty()) message = sqlite3_errstr(code);
  std::string shown(sql);
  if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
  fail("{}: SQLite error {} ({}) in \"{}\"", path_.string(), code, message, shown);
}

void SqliteDb::exec(std::string_view sql) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail_sql(rc, sql);
}

int SqliteDb::changes() const {
  return sqlite3_changes(db_);
}

bool SqliteDb::in_transaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

std::int64_t SqliteDb::query_int(std::string_view sql) {
  Statement s(*this, sql);
  if (!s.step()) fail("{}: \"{}\" returned no row", path_.string(), sql);
  return s.int64(0);
}

Statement::Statement(SqliteDb& db, std::string_view sql) : db_(&db), sql_(sql) {
  const int rc =
      sqlite3_prepare_v2(db.handle(), sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail_sql(rc, sql_);
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::check_bind(int code, int index) {
  if (code != SQLITE_OK)
    db_->fail_sql(code, sql_ + " (binding parameter " + std::to_string(index) + ")");
}

Statement& Statement::bind(int index, std::string_view text) {
  // A null data pointer would bind NULL, not "".
  const char* data = text.data() ? text.data() : "";
  check_bind(sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
             index);
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  check_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind_null(int index) {
  check_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Statement& Statement::bind(int index, const std::optional<double>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_text_or_null(int index, std::string_view text) {
  return text.empty() ? bind_null(index) : bind(index, text);
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // The message belongs to the connection; reset so the statement can be finalized cleanly.
  const std::string message = sqlite3_errmsg(db_->handle());
  sqlite3_reset(stmt_);
  fail("{}: SQLite error {} ({}) in \"{}\"", db_->path().string(), rc, message,
       sql_.size() > 200 ? sql_.substr(0, 200) + "..." : sql_);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::column_count() const {
  return sqlite3_column_count(stmt_);
}

std::string Statement::column_name(int col) const {
  return sqlite3_column_name(stmt_, col);
}

int Statement::column_type(int col) const {
  return sqlite3_column_type(stmt_, col);
}

bool Statement::is_null(int col) const {
  return column_type(col) == SQLITE_NULL;
}

std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!p) return "";
  return std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::int64_t Statement::int64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}

double Statement::real(int col) const {
  return sqlite3_column_double(stmt_, col);
}

double Statement::real_or_nan(int col) const {
  return is_null(col) ? std::nan("") : real(col);
}

std::optional<double> Statement::optional_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return real(col);
}

std::optional<std::int64_t> Statement::optional_int(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}

Transaction::Transaction(SqliteDb& db, Mode mode) : db_(db) {
  if (db.in_transaction()) {
    static std::atomic<unsigned> counter{0};
    savepoint_ = "kh_sp" + std::to_string(counter++);
    db.exec("SAVEPOINT " + savepoint_);
  } else {
    db.exec(mode == Mode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  }
}

Transaction::~Transaction() {
  if (done_) return;
  // Never throw from a destructor: a failed rollback leaves SQLite to roll back on close.
  if (savepoint_.empty()) {
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  } else {
    const std::string sql = "ROLLBACK TO " + savepoint_ + "; RELEASE " + savepoint_;
    sqlite3_exec(db_.handle(), sql.c_str(), nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  if (done_) fail("{}: transaction committed twice", db_.path().string());
  db_.exec(savepoint_.empty() ? "COMMIT" : "RELEASE " + savepoint_);
  done_ = true;
}

}  // namespace kh
