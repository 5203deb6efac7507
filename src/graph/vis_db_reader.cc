#include "graph/vis_db_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "graph/vis_db_schema.h"
#include "graph/vis_json.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

// A parent chain longer than this is a cycle in a damaged file, not a model.
constexpr int kMaxDepth = 4096;

// One prepared statement; reset before each use, parameters bound by position (1-based).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& file, const char* sql) : db_(db), file_(file) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail("cannot prepare a query");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, const char* v) {
    sqlite3_bind_text(s_, i, v, -1, SQLITE_STATIC);
    return *this;
  }
  Stmt& bind_opt(int i, const std::optional<int64_t>& v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(s_, i);
    return *this;
  }
  // True while there is a row; throws on a damaged file.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("cannot read");
  }
  sqlite3_stmt* get() const { return s_; }

  [[noreturn]] void fail(const char* what) const {
    throw InputError(file_, std::string(what) + ": " + sqlite3_errmsg(db_) +
                                " (not a .vis.db graph file, or a damaged one)");
  }

 private:
  sqlite3* db_;
  const std::string& file_;
  sqlite3_stmt* s_ = nullptr;
};

std::string text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t),
                     static_cast<size_t>(sqlite3_column_bytes(s, col)));
}

std::optional<double> number(sqlite3_stmt* s, int col) {
  switch (sqlite3_column_type(s, col)) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: {
      const double v = sqlite3_column_double(s, col);
      if (std::isnan(v)) return std::nullopt;
      return v;
    }
    case SQLITE_TEXT: {
      const std::string t = text(s, col);
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      if (t.empty() || end != t.c_str() + t.size() || std::isnan(v)) return std::nullopt;
      return v;
    }
    default:
      return std::nullopt;
  }
}

const char* source_of(Side side) {
  return side == Side::kTarget ? kTargetSource : kGoldenSource;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The columns every node query selects first, in this order.
#define NODE_COLUMNS "node_name, node_type, sub_nodes, precision_index, matched_node_link, up_node"

}  // namespace

struct VisDbReader::Row {
  std::string name;
  int type = 0;
  int64_t children = 0;
  std::optional<double> precision;
  std::vector<std::string> link;
  std::string up_node;
};

struct VisDbReader::Statements {
  Statements(sqlite3* db, const std::string& f)
      : children(db, f,
                 "SELECT " NODE_COLUMNS
                 " FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3"
                 " AND up_node = ?4 AND (?5 IS NULL OR micro_step_id = ?5) ORDER BY node_order"),
        null_roots(
            db, f,
            "SELECT " NODE_COLUMNS
            " FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3"
            " AND up_node IS NULL AND (?5 IS NULL OR micro_step_id = ?5) ORDER BY node_order"),
        node(db, f,
             "SELECT " NODE_COLUMNS
             ", micro_step_id, input_data, output_data, stack_id FROM tb_nodes"
             " WHERE step = ?1 AND rank = ?2 AND data_source = ?3 AND node_name = ?4 LIMIT 1"),
        up_node(db, f,
                "SELECT up_node FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3"
                " AND node_name = ?4 LIMIT 1"),
        precision(db, f,
                  "SELECT precision_index, matched_node_link FROM tb_nodes WHERE step = ?1 AND"
                  " rank = ?2 AND data_source = ?3 AND node_name = ?4 LIMIT 1"),
        stack(db, f, "SELECT stack_info FROM tb_stack WHERE id = ?1"),
        search(db, f,
               "SELECT " NODE_COLUMNS
               " FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3"
               " AND instr(lower(node_name), ?4) > 0 ORDER BY node_order"),
        unmatched(db, f,
                  "SELECT " NODE_COLUMNS
                  " FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3 AND"
                  " (matched_node_link IS NULL OR trim(matched_node_link) IN ('', '[]'))"
                  " ORDER BY node_order"),
        all(db, f,
            "SELECT " NODE_COLUMNS
            " FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3 ORDER BY "
            "node_order"),
        has_side(db, f,
                 "SELECT 1 FROM tb_nodes WHERE step = ?1 AND rank = ?2 AND data_source = ?3 "
                 "LIMIT 1") {}
  Stmt children, null_roots, node, up_node, precision, stack, search, unmatched, all, has_side;
};

