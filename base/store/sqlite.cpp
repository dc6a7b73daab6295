#include "base/store/sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <utility>

#include "base/errors.h"

namespace lpbench::store {

Connection::Connection(const std::string& path, int flags) : path_(path) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    if (rc == SQLITE_CANTOPEN || rc == SQLITE_PERM || rc == SQLITE_READONLY) {
      throw InputError(fmt::format("cannot open database '{}': {}", path, message));
    }
    throw StoreError(fmt::format("cannot open database '{}': {}", path, message));
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  sqlite3_close_v2(db_);
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

void Connection::fail(int code, std::string_view what) const {
  const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      throw InputError(
          fmt::format("'{}' is not a SQLite database ({}); give another --db path", path_, detail));
    case SQLITE_CORRUPT:
      throw InputError(fmt::format(
          "database '{}' is corrupt ({}); restore it from a copy or give another --db path", path_,
          detail));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw InputError(fmt::format(
          "database '{}' stayed locked by another process past the busy timeout while {}; retry "
          "when it is done",
          path_, what));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      throw InputError(
          fmt::format("cannot write database '{}' while {} ({}); check its "
                      "permissions or give another --db path",
                      path_, what, detail));
    case SQLITE_FULL:
      throw InputError(
          fmt::format("disk full while {} in database '{}'; free space and retry", what, path_));
    case SQLITE_IOERR:
      // SQLite reports only ENOSPC as SQLITE_FULL; a quota or a file-size limit fails the write
      // as an I/O error, and the errno is gone by now.
      if (code == SQLITE_IOERR_WRITE || code == SQLITE_IOERR_TRUNCATE ||
          code == SQLITE_IOERR_FSYNC) {
        throw InputError(
            fmt::format("cannot write database '{}' while {} ({}): the disk may be full, over "
                        "quota or past a file-size limit; free space and retry",
                        path_, what, detail));
      }
      throw InputError(
          fmt::format("I/O error while {} in database '{}' ({})", what, path_, detail));
    default:
      throw StoreError(fmt::format("SQLite error while {} in '{}': {}", what, path_, detail));
  }
}

void Connection::exec(std::string_view sql) {
  char* error = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) fail(rc, fmt::format("executing '{}'", text.substr(0, 60)));
}

int64_t Connection::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

Statement::Statement(const Connection& connection, std::string_view sql) : connection_(connection) {
  const int rc = sqlite3_prepare_v2(connection.handle(), sql.data(), static_cast<int>(sql.size()),
                                    &stmt_, nullptr);
  if (rc != SQLITE_OK) connection.fail(rc, fmt::format("preparing '{}'", sql.substr(0, 60)));
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind(int index, std::optional<double> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, std::optional<int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<std::string>& value) {
  return value ? bind(index, std::string_view(*value)) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  connection_.fail(rc,
                   fmt::format("running '{}'", std::string_view(sqlite3_sql(stmt_)).substr(0, 60)));
}

void Statement::run() {
  while (step()) {
  }
  // Ready to be bound and run again, as a prepared insert in a loop is.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

double Statement::column_double(int index) const {
  return sqlite3_column_double(stmt_, index);
}

std::optional<double> Statement::column_optional_double(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_double(index);
}

std::string Statement::column_text(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  return text ? std::string(text, sqlite3_column_bytes(stmt_, index)) : std::string();
}

std::optional<std::string> Statement::column_optional_text(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_text(index);
}

std::optional<int64_t> Statement::column_optional_int(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_int(index);
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

Transaction::Transaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.exec("COMMIT");
  done_ = true;
}

}  // namespace lpbench::store
