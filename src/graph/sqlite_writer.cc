#include "graph/sqlite_writer.h"

#include "numprobe/error.h"

namespace numprobe::graph {

SqliteWriter::SqliteWriter(std::string path) : path_(std::move(path)) {
  if (sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                      nullptr) != SQLITE_OK)
    fail("cannot create the database");
}

SqliteWriter::~SqliteWriter() {
  for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
  sqlite3_close(db_);
}

void SqliteWriter::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(path_ + ": SQLite: " + m);
  }
}

sqlite3_stmt* SqliteWriter::prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
    fail("cannot prepare a statement");
  stmts_.push_back(s);
  return s;
}

void SqliteWriter::step(sqlite3_stmt* s) {
  if (sqlite3_step(s) != SQLITE_DONE) fail("cannot insert");
  sqlite3_reset(s);
}

void SqliteWriter::fail(const std::string& what) const {
  throw Error(path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

}  // namespace numprobe::graph
