#include "serve/viewer_api.h"

#include <cerrno>
#include <cstdlib>

#include "numprobe/error.h"
#include "serve/json_out.h"

namespace numprobe::serve {
namespace {

// Longest node name or query accepted; msprobe's names are a few hundred bytes at most.
constexpr size_t kMaxText = 4096;
constexpr int64_t kDefaultLimit = 200;
constexpr int64_t kMaxLimit = 10000;

// A 4xx raised while reading the parameters.
struct BadRequest {
  int status;
  std::string message;
};

ApiResponse error(int status, const std::string& message) {
  JsonOut j;
  j.begin_object().key("error").str(message).end_object();
  return {status, j.text()};
}

const std::string* find(const Params& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() ? nullptr : &it->second;
}

int64_t integer(const Params& p, const char* name, std::optional<int64_t> fallback) {
  const std::string* v = find(p, name);
  if (!v) {
    if (fallback) return *fallback;
    throw BadRequest{400, std::string("missing parameter ") + name};
  }
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || end != v->c_str() + v->size() || errno == ERANGE) {
    throw BadRequest{400, std::string("parameter ") + name + " is not an integer"};
  }
  return n;
}

std::string text(const Params& p, const char* name, bool required) {
  const std::string* v = find(p, name);
  if (!v || v->empty()) {
    if (required) throw BadRequest{400, std::string("missing parameter ") + name};
    return {};
  }
  if (v->size() > kMaxText) throw BadRequest{400, std::string("parameter ") + name + " too long"};
  return *v;
}

const char* side_name(graph::Side s) {
  return s == graph::Side::kTarget ? "target" : "golden";
}

const char* mode_of_task(const std::string& task) {
  if (task == "md5") return "md5";
  if (task == "all" || task == "tensor") return "tensor";
  return "statistics";
}

void write_hits(JsonOut& j, const graph::SearchResult& r) {
  j.begin_object().key("results").begin_array();
  for (const auto& h : r.results) {
    j.begin_object().key("name").str(h.name).key("path").strings(h.path).key("color");
    h.color.empty() ? j.null() : j.str(h.color);
    j.end_object();
  }
  j.end_array().key("truncated").boolean(r.truncated).end_object();
}

void write_rows(JsonOut& j, const std::vector<graph::DataRow>& rows) {
  j.begin_object();
  for (const auto& r : rows) {
    j.key(r.name).begin_object();
    for (const auto& [k, v] : r.fields) j.key(k).str(v);
    j.end_object();
  }
  j.end_object();
}

std::string meta_value(const graph::VisDbReader& r, const char* key) {
  for (const auto& [k, v] : r.meta()) {
    if (k == key) return v;
  }
  return {};
}

}  // namespace

ViewerApi::ViewerApi(graph::VisDbReader& reader)
    : reader_(reader), findings_(meta_value(reader, "findings")) {}

// The graph a request names: step, rank and side checked against the file.
static graph::GraphKey graph_of(const graph::VisDbReader& r, const Params& p) {
  graph::GraphKey g;
  g.step = integer(p, "step", r.config().steps.empty() ? 0 : r.config().steps.front());
  g.rank = integer(p, "rank", r.config().ranks.empty() ? 0 : r.config().ranks.front());
  if (!r.has_graph(g.step, g.rank)) {
    throw BadRequest{404, "no graph for step " + std::to_string(g.step) + " rank " +
                              std::to_string(g.rank) + " in this file"};
  }
  const std::string side = text(p, "side", false);
  if (side.empty() || side == "target") {
    g.side = graph::Side::kTarget;
  } else if (side == "golden") {
    if (!r.has_golden()) throw BadRequest{404, "this file has no golden graph"};
    g.side = graph::Side::kGolden;
  } else {
    throw BadRequest{400, "side must be target or golden"};
  }
  if (find(p, "micro_step")) g.micro_step = integer(p, "micro_step", std::nullopt);
  return g;
}

static size_t limit_of(const Params& p) {
  const int64_t n = integer(p, "limit", kDefaultLimit);
  if (n < 1 || n > kMaxLimit) throw BadRequest{400, "limit must be 1..10000"};
  return static_cast<size_t>(n);
}

ApiResponse ViewerApi::get(const std::string& path, const Params& params) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    if (path == "/api/meta") return meta();
    if (path == "/api/children") return children(params);
    if (path == "/api/node") return node(params);
    if (path == "/api/search") return search(params);
    if (path == "/api/filter") return filter(params);
    return error(404, "no such endpoint");
  } catch (const BadRequest& b) {
    return error(b.status, b.message);
  } catch (const InputError& e) {
    return error(500, e.what());
  }
}

