// The four mapping files of `numprobe compare` (docs/format.md, "Mapping files").
#include <algorithm>

#include "base/mapped_file.h"
#include "compare/yaml_subset.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

namespace y = compare_yaml;

const char* kind_name(const y::Node& n) {
  switch (n.kind) {
    case y::Node::kMap:
      return "a map";
    case y::Node::kList:
      return "a list";
    case y::Node::kScalar:
      break;
  }
  return n.null ? "empty" : "a scalar";
}

// A non-empty scalar: a name, an index.
const std::string& text_of(const y::Node& n, const std::string& name, const std::string& what) {
  if (n.kind != y::Node::kScalar || n.null || n.text.empty()) {
    y::fail(name, n.line, what + " must be a non-empty scalar, not " + kind_name(n));
  }
  return n.text;
}

const y::Node& top_map(const y::Node& doc, const std::string& name, const char* what) {
  if (doc.kind != y::Node::kMap) {
    y::fail(name, doc.line, std::string(what) + " must be a map, not " + kind_name(doc));
  }
  return doc;
}

// "name: name" lines of a flat map.
NamePairs flat_pairs(std::string_view text, const std::string& name, const char* what) {
  const y::Node doc = y::parse(text, name);
  NamePairs out;
  for (const auto& [k, v] : top_map(doc, name, what).map) {
    out.emplace_back(k, text_of(v, name, "the value of '" + k + "'"));
  }
  return out;
}

std::vector<std::string> index_list(const y::Node& n, const std::string& name,
                                    const std::string& key) {
  std::vector<std::string> out;
  if (n.kind == y::Node::kScalar && !n.null) {
    out.push_back(n.text);  // a single index written without brackets
    return out;
  }
  if (n.kind != y::Node::kList) {
    y::fail(name, n.line, "'" + key + "' must be a list of indices or names, not " + kind_name(n));
  }
  for (const y::Node& item : n.list) out.push_back(text_of(item, name, "an item of '" + key + "'"));
  return out;
}

std::string read_text(const std::string& path) {
  base::MappedFile f(path);
  return std::string(f.data() ? f.data() : "", f.size());
}

}  // namespace

NamePairs parse_data_mapping(std::string_view text, const std::string& name) {
  return flat_pairs(text, name, "a data mapping (target row: golden row)");
}

NamePairs parse_cell_mapping(std::string_view text, const std::string& name) {
  return flat_pairs(text, name, "a cell mapping (cell_path.Class: module_path.Class)");
}

