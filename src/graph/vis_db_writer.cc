#include "graph/vis_db_writer.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <future>
#include <set>
#include <unordered_map>

#include "base/file_util.h"
#include "base/json_text.h"
#include "base/worker_pool.h"
#include "graph/sqlite_writer.h"
#include "graph/vis_json.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

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

// node_type is a TEXT column holding msprobe's NodeOp number.
const char* type_text(NodeType t) {
  switch (t) {
    case NodeType::kApi:
      return "1";
    case NodeType::kApiCollection:
      return "9";
    default:
      return "0";
  }
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

// msprobe's colour bins of a mode, as tb_config.node_colors JSON.
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
    // Bin edges as msprobe writes them (literal decimals, not multiples of a step that would print
    // as 0.6000000000000001).
    const bool tensor = mode == CompareMode::kTensor;
    static const char* kStatEdges[] = {"0", "0.2", "0.4", "0.6", "0.8", "1"};
    static const char* kTensorEdges[] = {"0", "0.05", "0.1", "0.15", "0.2", "1"};
    const char* const* edges = tensor ? kTensorEdges : kStatEdges;
    const char* text = tensor ? "drop of the one-thousandth ratio from the node's inputs to its "
                                "outputs; larger is further from the golden"
                              : "largest relative error |target - golden| / |golden| of the node's "
                                "output statistics; larger is further from the golden";
    for (int i = 0; i < 5; ++i) {
      bin(kColors[i], std::string("[") + edges[i] + ", " + edges[i + 1] + "]", text);
    }
  }
  bin("#C7C7C7", "[]", "the node has no partner in the other graph");
  return out + '}';
}

}  // namespace

namespace {

// One tb_nodes row, rendered off the SQLite thread (which is the slower of the two).
struct NodeRecord {
  uint32_t node = kNoNode;
  bool new_stack = false;  // the first row with this stack: its tb_stack row goes in first
  std::string id, subs, link, stack, stack_id, input, output;
};

// Renders the rows of one side of one graph in post-order, a batch at a time.
class SideRenderer {
 public:
  SideRenderer(const GraphPair& gp, int side, std::string graph_id)
      : graph_id_(std::move(graph_id)),
        side_(side == 0 ? gp.target : *gp.golden),
        other_(side == 0 ? (gp.golden ? &*gp.golden : nullptr) : &gp.target),
        with_metrics_(side == 0 && gp.compare != nullptr),
        data_(gp.compare),
        order_(side_.graph.post_order()) {}

  size_t size() const { return order_.size(); }
  const SideGraph& side() const { return side_; }

  void render(size_t begin, size_t end, std::vector<NodeRecord>& out) {
    out.resize(end - begin);
    const Graph& g = side_.graph;
    for (size_t i = begin; i < end; ++i) {
      NodeRecord& r = out[i - begin];
      r.node = order_[i];
      const GraphNode& n = g.nodes[r.node];
      r.id.assign(graph_id_).append("_").append(n.name);
      if (n.children.empty()) {
        r.subs.clear();
      } else {
        json_name_list(r.subs, g, n.children);
      }
      const uint32_t m = side_.match.empty() ? kNoNode : side_.match[r.node];
      if (m == kNoNode || !other_) {
        r.link = "[]";
      } else {
        json_name_list(r.link, other_->graph, other_->graph.chain(m));
      }
      stack_json(r.stack, side_, n.name);
      // Stacks are numbered per side in row order: batches render one after the other.
      auto [it, fresh] = stack_ids_.emplace(r.stack, stack_ids_.size());
      r.new_stack = fresh;
      r.stack_id.assign(graph_id_).append("_").append(std::to_string(it->second));
      data_.render(side_.rows, n.entry, with_metrics_, r.input, r.output);
    }
  }

 private:
  const std::string graph_id_;
  std::unordered_map<std::string, size_t> stack_ids_;
  const SideGraph& side_;
  const SideGraph* other_;
  bool with_metrics_;
  NodeDataWriter data_;
  std::vector<uint32_t> order_;
};

}  // namespace

