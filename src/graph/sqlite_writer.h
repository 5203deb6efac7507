// A .vis.db being written (the graph writer, the shard merge): an SQLite connection that throws
// Error naming the file, with its prepared statements finalized before it closes.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

namespace numprobe::graph {

class SqliteWriter {
 public:
  // Creates or opens `path` read-write; URIs are allowed (ATTACH 'file:...?mode=ro').
  explicit SqliteWriter(std::string path);
  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;

  void exec(const std::string& sql);
  sqlite3_stmt* prepare(const char* sql);  // finalized with the connection
  // Bindings outlive the step: a caller binds what changes and leaves what does not (the columns
  // that are the same for a whole side stay bound from its first row).
  void step(sqlite3_stmt* s);
  long long changes() const { return sqlite3_changes64(db_); }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

// An empty view binds '' (SQLite would bind NULL for a null pointer). SQLITE_STATIC: every bound
// text outlives the sqlite3_step that reads it.
inline void bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_STATIC);
}

}  // namespace numprobe::graph
