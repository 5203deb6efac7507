// msprobe's .vis.db SQLite schema (msprobe >= 8.2.1, tb-graph-ascend >= 8.2.0; docs/graph.md "The
// file"), which numprobe writes (vis_db_writer) and reads (vis_db_reader), plus numprobe's own
// table numprobe_meta, which msprobe's viewer ignores. Column order and types are msprobe's, so a
// file written here opens in tb-graph-ascend and a file msprobe wrote opens in `numprobe serve`.
#pragma once

namespace numprobe::graph {

inline constexpr const char* kCreateNodes =
    "CREATE TABLE IF NOT EXISTS tb_nodes (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    graph_id TEXT NOT NULL,\n"
    "    node_order INTEGER NOT NULL,\n"
    "    node_name TEXT NOT NULL,\n"
    "    node_type TEXT NOT NULL,\n"
    "    up_node TEXT,\n"
    "    sub_nodes TEXT,\n"
    "    precision_index INTEGER,\n"
    "    overflow_level TEXT,\n"
    "    micro_step_id INTEGER NOT NULL,\n"
    "    matched_node_link TEXT,\n"
    "    stack_id TEXT,\n"
    "    parallel_merge_info TEXT,\n"
    "    matched_distributed TEXT,\n"
    "    modified INTEGER NOT NULL,\n"
    "    input_data TEXT,\n"
    "    output_data TEXT,\n"
    "    data_source TEXT,\n"
    "    dump_data_dir TEXT,\n"
    "    step INTEGER NOT NULL,\n"
    "    rank INTEGER NOT NULL\n"
    ");";

inline constexpr const char* kCreateStack =
    "CREATE TABLE IF NOT EXISTS tb_stack (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    stack_info TEXT\n"
    ");";

inline constexpr const char* kCreateConfig =
    "CREATE TABLE IF NOT EXISTS tb_config (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    graph_type TEXT NOT NULL,\n"
    "    task TEXT,\n"
    "    tool_tip TEXT,\n"
    "    micro_steps INTEGER,\n"
    "    overflow_check INTEGER,\n"
    "    node_colors TEXT NOT NULL,\n"
    "    rank_list TEXT NOT NULL,\n"
    "    step_list TEXT NOT NULL\n"
    ");";

// msprobe's six indexes (db_utils.py), created after the rows are in.
inline constexpr const char* kCreateIndexes =
    "CREATE INDEX IF NOT EXISTS index1 ON tb_nodes (step, rank, data_source, up_node, "
    "node_order);\n"
    "CREATE INDEX IF NOT EXISTS index2 ON tb_nodes (step, rank, data_source, node_name);\n"
    "CREATE INDEX IF NOT EXISTS index3 ON tb_nodes (step, rank, data_source, node_order);\n"
    "CREATE INDEX IF NOT EXISTS index4 ON tb_nodes (step, rank, node_order);\n"
    "CREATE INDEX IF NOT EXISTS index5 ON tb_nodes (step, rank, micro_step_id, node_order);\n"
    "CREATE INDEX IF NOT EXISTS index6 ON tb_nodes (step, rank, modified, matched_node_link);";

// numprobe's additions (key -> JSON text): "format", "mode", "notes", "findings" (docs/graph.md).
inline constexpr const char* kCreateMeta =
    "CREATE TABLE IF NOT EXISTS numprobe_meta (\n"
    "    key TEXT PRIMARY KEY,\n"
    "    value TEXT\n"
    ");";

// A one-shot bulk load into a file written as <name>.tmp<pid> and renamed when complete (the
// writer, the shard merge): no rollback journal and no fsync per page, since the rename is the
// commit and a half-written temporary is thrown away.
inline constexpr const char* kBulkLoadPragmas =
    "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
    "PRAGMA page_size=65536; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;";

// data_source values: the target is msprobe's "NPU" side, the golden its "Bench" side.
inline constexpr const char* kTargetSource = "NPU";
inline constexpr const char* kGoldenSource = "Bench";

// node_type values (msprobe NodeOp).
enum class NodeType : int { kModule = 0, kApi = 1, kApiCollection = 9 };

}  // namespace numprobe::graph
