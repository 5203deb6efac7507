#include "convert/ms_dump_scan.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe::convert {
namespace {

bool parse_id(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Entries of a directory, sorted by name; errors become problems.
std::vector<fs::directory_entry> list_dir(const fs::path& dir, MsDumpScan& scan) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    scan.problems.push_back({dir.string(), "cannot be listed: " + ec.message()});
    return out;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      scan.problems.push_back({dir.string(), "listing stopped: " + ec.message()});
      break;
    }
    out.push_back(*it);
  }
  std::sort(out.begin(), out.end(), [](const fs::directory_entry& a, const fs::directory_entry& b) {
    return a.path().filename() < b.path().filename();
  });
  return out;
}

bool is_dir(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_directory(ec);
}

// execution_order/ms_execution_order_graph_<g>.csv: a header line, then one kernel full name
// ("Default/MatMul-op5") per line, in the order the graph runs them.
std::map<int64_t, std::vector<std::string>> read_execution_orders(const fs::path& dir,
                                                                  MsDumpScan& scan) {
  std::map<int64_t, std::vector<std::string>> out;
  constexpr std::string_view kPrefix = "ms_execution_order_graph_";
  for (const auto& e : list_dir(dir, scan)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || name.size() < kPrefix.size() + 5 ||
        name.substr(name.size() - 4) != ".csv")
      continue;  // ms_global_execution_order_graph_<g>.csv lists iterations; not needed here
    int64_t g = 0;
    if (!parse_id(name.substr(kPrefix.size(), name.size() - kPrefix.size() - 4), g)) {
      scan.problems.push_back({e.path().string(), "unknown execution order file name"});
      continue;
    }
    std::ifstream in(e.path());
    if (!in) {
      scan.problems.push_back({e.path().string(), "cannot be read"});
      continue;
    }
    std::vector<std::string> names;
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (header) {
        header = false;
        if (line.rfind("NodeExecutionOrder", 0) == 0) continue;
        scan.problems.push_back(
            {e.path().string(), "no NodeExecutionOrder header; every line read as a kernel"});
      }
      if (!line.empty()) names.push_back(line);
    }
    out[g] = std::move(names);
  }
  return out;
}

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

// Splits the files of one (op type, scope, task, stream) group into calls: a slot seen twice
// starts another call (a kernel run twice in one iteration, e.g. in a loop).
void add_calls(std::vector<MsTensorFile> files, int64_t graph, std::vector<MsKernelCall>& out) {
  std::sort(files.begin(), files.end(), [](const MsTensorFile& a, const MsTensorFile& b) {
    return a.name.timestamp < b.name.timestamp;
  });
  MsKernelCall cur;
  std::set<std::pair<bool, int64_t>> seen;
  auto flush = [&] {
    if (cur.files.empty()) return;
    std::sort(cur.files.begin(), cur.files.end(), [](const MsTensorFile& a, const MsTensorFile& b) {
      return std::make_pair(a.name.output, a.name.index) <
             std::make_pair(b.name.output, b.name.index);
    });
    out.push_back(std::move(cur));
    cur = MsKernelCall();
    seen.clear();
  };
  for (MsTensorFile& f : files) {
    if (!seen.insert({f.name.output, f.name.index}).second) flush();
    if (cur.files.empty()) {
      cur.op_type = f.name.op_type;
      cur.scope = f.name.scope;
      cur.full_name = f.name.scope;
      cur.graph = graph;
      cur.first_timestamp = f.name.timestamp;
    }
    cur.files.push_back(std::move(f));
  }
  flush();
}

// A step cut short: the kernels the execution order file lists after the last one dumped.
void check_complete(const fs::path& dir, const std::vector<MsKernelCall>& calls,
                    const std::vector<std::string>& csv, MsDumpScan& scan) {
  std::unordered_map<std::string, size_t> pos;
  for (size_t i = 0; i < csv.size(); ++i) pos.emplace(underscored(csv[i]), i);
  int64_t last = -1;
  for (const MsKernelCall& c : calls) {
    auto p = pos.find(c.scope);
    if (p != pos.end()) last = std::max(last, static_cast<int64_t>(p->second));
  }
  if (last < 0 || static_cast<size_t>(last) + 1 >= csv.size()) return;
  const size_t missing = csv.size() - static_cast<size_t>(last) - 1;
  scan.problems.push_back(
      {dir.string(), "the last " + std::to_string(missing) + " of " + std::to_string(csv.size()) +
                         " kernels of the graph's execution order have no "
                         "files (first: " +
                         csv[static_cast<size_t>(last) + 1] + "): the run stopped mid-step?"});
}

