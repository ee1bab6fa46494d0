// A small RAII wrapper over one SQLite connection: open with the pragmas the artifact store relies
// on (WAL, foreign keys, a 30 s busy timeout, synchronous=NORMAL), prepared statements, and a
// transaction guard. Every error is a kh::Error carrying SQLite's message, the SQL and the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kh {

class SqliteDb {
 public:
  /// Called on the fresh connection before anything that could write the file (the WAL switch
  /// rewrites the header), so a caller can refuse a file without changing a byte of it.
  using BeforeWrite = std::function<void(SqliteDb&)>;

  /// Opens (creating if needed) the database at `path`.
  explicit SqliteDb(const std::filesystem::path& path, const BeforeWrite& before_write = {});
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  /// Runs one or more statements that return no rows of interest.
  void exec(std::string_view sql);
  /// Rows changed by the last INSERT/UPDATE/DELETE on this connection (0 for an ignored insert).
  int changes() const;
  /// Whether a transaction is open on this connection.
  bool in_transaction() const;
  /// The integer a one-row, one-column query returns (e.g. "PRAGMA user_version").
  std::int64_t query_int(std::string_view sql);

  /// Throws naming the path, `sql` and SQLite's message for `code`.
  [[noreturn]] void fail_sql(int code, std::string_view sql) const;

 private:
  void enable_wal();

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

/// A prepared statement. Bind indices start at 1, column indices at 0 (as in SQLite).
class Statement {
 public:
  Statement(SqliteDb& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const std::string& text) {
    return bind(index, std::string_view(text));
  }
  // Without this a string literal would pick the bool-like integer overloads.
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  /// NaN is stored as NULL (SQLite has no NaN); read it back with real_or_nan().
  Statement& bind(int index, double value);
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<double>& value);
  /// Binds NULL for "" (an absent reference that a foreign key would otherwise check).
  Statement& bind_text_or_null(int index, std::string_view text);

  /// Advances: true when a row is ready, false when the statement is done.
  bool step();
  /// Steps a statement that returns no rows.
  void run();
  /// Resets for another run with new bindings.
  void reset();

  int column_count() const;
  std::string column_name(int col) const;
  int column_type(int col) const;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_NULL, ...
  bool is_null(int col) const;
  std::string text(int col) const;  // "" for NULL
  std::int64_t int64(int col) const;
  int int32(int col) const { return static_cast<int>(int64(col)); }
  double real(int col) const;
  double real_or_nan(int col) const;                   // NULL reads as NaN
  std::optional<double> optional_real(int col) const;  // NULL reads as nullopt
  std::optional<std::int64_t> optional_int(int col) const;

 private:
  void check_bind(int code, int index);

  SqliteDb* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

/// A transaction, rolled back unless committed. The outermost one starts with BEGIN IMMEDIATE
/// (write) so concurrent writers queue on the busy timeout instead of failing on a lock upgrade;
/// one opened inside another becomes a savepoint, so store functions that make their own
/// transaction compose into a larger one (a bundle import is one transaction).
class Transaction {
 public:
  enum class Mode { kWrite, kRead };  // kRead: BEGIN DEFERRED, a consistent snapshot for reading

  explicit Transaction(SqliteDb& db, Mode mode = Mode::kWrite);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  SqliteDb& db_;
  std::string savepoint_;  // "" for the outermost transaction
  bool done_ = false;
};

}  // namespace kh
