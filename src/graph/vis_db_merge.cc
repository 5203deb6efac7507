#include "graph/vis_db_merge.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "base/file_util.h"
#include "base/json_cursor.h"
#include "base/json_text.h"
#include "graph/sqlite_writer.h"
#include "graph/vis_db_reader.h"
#include "graph/vis_db_schema.h"
#include "graph/vis_json.h"
#include "numprobe/compare/shard.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

// What the merge needs of one shard's file.
struct ShardGraph {
  std::string path;
  int index = 0, count = 0;
  std::vector<std::string> units;
  VisConfig config;
  std::map<std::string, std::string> meta;  // key -> JSON text
};

std::string meta_text(const ShardGraph& s, const char* key) {
  auto it = s.meta.find(key);
  return it == s.meta.end() ? std::string() : it->second;
}

ShardGraph read_shard_graph(const std::string& path) {
  ShardGraph s;
  s.path = path;
  VisDbReader r(path);
  s.config = r.config();
  for (const auto& [k, v] : r.meta()) s.meta[k] = v;
  const std::string block = meta_text(s, "shard");
  if (block.empty())
    throw InputError(path,
                     "not a shard's graph (no numprobe_meta \"shard\": was it built with "
                     "--shard?)");
  base::JsonCursor c(block.data(), block.size(), path + " (numprobe_meta shard)");
  if (c.peek() != base::JsonType::kObject) c.fail_schema("shard must be an object");
  c.begin_object();
  std::string_view key;
  while (c.next_key(key)) {
    if (key == "index" || key == "count") {
      const bool is_index = key == "index";
      if (c.peek() != base::JsonType::kNumber) c.fail_schema("index/count must be numbers");
      const base::JsonNumber n = c.read_number();
      if (!n.is_int || n.int_value < 1 || n.int_value > 1000000)
        c.fail_schema("index/count out of range");
      (is_index ? s.index : s.count) = static_cast<int>(n.int_value);
    } else if (key == "units") {
      if (c.peek() != base::JsonType::kArray) c.fail_schema("units must be an array");
      c.begin_array();
      while (c.next_item()) {
        if (c.peek() != base::JsonType::kString) c.fail_schema("units must be strings");
        s.units.emplace_back(c.read_string());
      }
    } else {
      c.skip_value();
    }
  }
  if (s.index < 1 || s.index > s.count) c.fail_schema("the shard needs index <= count");
  return s;
}

// The items of a JSON object (key, raw value text) or list (raw item texts), in order.
std::vector<std::pair<std::string, std::string>> object_items(const std::string& json,
                                                              const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  if (json.empty()) return out;
  base::JsonCursor c(json.data(), json.size(), name);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("expected an object");
  c.begin_object();
  std::string_view key;
  while (c.next_key(key)) {
    std::string k(key);
    out.emplace_back(std::move(k), std::string(c.raw_value()));
  }
  return out;
}

// "step/rank" findings keys in summary order (step, then rank), as findings_json writes them.
std::pair<long long, long long> findings_key(const std::string& k) {
  long long step = 0, rank = 0;
  if (std::sscanf(k.c_str(), "%lld/%lld", &step, &rank) != 2) return {0, 0};
  return {step, rank};
}