void write_vis_db(const std::string& path, const VisDbContent& content) {
  // A one-shot bulk load: no rollback journal, no fsync per page, none of the whole file either
  // (a graph is remade from its dumps); the rename is the commit.
  base::TempPath tmp(path, /*durable=*/false);
  {
    SqliteWriter db(tmp.tmp());
    // The indexes exist before the rows: kept up to date row by row, they cost less than six
    // CREATE INDEX scans of a table whose JSON columns make it large.
    db.exec(kBulkLoadPragmas);
    db.exec(kCreateNodes);
    db.exec(kCreateStack);
    db.exec(kCreateConfig);
    db.exec(kCreateMeta);
    db.exec(kCreateIndexes);
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
    constexpr size_t kBatch = 4096;
    for (const GraphPair* gp : content.graphs) {
      steps.insert(gp->step);
      ranks.insert(gp->rank);
      for (int s = 0; s < (gp->golden ? 2 : 1); ++s) {
        const std::string source = s == 0 ? kTargetSource : kGoldenSource;
        const std::string graph_id =
            source + "_" + std::to_string(gp->step) + "_" + std::to_string(gp->rank);
        SideRenderer renderer(*gp, s, graph_id);
        const SideGraph& side = renderer.side();
        const Graph& g = side.graph;
        micro_steps = std::max(micro_steps, g.micro_steps);
        std::string dump_dir;
        if (side.dump) {
          if (auto d = side.dump->dump.dump_data_dir()) dump_dir = std::string(*d);
        }
        // The same for every row of the side: bound once (Db::step keeps bindings).
        bind_text(ins, 2, graph_id);
        bind_text(ins, 14, source);
        bind_text(ins, 15, dump_dir);
        sqlite3_bind_int64(ins, 16, gp->step);
        sqlite3_bind_int64(ins, 17, gp->rank);
        // The next batch renders on a second thread while this one is inserted.
        std::vector<NodeRecord> ready, next;
        renderer.render(0, std::min(kBatch, renderer.size()), ready);
        for (size_t begin = 0; begin < renderer.size(); begin += kBatch) {
          const size_t nb = begin + kBatch, ne = std::min(nb + kBatch, renderer.size());
          std::future<void> pending;
          if (nb < ne) {
            pending = run_in_background([&] { renderer.render(nb, ne, next); });
          }
          for (size_t k = 0; k < ready.size(); ++k) {
            const NodeRecord& r = ready[k];
            const GraphNode& n = g.nodes[r.node];
            bind_text(ins, 1, r.id);
            sqlite3_bind_int64(ins, 3, static_cast<int64_t>(begin + k));
            bind_text(ins, 4, n.name);
            bind_text(ins, 5, type_text(n.type));
            bind_text(ins, 6, n.parent == kNoNode ? std::string_view() : g.nodes[n.parent].name);
            bind_text(ins, 7, r.subs);
            if (s == 0 && !side.precision.empty() && !std::isnan(side.precision[r.node])) {
              sqlite3_bind_double(ins, 8, side.precision[r.node]);
            } else {
              sqlite3_bind_null(ins, 8);
            }
            sqlite3_bind_int64(ins, 9, n.micro_step);
            bind_text(ins, 10, r.link);
            if (r.new_stack) {
              bind_text(ins_stack, 1, r.stack_id);
              bind_text(ins_stack, 2, r.stack);
              db.step(ins_stack);
            }
            bind_text(ins, 11, r.stack_id);
            bind_text(ins, 12, r.input);
            bind_text(ins, 13, r.output);
            db.step(ins);
          }
          if (pending.valid()) pending.get();
          ready.swap(next);
        }
      }
    }
    sqlite3_stmt* cfg = db.prepare(
        "INSERT INTO tb_config (id, graph_type, task, tool_tip, micro_steps, overflow_check, "
        "node_colors, rank_list, step_list) VALUES ('1', ?, ?, ?, ?, 0, ?, ?, ?)");
    bind_text(cfg, 1, content.compare ? "compare" : "build");
    bind_text(cfg, 2, task_name(content.mode));
    const std::string tips = tool_tip_json(content.mode), colors = node_colors_json(content.mode),
                      rank_list = int_list_json(ranks), step_list = int_list_json(steps);
    bind_text(cfg, 3, tips);
    sqlite3_bind_int64(cfg, 4, micro_steps);
    bind_text(cfg, 5, colors);
    bind_text(cfg, 6, rank_list);
    bind_text(cfg, 7, step_list);
    db.step(cfg);
    sqlite3_stmt* meta = db.prepare("INSERT INTO numprobe_meta (key, value) VALUES (?, ?)");
    const std::string notes = string_list_json(content.notes);
    std::string mode;
    base::append_py_string(mode, compare_mode_name(content.mode));
    const std::pair<const char*, std::string> rows[] = {{"format", "\"numprobe-graph 1\""},
                                                        {"mode", mode},
                                                        {"notes", notes},
                                                        {"findings", content.findings_json}};
    for (const auto& [k, v] : rows) {
      bind_text(meta, 1, k);
      bind_text(meta, 2, v);
      db.step(meta);
    }
    if (!content.shard_json.empty()) {
      bind_text(meta, 1, "shard");
      bind_text(meta, 2, content.shard_json);
      db.step(meta);
    }
    db.exec("COMMIT");
  }
  tmp.commit();
}

}  // namespace numprobe::graph