// One <net>/<graph>/<iteration> directory: its files grouped into calls, checked against the
// graph's execution order, and returned in that order. MindSpore's CPU runtime runs kernels
// without a data dependency between them as they become ready (the loss gradient's RealDiv before
// the first forward kernel), so timestamps can order two runs of one graph differently; the
// execution order file cannot. A call the file does not name (MindSpore renumbers some kernels,
// AddN) goes right after the call that was dumped before it.
std::vector<MsKernelCall> scan_iteration(const fs::path& dir, int64_t graph,
                                         const std::vector<std::string>* order,
                                         const std::vector<std::string>* csv, MsDumpScan& scan) {
  using Key = std::tuple<std::string, std::string, int64_t, int64_t>;
  std::map<Key, std::vector<MsTensorFile>> groups;
  for (const auto& e : list_dir(dir, scan)) {
    const std::string name = e.path().filename().string();
    auto parsed = parse_ms_kernel_file(name);
    if (!parsed) {
      scan.problems.push_back({e.path().string(),
                               "unknown file name pattern (not <Op>.<scope>."
                               "<task>.<stream>.<timestamp>.{input,output}."
                               "<i>.<format>.<dtype>.npy); skipped"});
      continue;
    }
    Key k{parsed->op_type, parsed->scope, parsed->task, parsed->stream};
    groups[k].push_back({std::move(*parsed), e.path().string()});
  }
  std::vector<MsKernelCall> calls;
  for (auto& [k, files] : groups) add_calls(std::move(files), graph, calls);
  if (calls.empty()) {
    scan.problems.push_back({dir.string(), "no kernel files"});
    return calls;
  }
  std::stable_sort(calls.begin(), calls.end(), [](const MsKernelCall& a, const MsKernelCall& b) {
    return a.first_timestamp < b.first_timestamp;
  });
  // The last call to start may have been cut off while its files were written.
  const MsKernelCall& newest = calls.back();
  if (newest.op_type != "Parameter" &&
      std::none_of(newest.files.begin(), newest.files.end(),
                   [](const MsTensorFile& f) { return f.name.output; }))
    scan.problems.push_back({dir.string(), "the last kernel dumped (" + newest.scope +
                                               ") has inputs but no output file: cut off?"});
  if (csv) check_complete(dir, calls, *csv, scan);
  if (!order) return calls;
  std::unordered_map<std::string, size_t> pos;
  for (size_t i = 0; i < order->size(); ++i) pos.emplace(underscored((*order)[i]), i);
  // (position of the anchor, after it?, timestamp): matched calls sit at their own position,
  // the others after the matched call dumped before them (-1: before every one).
  std::vector<std::tuple<int64_t, int, uint64_t, size_t>> keys;
  int64_t anchor = -1;
  for (size_t i = 0; i < calls.size(); ++i) {
    MsKernelCall& c = calls[i];
    auto p = pos.find(c.scope);
    if (p == pos.end()) {
      keys.emplace_back(anchor, 1, c.first_timestamp, i);
      continue;
    }
    c.full_name = (*order)[p->second];
    anchor = static_cast<int64_t>(p->second);
    keys.emplace_back(anchor, 0, c.first_timestamp, i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<MsKernelCall> ordered;
  ordered.reserve(calls.size());
  for (const auto& k : keys) ordered.push_back(std::move(calls[std::get<3>(k)]));
  return ordered;
}

// graphs/ms_output_trace_code_graph_<g>.ir (the .pb beside it is the same graph, not read).
void read_graph_irs(const fs::path& dir, MsRankDump& rd, MsDumpScan& scan) {
  constexpr std::string_view kPrefix = "ms_output_trace_code_graph_";
  for (const auto& e : list_dir(dir, scan)) {
    const std::string name = e.path().filename().string();
    int64_t g = 0;
    if (name.rfind(kPrefix, 0) != 0 || name.size() < kPrefix.size() + 4 ||
        name.substr(name.size() - 3) != ".ir" ||
        !parse_id(name.substr(kPrefix.size(), name.size() - kPrefix.size() - 3), g))
      continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream text;
    if (!(in && text << in.rdbuf())) {
      scan.problems.push_back({e.path().string(), "cannot be read"});
      continue;
    }
    rd.graphs[g] = parse_ms_graph_ir(text.str());
  }
}

uint64_t first_timestamp(const std::vector<MsKernelCall>& calls) {
  uint64_t t = UINT64_MAX;
  for (const MsKernelCall& c : calls) t = std::min(t, c.first_timestamp);
  return t;
}

void scan_rank(const fs::path& dir, int64_t rank, MsDumpScan& scan) {
  MsRankDump rd;
  rd.rank = rank;
  rd.dir = dir.string();
  std::map<int64_t, std::vector<std::string>> orders;
  bool has_order_dir = false;
  std::vector<fs::path> nets;
  std::map<int64_t, std::vector<std::vector<MsKernelCall>>> blocks;  // iteration -> graphs' calls
  std::vector<fs::directory_entry> entries = list_dir(dir, scan);
  for (const auto& e : entries) {  // the IR first: it orders the calls
    if (e.path().filename() == "graphs" && is_dir(e)) read_graph_irs(e.path(), rd, scan);
  }
  for (const auto& e : entries) {
    const std::string name = e.path().filename().string();
    if (name == "execution_order" && is_dir(e)) {
      has_order_dir = true;
      orders = read_execution_orders(e.path(), scan);
    } else if (name == "graphs" || name == ".dump_metadata") {
      continue;
    } else if (is_dir(e)) {
      nets.push_back(e.path());
    } else {
      scan.problems.push_back({e.path().string(), "unexpected file in a rank directory; skipped"});
    }
  }
  if (!has_order_dir)
    scan.problems.push_back({dir.string() + "/execution_order",
                             "missing: kernels ordered by their dump timestamps alone, and a step "
                             "cut short cannot be told from a complete one"});
  for (const fs::path& net : nets) {
    if (rd.net_name.empty()) rd.net_name = net.filename().string();
    for (const auto& g : list_dir(net, scan)) {
      int64_t graph = 0;
      if (!is_dir(g) || !parse_id(g.path().filename().string(), graph)) {
        scan.problems.push_back({g.path().string(), "not a <graph id> directory; skipped"});
        continue;
      }
      if (!rd.graphs.count(graph))
        scan.problems.push_back(
            {g.path().string(), "no graphs/ms_output_trace_code_graph_" + std::to_string(graph) +
                                    ".ir: tensors keep the shapes MindSpore dumped them with (on "
                                    "the CPU a Reshape's output carries its input's shape)"});
      auto order = orders.find(graph);
      if (has_order_dir && order == orders.end())
        scan.problems.push_back({g.path().string(), "no execution_order/ms_execution_order_graph_" +
                                                        std::to_string(graph) + ".csv"});
      for (const auto& i : list_dir(g.path(), scan)) {
        int64_t iteration = 0;
        if (!is_dir(i) || !parse_id(i.path().filename().string(), iteration)) {
          scan.problems.push_back({i.path().string(), "not an <iteration> directory; skipped"});
          continue;
        }
        const std::vector<std::string>* csv = order == orders.end() ? nullptr : &order->second;
        auto ir = rd.graphs.find(graph);
        const std::vector<std::string>* sort_by =
            ir != rd.graphs.end() && !ir->second.order.empty() ? &ir->second.order : csv;
        auto calls = scan_iteration(i.path(), graph, sort_by, csv, scan);
        if (!calls.empty()) blocks[iteration].push_back(std::move(calls));
      }
    }
  }
  // The graphs of one iteration (the gradient step, the optimizer) ran one after the other.
  for (auto& [n, graphs] : blocks) {
    std::sort(graphs.begin(), graphs.end(),
              [](const auto& a, const auto& b) { return first_timestamp(a) < first_timestamp(b); });
    MsIteration& it = rd.iterations[n];
    it.iteration = n;
    for (auto& g : graphs)
      for (MsKernelCall& c : g) it.calls.push_back(std::move(c));
  }
  if (rd.iterations.empty()) scan.problems.push_back({dir.string(), "no kernel data"});
  scan.ranks.push_back(std::move(rd));
}

bool rank_of(const std::string& name, int64_t& rank) {
  return name.rfind("rank_", 0) == 0 && parse_id(name.substr(5), rank);
}

}  // namespace

MsDumpScan scan_mindspore_dump(const std::string& root) {
  MsDumpScan scan;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw InputError(root, "not a directory");
  int64_t rank = 0;
  fs::path p(root);
  std::string base = p.filename().string();
  if (base.empty()) base = p.parent_path().filename().string();
  if (rank_of(base, rank)) {
    scan_rank(p, rank, scan);
    return scan;
  }
  for (const auto& e : list_dir(p, scan)) {
    if (is_dir(e) && rank_of(e.path().filename().string(), rank)) scan_rank(e.path(), rank, scan);
  }
  if (scan.ranks.empty())
    throw InputError(root,
                     "no rank_<N> directory: not a MindSpore kernel dump (the dump "
                     "config's \"path\", or one of its rank_<N> directories, is expected)");
  return scan;
}

}  // namespace numprobe::convert