// A file name as an SQL string literal ('' doubles a quote), for ATTACH.
std::string sql_literal(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

std::string shard_meta_json(int index, int count, const std::vector<std::string>& units) {
  return "{\"index\": " + std::to_string(index) + ", \"count\": " + std::to_string(count) +
         ", \"units\": " + string_list_json(units) + "}";
}

VisDbMergeResult merge_vis_dbs(const std::vector<std::string>& paths, const std::string& out) {
  if (paths.empty()) throw Error("merge: no shard graph given");
  std::vector<ShardGraph> shards;
  for (const std::string& p : paths) shards.push_back(read_shard_graph(p));
  // A shard with no ranks to build has no graph: its mode and task say nothing. The first shard
  // with a graph gives the merged file's configuration.
  auto has_graph = [](const ShardGraph& s) { return !s.config.ranks.empty(); };
  const ShardGraph* model = &shards.front();
  for (const ShardGraph& s : shards) {
    if (has_graph(s) && (!has_graph(*model) || s.index < model->index)) model = &s;
  }
  const ShardGraph& first = *model;
  std::map<int, const ShardGraph*> by_index;
  for (const ShardGraph& s : shards) {
    if (s.count != first.count || s.units != first.units ||
        s.config.graph_type != first.config.graph_type ||
        (has_graph(s) && has_graph(first) &&
         (s.config.task != first.config.task || meta_text(s, "mode") != meta_text(first, "mode"))))
      throw Error("merge: " + s.path + " and " + first.path + " are shards of different graphs");
    auto [it, fresh] = by_index.emplace(s.index, &s);
    if (!fresh)
      throw Error("merge: graph shard " + std::to_string(s.index) + "/" + std::to_string(s.count) +
                  " is given twice: " + it->second->path + " and " + s.path);
  }
  VisDbMergeResult r;
  r.path = out;
  r.count = first.count;
  for (int k = 1; k <= r.count; ++k) {
    if (by_index.count(k)) {
      r.present.push_back(k);
      continue;
    }
    r.missing.push_back(k);
    const auto [b, e] = shard_unit_range(first.units.size(), k, r.count);
    r.missing_ranks.push_back("shard " + std::to_string(k) + "/" + std::to_string(r.count) + ": " +
                              describe_units(first.units, b, e));
  }

  // Notes (first seen first), findings (in (step, rank) order), steps and ranks: every shard's.
  std::vector<std::string> notes;
  std::set<std::string> seen_notes;
  std::vector<std::pair<std::string, std::string>> findings;
  std::set<int64_t> steps, ranks;
  int64_t micro_steps = 0;
  for (const auto& [k, s] : by_index) {
    for (std::string& n : parse_string_list(meta_text(*s, "notes")))
      if (seen_notes.insert(n).second) notes.push_back(std::move(n));
    for (auto& f : object_items(meta_text(*s, "findings"), s->path + " (findings)"))
      findings.push_back(std::move(f));
    steps.insert(s->config.steps.begin(), s->config.steps.end());
    ranks.insert(s->config.ranks.begin(), s->config.ranks.end());
    micro_steps = std::max(micro_steps, s->config.micro_steps);
  }
  for (const std::string& m : r.missing_ranks) notes.push_back("not in this graph: " + m);
  std::stable_sort(findings.begin(), findings.end(), [](const auto& a, const auto& b) {
    return findings_key(a.first) < findings_key(b.first);
  });
  std::string findings_json = "{";
  for (size_t i = 0; i < findings.size(); ++i) {
    if (i) findings_json += ", ";
    base::append_py_string(findings_json, findings[i].first);
    findings_json += ": " + findings[i].second;
  }
  findings_json += '}';

  // Remade from its shards at will: no fsync, the rename is the commit (as write_vis_db).
  base::TempPath tmp(out, /*durable=*/false);
  {
    SqliteWriter db(tmp.tmp());
    db.exec(kBulkLoadPragmas);
    db.exec(kCreateNodes);
    db.exec(kCreateStack);
    db.exec(kCreateConfig);
    db.exec(kCreateMeta);
    db.exec("BEGIN");
    bool config_done = false;
    // The model shard first, so that its tb_config row is the one kept.
    std::vector<const ShardGraph*> order = {&first};
    for (const auto& [k, s] : by_index)
      if (s != &first) order.push_back(s);
    for (const ShardGraph* s : order) {
      db.exec("ATTACH DATABASE " + sql_literal("file:" + s->path + "?mode=ro") + " AS shard");
      db.exec("INSERT INTO tb_nodes SELECT * FROM shard.tb_nodes");
      r.nodes += db.changes();
      // Stack ids carry their graph's id; the same id twice would be the same stack.
      db.exec("INSERT OR IGNORE INTO tb_stack SELECT * FROM shard.tb_stack");
      if (!config_done) {
        // Colours, tool tips and task are the same in every shard of one graph: the first's.
        db.exec("INSERT INTO tb_config SELECT * FROM shard.tb_config LIMIT 1");
        config_done = true;
      }
      db.exec("COMMIT");
      db.exec("DETACH DATABASE shard");
      db.exec("BEGIN");
    }
    sqlite3_stmt* config =
        db.prepare("UPDATE tb_config SET micro_steps = ?, rank_list = ?, step_list = ?");
    const std::string rank_list = int_list_json(ranks), step_list = int_list_json(steps);
    sqlite3_bind_int64(config, 1, micro_steps);
    bind_text(config, 2, rank_list);
    bind_text(config, 3, step_list);
    db.step(config);
    sqlite3_stmt* meta = db.prepare("INSERT INTO numprobe_meta (key, value) VALUES (?, ?)");
    const std::pair<const char*, std::string> rows[] = {{"format", meta_text(first, "format")},
                                                        {"mode", meta_text(first, "mode")},
                                                        {"notes", string_list_json(notes)},
                                                        {"findings", findings_json}};
    for (const auto& [key, value] : rows) {
      bind_text(meta, 1, key);
      bind_text(meta, 2, value);
      db.step(meta);
    }
    db.exec(kCreateIndexes);
    db.exec("COMMIT");
  }
  tmp.commit();
  return r;
}

}  // namespace numprobe::graph
