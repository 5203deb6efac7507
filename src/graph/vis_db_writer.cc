#include "graph/vis_db_writer.h"

#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "base/py_json_writer.h"
#include "graph/graph_build.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

class Db {
 public:
  explicit Db(std::string path) : path_(std::move(path)) {
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK)
      fail("cannot create the database");
  }
  ~Db() {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "unknown error";
      sqlite3_free(err);
      throw Error(path_ + ": SQLite: " + m);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      fail("cannot prepare a statement");
    stmts_.push_back(s);
    return s;
  }
  void step(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail("cannot insert");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  [[noreturn]] void fail(const std::string& what) {
    throw Error(path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

// An empty view binds '' (SQLite would bind NULL for a null pointer).
void bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

void json_name_list(std::string& out, const Graph& g, const std::vector<uint32_t>& ids) {
  out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    base::append_py_string(out, g.nodes[ids[i]].name);
  }
  out += ']';
}

// The stack lines recorded for a node; a backward node without its own takes its forward call's.
void stack_json(std::string& out, const SideGraph& side, std::string_view name) {
  out = "[";
  const RankDump* d = side.dump;
  if (d && d->stack) {
    const std::vector<uint32_t>* f = d->stack->frames_of(name);
    if (!f) {
      const size_t at = name.rfind(".backward");
      if (at != std::string_view::npos) {
        std::string fwd(name);
        fwd.replace(at, 9, ".forward");
        f = d->stack->frames_of(fwd);
      }
    }
    if (f) {
      for (size_t i = 0; i < f->size(); ++i) {
        if (i) out += ", ";
        base::append_py_string(out, d->stack->strings.get((*f)[i]));
      }
    }
  }
  out += ']';
}

const char* task_name(CompareMode m) {
  switch (m) {
    case CompareMode::kMd5:
      return "md5";
    case CompareMode::kTensor:
      return "all";
    default:
      return "summary";
  }
}

const char* mode_name(CompareMode m) {
  switch (m) {
    case CompareMode::kMd5:
      return "md5";
    case CompareMode::kTensor:
      return "tensor";
    default:
      return "statistics";
  }
}

std::string tool_tip_json(CompareMode m) {
  switch (m) {
    case CompareMode::kMd5:
      return R"({"md5": "CRC-32 of the tensor's bytes; equal values mean equal data"})";
    case CompareMode::kTensor:
      return R"({"One Thousandth Err Ratio": "share of elements whose relative error is at most 0.001", )"
             R"("Five Thousandths Err Ratio": "share of elements whose relative error is at most 0.005", )"
             R"("Cosine": "cosine similarity of target and golden", )"
             R"("MaxAbsErr": "largest absolute difference of an element", )"
             R"("MaxRelativeErr": "largest relative difference of an element"})";
    default:
      return R"({"Max diff": "target max minus golden max", "Min diff": "target min minus golden min", )"
             R"("Mean diff": "target mean minus golden mean", )"
             R"("L2norm diff": "target L2 norm minus golden L2 norm"})";
  }
}

}  // namespace

std::string node_colors_json(CompareMode mode) {
  static const char* kColors[] = {"#FFFCF3", "#FFEDBE", "#FFDC7F", "#FFC62E", "#FF704D"};
  std::string out = "{";
  auto bin = [&](const char* color, std::string_view value, std::string_view text) {
    if (out.size() > 1) out += ", ";
    base::append_py_string(out, color);
    out += ": {\"value\": ";
    out += value;
    out += ", \"description\": ";
    base::append_py_string(out, text);
    out += '}';
  };
  if (mode == CompareMode::kMd5) {
    bin(kColors[0], "[1, 1]", "every input and output of this node has the golden's md5");
    bin(kColors[4], "[0, 0]", "some input or output of this node differs from the golden's md5");
  } else {
    const bool tensor = mode == CompareMode::kTensor;
    const double step = tensor ? 0.05 : 0.2;
    const char* text = tensor ? "drop of the one-thousandth ratio from the node's inputs to its "
                                "outputs; larger is further from the golden"
                              : "largest relative error |target - golden| / |golden| of the node's "
                                "output statistics; larger is further from the golden";
    for (int i = 0; i < 5; ++i) {
      std::string v = "[";
      base::append_py_float(v, i * step);
      v += ", ";
      if (i == 4) {
        v += "1";
      } else {
        base::append_py_float(v, (i + 1) * step);
      }
      v += ']';
      bin(kColors[i], v, text);
    }
  }
  bin("#C7C7C7", "[]", "the node has no partner in the other graph");
  return out + '}';
}

void write_vis_db(const std::string& path, const VisDbContent& content) {
  const std::string tmp = path + ".tmp";
  std::remove(tmp.c_str());
  {
    Db db(tmp);
    // A one-shot bulk load: no rollback journal, no fsync per page; the rename below is the commit.
    db.exec(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
        "PRAGMA cache_size=-65536;");
    db.exec(kCreateNodes);
    db.exec(kCreateStack);
    db.exec(kCreateConfig);
    db.exec(kCreateMeta);
    db.exec("BEGIN");
    sqlite3_stmt* ins = db.prepare(
        "INSERT INTO tb_nodes (id, graph_id, node_order, node_name, node_type, up_node, sub_nodes, "
        "precision_index, overflow_level, micro_step_id, matched_node_link, stack_id, "
        "parallel_merge_info, matched_distributed, modified, input_data, output_data, data_source, "
        "dump_data_dir, step, rank) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, '', '{}', 0, ?, "
        "?, ?, ?, ?, ?)");
    sqlite3_stmt* ins_stack = db.prepare("INSERT INTO tb_stack (id, stack_info) VALUES (?, ?)");
    std::set<int64_t> steps, ranks;
    int64_t micro_steps = 1;
    std::string id, subs, link, stack, input, output;
    for (const GraphPair* gp : content.graphs) {
      steps.insert(gp->step);
      ranks.insert(gp->rank);
      NodeDataWriter data(gp->compare);
      for (int s = 0; s < (gp->golden ? 2 : 1); ++s) {
        const SideGraph& side = s == 0 ? gp->target : *gp->golden;
        const SideGraph* other = s == 0 ? (gp->golden ? &*gp->golden : nullptr) : &gp->target;
        const Graph& g = side.graph;
        micro_steps = std::max(micro_steps, g.micro_steps);
        const std::string source = s == 0 ? kTargetSource : kGoldenSource;
        const std::string graph_id =
            source + "_" + std::to_string(gp->step) + "_" + std::to_string(gp->rank);
        std::string dump_dir;
        if (side.dump) {
          if (auto d = side.dump->dump.dump_data_dir()) dump_dir = std::string(*d);
        }
        std::unordered_map<std::string, size_t> stack_ids;
        const std::vector<uint32_t> order = g.post_order();
        for (size_t i = 0; i < order.size(); ++i) {
          const GraphNode& n = g.nodes[order[i]];
          id = graph_id + "_";
          id.append(n.name);
          bind_text(ins, 1, id);
          bind_text(ins, 2, graph_id);
          sqlite3_bind_int64(ins, 3, static_cast<int64_t>(i));
          bind_text(ins, 4, n.name);
          bind_text(ins, 5, std::to_string(static_cast<int>(n.type)));
          bind_text(ins, 6, n.parent == kNoNode ? std::string_view() : g.nodes[n.parent].name);
          if (n.children.empty()) {
            subs.clear();
          } else {
            json_name_list(subs, g, n.children);
          }
          bind_text(ins, 7, subs);
          if (s == 0 && !side.precision.empty() && !std::isnan(side.precision[order[i]])) {
            sqlite3_bind_double(ins, 8, side.precision[order[i]]);
          } else {
            sqlite3_bind_null(ins, 8);
          }
          sqlite3_bind_int64(ins, 9, n.micro_step);
          const uint32_t m = side.match.empty() ? kNoNode : side.match[order[i]];
          if (m == kNoNode || !other) {
            link = "[]";
          } else {
            json_name_list(link, other->graph, other->graph.chain(m));
          }
          bind_text(ins, 10, link);
          stack_json(stack, side, n.name);
          auto [it, fresh] = stack_ids.emplace(stack, stack_ids.size());
          const std::string stack_id = graph_id + "_" + std::to_string(it->second);
          if (fresh) {
            bind_text(ins_stack, 1, stack_id);
            bind_text(ins_stack, 2, stack);
            db.step(ins_stack);
          }
          bind_text(ins, 11, stack_id);
          data.render(side.rows, n.entry, s == 0 && gp->compare, input, output);
          bind_text(ins, 12, input);
          bind_text(ins, 13, output);
          bind_text(ins, 14, source);
          bind_text(ins, 15, dump_dir);
          sqlite3_bind_int64(ins, 16, gp->step);
          sqlite3_bind_int64(ins, 17, gp->rank);
          db.step(ins);
        }
      }
    }
    auto int_list = [](const std::set<int64_t>& v) {
      std::string s = "[";
      for (int64_t x : v) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
      return s + "]";
    };
    sqlite3_stmt* cfg = db.prepare(
        "INSERT INTO tb_config (id, graph_type, task, tool_tip, micro_steps, overflow_check, "
        "node_colors, rank_list, step_list) VALUES ('1', ?, ?, ?, ?, 0, ?, ?, ?)");
    bind_text(cfg, 1, content.compare ? "compare" : "build");
    bind_text(cfg, 2, task_name(content.mode));
    bind_text(cfg, 3, tool_tip_json(content.mode));
    sqlite3_bind_int64(cfg, 4, micro_steps);
    bind_text(cfg, 5, node_colors_json(content.mode));
    bind_text(cfg, 6, int_list(ranks));
    bind_text(cfg, 7, int_list(steps));
    db.step(cfg);
    sqlite3_stmt* meta = db.prepare("INSERT INTO numprobe_meta (key, value) VALUES (?, ?)");
    std::string notes = "[";
    for (size_t i = 0; i < content.notes.size(); ++i) {
      if (i) notes += ", ";
      base::append_py_string(notes, content.notes[i]);
    }
    notes += ']';
    std::string mode;
    base::append_py_string(mode, mode_name(content.mode));
    const std::pair<const char*, std::string> rows[] = {{"format", "\"numprobe-graph 1\""},
                                                        {"mode", mode},
                                                        {"notes", notes},
                                                        {"findings", content.findings_json}};
    for (const auto& [k, v] : rows) {
      bind_text(meta, 1, k);
      bind_text(meta, 2, v);
      db.step(meta);
    }
    db.exec("COMMIT");
    db.exec(kCreateIndexes);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + " into place");
  }
}

}  // namespace numprobe::graph