ApiResponse ViewerApi::meta() {
  const graph::VisConfig& c = reader_.config();
  JsonOut j;
  j.begin_object();
  const std::string path = reader_.path();
  j.key("file").str(
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1));
  j.key("graph_type").str(c.graph_type).key("task").str(c.task);
  const std::string mode = meta_value(reader_, "mode");
  j.key("mode").copy_text(mode, std::string("\"") + mode_of_task(c.task) + "\"");
  j.key("steps").begin_array();
  for (int64_t s : c.steps) j.num(s);
  j.end_array().key("ranks").begin_array();
  for (int64_t r : c.ranks) j.num(r);
  j.end_array().key("micro_steps").num(c.micro_steps);
  j.key("colors").begin_array();
  bool grey = false;
  for (const auto& b : c.colors) {
    grey = grey || b.color == graph::kUnmatchedColor;
    j.begin_object().key("color").str(b.color).key("value").begin_array();
    if (b.has_range) j.num(b.lo).num(b.hi);
    j.end_array().key("description").str(b.description).end_object();
  }
  if (!grey) {
    j.begin_object().key("color").str(graph::kUnmatchedColor).key("value").begin_array();
    j.end_array().key("description").str("unmatched").end_object();
  }
  j.end_array();
  j.key("tool_tip").copy_text(c.tool_tip, "{}");
  j.key("findings").copy_text(meta_value(reader_, "findings"), "{}");
  j.key("notes").copy_text(meta_value(reader_, "notes"), "[]");
  j.key("sides").begin_array().str("target");
  if (reader_.has_golden()) j.str("golden");
  j.end_array().end_object();
  return {200, j.text()};
}

ApiResponse ViewerApi::children(const Params& p) {
  const graph::GraphKey g = graph_of(reader_, p);
  std::optional<std::string> parent;
  if (find(p, "node")) {
    parent = text(p, "node", true);
    if (!reader_.node(g, *parent)) throw BadRequest{404, "no node " + *parent + " in this graph"};
  }
  const auto nodes = reader_.children(g, parent);
  JsonOut j;
  j.begin_object().key("nodes").begin_array();
  for (const auto& n : nodes) {
    j.begin_object().key("name").str(n.name).key("type").num(int64_t{n.type});
    j.key("children").num(n.children).key("precision").num(n.precision).key("color");
    n.color.empty() ? j.null() : j.str(n.color);
    j.key("matched").boolean(n.matched).key("suspect");
    const int s = findings_.index_of(g.step, g.rank, side_name(g.side), n.name);
    s < 0 ? j.null() : j.num(int64_t{s});
    j.end_object();
  }
  j.end_array().key("total").num(static_cast<int64_t>(nodes.size())).end_object();
  return {200, j.text()};
}

ApiResponse ViewerApi::node(const Params& p) {
  const graph::GraphKey g = graph_of(reader_, p);
  const std::string name = text(p, "node", true);
  const auto d = reader_.node(g, name);
  if (!d) throw BadRequest{404, "no node " + name + " in this graph"};
  JsonOut j;
  j.begin_object().key("name").str(d->name).key("type").num(int64_t{d->type});
  j.key("parent_chain").strings(d->parent_chain).key("children").num(d->children);
  j.key("precision").num(d->precision).key("color");
  d->color.empty() ? j.null() : j.str(d->color);
  j.key("matched").boolean(d->matched).key("matched_link").strings(d->matched_link);
  j.key("micro_step").num(d->micro_step);
  j.key("input");
  write_rows(j, d->input);
  j.key("output");
  write_rows(j, d->output);
  j.key("stack").strings(d->stack).key("suspect");
  const int s = findings_.index_of(g.step, g.rank, side_name(g.side), d->name);
  if (s < 0) {
    j.null();
  } else {
    j.copy_text(findings_.suspects(g.step, g.rank)[static_cast<size_t>(s)].json, "null");
  }
  j.end_object();
  return {200, j.text()};
}

ApiResponse ViewerApi::search(const Params& p) {
  const graph::GraphKey g = graph_of(reader_, p);
  const std::string q = text(p, "q", true);
  JsonOut j;
  write_hits(j, reader_.search(g, q, limit_of(p)));
  return {200, j.text()};
}

ApiResponse ViewerApi::filter(const Params& p) {
  const graph::GraphKey g = graph_of(reader_, p);
  const std::string kind = text(p, "kind", true);
  const size_t limit = limit_of(p);
  graph::SearchResult r;
  if (kind == "unmatched") {
    r = reader_.filter_unmatched(g, limit);
  } else if (kind == "suspects") {
    for (const Suspect& s : findings_.suspects(g.step, g.rank)) {
      if (s.side != side_name(g.side)) continue;
      if (r.results.size() == limit) {
        r.truncated = true;
        break;
      }
      const auto d = reader_.node(g, s.node);
      if (!d) continue;  // a finding about a node the file lacks
      graph::SearchHit h;
      h.name = s.node;
      h.color = d->color;
      h.path = d->parent_chain;
      h.path.push_back(s.node);
      r.results.push_back(std::move(h));
    }
  } else if (kind.size() == 13 && kind.compare(0, 7, "color:#") == 0) {
    r = reader_.filter_color(g, kind.substr(6), limit);
  } else {
    throw BadRequest{400, "kind must be color:#RRGGBB, unmatched or suspects"};
  }
  JsonOut j;
  write_hits(j, r);
  return {200, j.text()};
}

}  // namespace numprobe::serve