std::vector<ApiArgMapping> parse_api_mapping(std::string_view text, const std::string& name) {
  const y::Node doc = y::parse(text, name);
  std::vector<ApiArgMapping> out;
  if (doc.kind == y::Node::kMap && doc.map.empty()) return out;
  if (doc.kind != y::Node::kList) {
    y::fail(name, doc.line,
            std::string("an api mapping must be a list of {ms_api, pt_api, ms_args, pt_args, "
                        "ms_outputs, pt_outputs}, not ") +
                kind_name(doc));
  }
  for (const y::Node& item : doc.list) {
    if (item.kind != y::Node::kMap) {
      y::fail(name, item.line,
              std::string("an api mapping item must be a map, not ") + kind_name(item));
    }
    ApiArgMapping m;
    m.line = item.line;
    for (const auto& [k, v] : item.map) {
      if (k == "ms_api") {
        m.ms_api = text_of(v, name, "ms_api");
      } else if (k == "pt_api") {
        m.pt_api = text_of(v, name, "pt_api");
      } else if (k == "ms_args") {
        m.ms_args = index_list(v, name, k);
      } else if (k == "pt_args") {
        m.pt_args = index_list(v, name, k);
      } else if (k == "ms_outputs") {
        m.ms_outputs = index_list(v, name, k);
      } else if (k == "pt_outputs") {
        m.pt_outputs = index_list(v, name, k);
      } else if (k == "ms_parameters") {
        m.ms_parameters = index_list(v, name, k);
      } else if (k == "pt_parameters") {
        m.pt_parameters = index_list(v, name, k);
      } else {
        y::fail(name, v.line,
                "unknown key '" + k +
                    "' (expected ms_api, pt_api, ms_args, pt_args, ms_outputs, pt_outputs, "
                    "ms_parameters, pt_parameters)");
      }
    }
    if (m.ms_api.empty() || m.pt_api.empty()) {
      y::fail(name, item.line, "an api mapping item needs both ms_api and pt_api");
    }
    const struct {
      const std::vector<std::string>& ms;
      const std::vector<std::string>& pt;
      const char* what;
    } lists[] = {{m.ms_args, m.pt_args, "args"},
                 {m.ms_outputs, m.pt_outputs, "outputs"},
                 {m.ms_parameters, m.pt_parameters, "parameters"}};
    for (const auto& l : lists) {
      if (l.ms.size() != l.pt.size()) {
        y::fail(name, item.line,
                std::string("ms_") + l.what + " and pt_" + l.what + " differ in length (" +
                    std::to_string(l.ms.size()) + " vs " + std::to_string(l.pt.size()) + ")");
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<LayerRule> parse_layer_mapping(std::string_view text, const std::string& name) {
  const y::Node doc = y::parse(text, name);
  std::vector<LayerRule> out;
  // msprobe's older files call the root "Cell"; a "Cell" section replaces any "TopLayer" one.
  bool has_cell = false;
  for (const auto& [type, rules] : top_map(doc, name, "a layer mapping").map)
    has_cell |= type == "Cell";
  for (const auto& [type, rules] : doc.map) {
    if (has_cell && type == "TopLayer") continue;
    if (rules.kind == y::Node::kScalar && rules.null) continue;  // "Layer:" with no rules
    if (rules.kind != y::Node::kMap) {
      y::fail(name, rules.line,
              "the rules of layer '" + type + "' must be a map (child: golden child), not " +
                  kind_name(rules));
    }
    for (const auto& [from, to] : rules.map) {
      const std::string target = text_of(to, name, "the value of '" + from + "'");
      if (from.empty() || from.front() == '.' || from.back() == '.' ||
          from.find("..") != std::string::npos) {
        y::fail(name, to.line, "'" + from + "' is not a dotted scope path");
      }
      out.push_back({type == "Cell" ? "TopLayer" : type, from, target});
    }
  }
  return out;
}

CompareMappings load_compare_mappings(const MappingOptions& o) {
  CompareMappings m;
  if (o.layer_mapping && (!o.data_mapping.empty() || o.cell_mapping || o.api_mapping)) {
    throw Error(
        "-lm/--layer-mapping decides every pairing by itself; do not combine it with "
        "-dm, -cm or -am");
  }
  if (!o.data_mapping.empty()) {
    m.data = parse_data_mapping(read_text(o.data_mapping), o.data_mapping);
    if (m.data.empty()) throw InputError(o.data_mapping, "the data mapping is empty");
  }
  if (o.cell_mapping) {
    m.cell = true;
    if (!o.cell_mapping->empty())
      m.cells = parse_cell_mapping(read_text(*o.cell_mapping), *o.cell_mapping);
  }
  if (o.api_mapping) {
    m.api = true;
    if (!o.api_mapping->empty())
      m.apis = parse_api_mapping(read_text(*o.api_mapping), *o.api_mapping);
  }
  if (o.layer_mapping) {
    m.layer = true;
    if (!o.layer_mapping->empty())
      m.layers = parse_layer_mapping(read_text(*o.layer_mapping), *o.layer_mapping);
  }
  return m;
}

std::string render_mapping_yaml(const NamePairs& m) {
  if (m.empty()) return "{}\n";
  std::string out;
  for (const auto& [t, g] : m) {
    out += y::quote(t);
    out += ": ";
    out += y::quote(g);
    out += '\n';
  }
  return out;
}

}  // namespace numprobe
