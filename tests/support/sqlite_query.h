#pragma once

#include <sqlite3.h>

#include <string>

namespace lpbench::testing {

// The first column of the first row of `sql` on the database at `db`, opened read-only straight
// through SQLite (not through the store under test); "" when there is no row or the query fails.
inline std::string query_text(const std::string& db, const std::string& sql) {
  sqlite3* handle = nullptr;
  std::string result;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(handle, 5000);  // a writer of the test may still hold its lock
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      result = text ? text : "";
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(handle);
  return result;
}

}  // namespace lpbench::testing
