#include "format/dump_render.h"

namespace numprobe::format {
namespace {

void render_stat(const StatValue& s, PyJsonWriter& w) {
  switch (s.kind) {
    case StatKind::kAbsent:
    case StatKind::kNull:
      w.null_value();
      break;
    case StatKind::kFloat:
      w.float_value(s.v);
      break;
    case StatKind::kInt:
      w.int_value(s.i);
      break;
    case StatKind::kBool:
      w.bool_value(s.v != 0);
      break;
  }
}

void render_tensor(const DumpFile& d, const TensorLeaf& t, PyJsonWriter& w) {
  std::vector<uint32_t> extras;
  if (t.extras != kNoNode) {
    for (uint32_t c : children(d.extra_nodes, t.extras)) extras.push_back(c);
  }
  w.begin_object();
  for (uint8_t i = 0; i < t.order_len; ++i) {
    uint8_t f = t.order[i];
    switch (f) {
      case kFieldType:
        w.key("type");
        w.string_value(d.str(t.type));
        break;
      case kFieldDtype:
        w.key("dtype");
        w.string_value(d.str(t.dtype_name));
        break;
      case kFieldShape:
        w.key("shape");
        w.begin_array();
        for (uint32_t k = 0; k < t.ndim; ++k) w.int_value(d.shapes[t.shape_begin + k]);
        w.end_array();
        break;
      case kFieldMax:
        w.key("Max");
        render_stat(t.max, w);
        break;
      case kFieldMin:
        w.key("Min");
        render_stat(t.min, w);
        break;
      case kFieldMean:
        w.key("Mean");
        render_stat(t.mean, w);
        break;
      case kFieldNorm:
        w.key("Norm");
        render_stat(t.norm, w);
        break;
      case kFieldRequiresGrad:
        w.key("requires_grad");
        w.bool_value(t.requires_grad == 1);
        break;
      case kFieldMd5:
        w.key("md5");
        w.string_value(d.str(t.md5));
        break;
      case kFieldDataName:
        w.key("data_name");
        w.string_value(d.str(t.data_name));
        break;
      default: {
        uint32_t c = extras.at(f - kFieldExtra);
        w.key(d.str(d.extra_nodes[c].key));
        render_node(d, d.extra_nodes, c, w);
      }
    }
  }
  w.end_object();
}

// Writes the scalar payload of n as if it had kind k.
void render_scalar(const DumpFile& d, const Node& n, NodeKind k, PyJsonWriter& w) {
  switch (k) {
    case NodeKind::kBool:
      w.bool_value(n.b);
      break;
    case NodeKind::kInt:
      w.int_value(n.i);
      break;
    case NodeKind::kFloat:
      w.float_value(n.f);
      break;
    case NodeKind::kString:
      w.string_value(d.str(n.str));
      break;
    default:
      w.null_value();
      break;
  }
}

}  // namespace

void render_node(const DumpFile& d, const std::vector<Node>& nodes, uint32_t idx, PyJsonWriter& w) {
  const Node& n = nodes[idx];
  switch (n.kind) {
    case NodeKind::kNull:
    case NodeKind::kBool:
    case NodeKind::kInt:
    case NodeKind::kFloat:
    case NodeKind::kString:
      render_scalar(d, n, n.kind, w);
      break;
    case NodeKind::kList:
      w.begin_array();
      for (uint32_t c : children(nodes, idx)) render_node(d, nodes, c, w);
      w.end_array();
      break;
    case NodeKind::kDict:
      w.begin_object();
      for (uint32_t c : children(nodes, idx)) {
        w.key(d.str(nodes[c].key));
        render_node(d, nodes, c, w);
      }
      w.end_object();
      break;
    case NodeKind::kTensor:
      render_tensor(d, d.tensors[n.tensor], w);
      break;
    case NodeKind::kTypedValue: {
      w.begin_object();
      w.key("type");
      w.string_value(d.str(n.type));
      w.key("value");
      render_scalar(d, n, n.value_kind, w);
      w.end_object();
      break;
    }
  }
}

std::string render_entry_body(const DumpFile& d, size_t i) {
  std::string out;
  PyJsonWriter w(out, 1, 2);
  render_node(d, d.nodes, d.entries[i].node, w);
  return out;
}

std::vector<std::pair<std::string, std::string>> render_header_members(const DumpFile& d) {
  std::vector<std::pair<std::string, std::string>> members;
  if (d.header == kNoNode) return members;
  for (uint32_t c : children(d.nodes, d.header)) {
    std::string text;
    PyJsonWriter w(text, 1, 1);
    render_node(d, d.nodes, c, w);
    members.emplace_back(std::string(d.str(d.nodes[c].key)), std::move(text));
  }
  return members;
}

std::string render_dump_json(const DumpFile& d) {
  std::string out;
  out.reserve(d.entries.size() * 2048);
  PyJsonWriter w(out, 1, 0);
  w.begin_object();
  auto header = render_header_members(d);
  auto write_data = [&] {
    w.key("data");
    w.begin_object();
    for (size_t i = 0; i < d.entries.size(); ++i) {
      w.key(d.entry_name(i));
      render_node(d, d.nodes, d.entries[i].node, w);
    }
    w.end_object();
  };
  for (size_t i = 0; i < header.size(); ++i) {
    if (i == d.data_position) write_data();
    w.key(header[i].first);
    w.raw_value(header[i].second);
  }
  if (d.data_position >= header.size()) write_data();
  w.end_object();
  return out;
}

}  // namespace numprobe::format
