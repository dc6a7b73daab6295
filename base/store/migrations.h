#pragma once

#include <string_view>
#include <vector>

namespace lpbench::store {

class Connection;

// One step of the schema's history. The database's PRAGMA user_version is the number of the
// last migration applied; migrations are never edited once released, only appended.
struct Migration {
  int version;
  std::string_view description;
  std::string_view sql;
};

const std::vector<Migration>& migrations();
int latest_schema_version();

int read_schema_version(const Connection& connection);

// Applies every migration newer than the database's version, each in its own transaction.
void migrate(Connection& connection);

}  // namespace lpbench::store