namespace {

// A read-only URI for the file. msprobe writes its files in WAL mode, and SQLite opens such a file,
// even read-only, by creating -shm (and -wal) files beside it: a viewer must not change the
// directory it reads. immutable=1 opens without them; only when a -wal file is already there
// (non-empty: a writer that never checkpointed, whose last rows live in it) is the file opened
// normally so that those rows are read. numprobe's own files are written whole and renamed into
// place.
std::string read_only_uri(const std::string& path) {
  std::string uri = "file:";
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  std::error_code ec;
  const auto wal_bytes = std::filesystem::file_size(path + "-wal", ec);
  const bool wal = !ec && wal_bytes > 0;
  return uri + (wal ? "?mode=ro" : "?mode=ro&immutable=1");
}

}  // namespace

VisDbReader::VisDbReader(const std::string& path) : path_(path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(read_only_uri(path).c_str(), &db,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  db_ = db;
  if (rc != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    db_ = nullptr;
    throw InputError(path, "cannot open as a .vis.db graph file: " + msg);
  }
  try {
    std::set<std::string> tables;
    {
      Stmt t(db, path_, "SELECT name FROM sqlite_master WHERE type = 'table'");
      while (t.step()) tables.insert(text(t.get(), 0));
    }
    for (const char* need : {"tb_nodes", "tb_config", "tb_stack"}) {
      if (!tables.count(need)) {
        throw InputError(path, std::string("not a .vis.db graph file: no table ") + need);
      }
    }
    {
      Stmt c(db, path_,
             "SELECT graph_type, task, tool_tip, micro_steps, node_colors, rank_list, step_list "
             "FROM tb_config LIMIT 1");
      if (!c.step()) throw InputError(path, "tb_config has no row");
      sqlite3_stmt* s = c.get();
      config_.graph_type = text(s, 0);
      config_.task = text(s, 1);
      config_.tool_tip = text(s, 2);
      config_.micro_steps = sqlite3_column_int64(s, 3);
      config_.colors = parse_color_bins(text(s, 4));
      config_.ranks = parse_int_list(text(s, 5));
      config_.steps = parse_int_list(text(s, 6));
    }
    if (config_.steps.empty() || config_.ranks.empty()) {
      // A file without the lists: take the graph of its first row.
      Stmt first(db, path_, "SELECT step, rank FROM tb_nodes LIMIT 1");
      if (first.step()) {
        config_.steps = {sqlite3_column_int64(first.get(), 0)};
        config_.ranks = {sqlite3_column_int64(first.get(), 1)};
      }
    }
    if (tables.count("numprobe_meta")) {
      Stmt m(db, path_, "SELECT key, value FROM numprobe_meta ORDER BY key");
      while (m.step()) meta_.emplace_back(text(m.get(), 0), text(m.get(), 1));
    }
    st_ = std::make_unique<Statements>(db, path_);
    // msprobe writes a compare's both sides for every step and rank: one probe suffices.
    if (!config_.steps.empty() && !config_.ranks.empty()) {
      has_golden_ = st_->has_side.reset()
                        .bind(1, config_.steps.front())
                        .bind(2, config_.ranks.front())
                        .bind(3, kGoldenSource)
                        .step();
      st_->has_side.reset();
    }
  } catch (...) {
    st_.reset();
    sqlite3_close(db);
    db_ = nullptr;
    throw;
  }
}

VisDbReader::~VisDbReader() {
  st_.reset();  // statements before the connection
  sqlite3_close(static_cast<sqlite3*>(db_));
}

bool VisDbReader::has_graph(int64_t step, int64_t rank) const {
  return std::find(config_.steps.begin(), config_.steps.end(), step) != config_.steps.end() &&
         std::find(config_.ranks.begin(), config_.ranks.end(), rank) != config_.ranks.end();
}

std::string VisDbReader::color_of(double v) const {
  double top = -INFINITY;
  for (const ColorBin& b : config_.colors) {
    if (b.has_range) top = std::max(top, b.hi);
  }
  for (const ColorBin& b : config_.colors) {
    if (!b.has_range) continue;
    if (b.lo == b.hi ? v == b.lo : (b.lo <= v && (v < b.hi || (b.hi == top && v == top)))) {
      return b.color;
    }
  }
  return {};
}

VisDbReader::Row VisDbReader::read_row(void* stmt) const {
  auto* s = static_cast<sqlite3_stmt*>(stmt);
  Row r;
  r.name = text(s, 0);
  r.type = sqlite3_column_int(s, 1);
  r.children = count_list_items(text(s, 2));
  r.precision = number(s, 3);
  r.link = parse_string_list(text(s, 4));
  r.up_node = text(s, 5);
  return r;
}

std::optional<double> VisDbReader::target_precision(const GraphKey& g, const std::string& name) {
  Stmt& q = st_->precision;
  q.reset().bind(1, g.step).bind(2, g.rank).bind(3, kTargetSource).bind(4, name);
  std::optional<double> p;
  if (q.step()) p = number(q.get(), 0);
  q.reset();
  return p;
}

NodeSummary VisDbReader::summarize(const GraphKey& g, const Row& r) {
  NodeSummary n;
  n.name = r.name;
  n.type = r.type;
  n.children = r.children;
  n.matched = !r.link.empty();
  // A golden node shows the colour of the target node it is matched to (the link's last name).
  n.precision =
      g.side == Side::kTarget || !n.matched ? r.precision : target_precision(g, r.link.back());
  if (!n.matched) {
    n.color = kUnmatchedColor;
  } else if (n.precision) {
    n.color = color_of(*n.precision);
  }
  return n;
}

std::vector<NodeSummary> VisDbReader::children(const GraphKey& g,
                                               const std::optional<std::string>& parent) {
  std::vector<NodeSummary> out;
  auto run = [&](Stmt& q) {
    q.reset().bind(1, g.step).bind(2, g.rank).bind(3, source_of(g.side)).bind_opt(5, g.micro_step);
    q.bind(4, parent ? *parent : std::string());
    while (q.step()) out.push_back(summarize(g, read_row(q.get())));
    q.reset();
  };
  run(st_->children);
  if (!parent && out.empty()) run(st_->null_roots);  // roots written with a NULL up_node
  return out;
}

std::vector<std::string> VisDbReader::path_of(const GraphKey& g, const std::string& name) {
  std::vector<std::string> chain;
  std::string cur = name;
  Stmt& q = st_->up_node;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    q.reset().bind(1, g.step).bind(2, g.rank).bind(3, source_of(g.side)).bind(4, cur);
    if (!q.step()) {
      q.reset();
      return depth == 0 ? std::vector<std::string>{} : chain;
    }
    const std::string up = text(q.get(), 0);
    q.reset();
    chain.push_back(cur);
    if (up.empty() || std::find(chain.begin(), chain.end(), up) != chain.end()) break;
    cur = up;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

std::optional<NodeDetail> VisDbReader::node(const GraphKey& g, const std::string& name) {
  Stmt& q = st_->node;
  q.reset().bind(1, g.step).bind(2, g.rank).bind(3, source_of(g.side)).bind(4, name);
  if (!q.step()) {
    q.reset();
    return std::nullopt;
  }
  const Row r = read_row(q.get());
  NodeDetail d;
  d.micro_step = sqlite3_column_int64(q.get(), 6);
  d.input = parse_data_rows(text(q.get(), 7));
  d.output = parse_data_rows(text(q.get(), 8));
  const std::string stack_id = text(q.get(), 9);
  q.reset();
  static_cast<NodeSummary&>(d) = summarize(g, r);
  d.matched_link = r.link;
  d.parent_chain = path_of(g, name);
  if (!d.parent_chain.empty()) d.parent_chain.pop_back();  // the node itself
  Stmt& s = st_->stack;
  s.reset().bind(1, stack_id);
  if (s.step()) d.stack = parse_string_list(text(s.get(), 0));
  s.reset();
  return d;
}

// kind: 0 search (arg: the lower-cased query, matched in SQL), 1 colour (arg: "#RRGGBB"), 2
// unmatched. SQLite lets the colour lookups of golden rows run while the scan is open.
SearchResult VisDbReader::scan(const GraphKey& g, size_t limit, int kind, const std::string& arg) {
  SearchResult out;
  Stmt& q = kind == 0 ? st_->search : kind == 2 ? st_->unmatched : st_->all;
  q.reset().bind(1, g.step).bind(2, g.rank).bind(3, source_of(g.side));
  if (kind == 0) q.bind(4, lower(arg));
  std::vector<Row> rows;
  while (q.step()) {
    Row r = read_row(q.get());
    if (kind == 1 && summarize(g, r).color != arg) continue;
    if (rows.size() == limit) {
      out.truncated = true;
      break;
    }
    rows.push_back(std::move(r));
  }
  q.reset();
  for (const Row& r : rows) {
    SearchHit h;
    h.name = r.name;
    h.color = summarize(g, r).color;
    h.path = path_of(g, r.name);
    out.results.push_back(std::move(h));
  }
  return out;
}

SearchResult VisDbReader::search(const GraphKey& g, const std::string& query, size_t limit) {
  return scan(g, limit, 0, query);
}

SearchResult VisDbReader::filter_color(const GraphKey& g, const std::string& color, size_t limit) {
  return scan(g, limit, 1, color);
}

SearchResult VisDbReader::filter_unmatched(const GraphKey& g, size_t limit) {
  return scan(g, limit, 2, std::string());
}

}  // namespace numprobe::graph
