#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

// A thin RAII layer over the SQLite C API. Only base/store includes this.
namespace lpbench::store {

// An unexpected database failure (not the user's input): a bug, or a broken environment.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Connection {
 public:
  // flags: SQLITE_OPEN_* of sqlite3_open_v2.
  Connection(const std::string& path, int flags);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(std::string_view sql);
  int64_t last_insert_rowid() const;
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // Throws for a SQLite result code: InputError for what the user can fix (not a database,
  // corrupt, locked, read-only, disk full), StoreError otherwise.
  [[noreturn]] void fail(int code, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(const Connection& connection, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite. A NaN double is stored as NULL (SQLite's rule).
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, std::optional<double> value);
  Statement& bind(int index, std::optional<int64_t> value);
  Statement& bind(int index, const std::optional<std::string>& value);
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind_null(int index);
  // Binds `values` to parameters 1, 2, ... in order.
  template <typename... Values>
  Statement& bind_all(const Values&... values) {
    int index = 0;
    (bind(++index, values), ...);
    return *this;
  }

  bool step();  // true while a row is available
  void run();   // steps to completion, then resets for the next bind-and-run

  int64_t column_int(int index) const;
  double column_double(int index) const;
  std::optional<double> column_optional_double(int index) const;
  std::string column_text(int index) const;
  std::optional<std::string> column_optional_text(int index) const;
  std::optional<int64_t> column_optional_int(int index) const;
  bool column_is_null(int index) const;

 private:
  const Connection& connection_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Reads a result row's columns left to right, so that a reader lists fields, not indices.
class Columns {
 public:
  explicit Columns(const Statement& statement) : statement_(statement) {}
  int64_t integer() { return statement_.column_int(next_++); }
  double real() { return statement_.column_double(next_++); }
  std::string text() { return statement_.column_text(next_++); }
  bool flag() { return statement_.column_int(next_++) != 0; }
  std::optional<int64_t> optional_integer() { return statement_.column_optional_int(next_++); }
  std::optional<double> optional_real() { return statement_.column_optional_double(next_++); }
  std::optional<std::string> optional_text() { return statement_.column_optional_text(next_++); }
  std::optional<bool> optional_flag() {
    const std::optional<int64_t> value = optional_integer();
    if (!value) return std::nullopt;
    return *value != 0;
  }

 private:
  const Statement& statement_;
  int next_ = 0;
};

// BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so a busy database fails (after
// the busy timeout) before anything is written. Rolled back unless committed.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool done_ = false;
};

}  // namespace lpbench::store
