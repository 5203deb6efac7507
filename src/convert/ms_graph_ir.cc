#include "convert/ms_graph_ir.h"

#include <charconv>

namespace numprobe::convert {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "(10, 8)" / "(16)" / "()" -> dims; nullopt when it is not such a list.
IrShape parse_dims(std::string_view s) {
  s = trim(s);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  std::vector<int64_t> dims;
  while (!(s = trim(s)).empty()) {
    size_t comma = s.find(',');
    std::string_view num = trim(s.substr(0, comma));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || p != num.data() + num.size() || v < 0) return std::nullopt;
    dims.push_back(v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return dims;
}

// Splits "a, b<c, d>, (e, f)" at the commas outside brackets of any kind.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '<' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '>' || c == '}') {
      if (--depth < 0) return {};
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return {};
  std::string_view last = trim(s.substr(start));
  if (!last.empty()) out.push_back(last);
  return out;
}

// The shape(s) one abstract "<Tensor[Float32], (10, 8)>" stands for: one for a tensor (or a
// parameter's Ref[Tensor]), one unknown otherwise; a tuple output (TupleShape(...)) is one per
// element, as MindSpore dumps its elements as output.0, output.1, ... (a tuple input is one slot).
void abstract_shapes(std::string_view item, bool expand_tuple, std::vector<IrShape>& out) {
  if (item.size() < 2 || item.front() != '<' || item.back() != '>') {
    out.emplace_back();
    return;
  }
  item = item.substr(1, item.size() - 2);
  auto parts = split_top(item);
  if (parts.size() >= 2 &&
      (parts[0].rfind("Tensor[", 0) == 0 || parts[0].rfind("Ref[Tensor[", 0) == 0)) {
    out.push_back(parse_dims(parts[1]));
    return;
  }
  constexpr std::string_view kTuple = "TupleShape(";
  if (expand_tuple && parts.size() >= 2 && parts[0].rfind("Tuple[", 0) == 0 &&
      parts[1].rfind(kTuple, 0) == 0 && parts[1].back() == ')') {
    std::string_view inner = parts[1].substr(kTuple.size(), parts[1].size() - kTuple.size() - 1);
    for (std::string_view d : split_top(inner)) out.push_back(parse_dims(d));
    return;
  }
  out.emplace_back();
}

// ": (<in>, <in>) -> (<out>)"
bool parse_abstract_line(std::string_view line, IrKernelShapes& k) {
  line = trim(line);
  if (line.rfind(": (", 0) != 0) return false;
  line.remove_prefix(2);
  const size_t arrow = line.find(") -> (");
  if (arrow == std::string_view::npos || line.back() != ')') return false;
  std::string_view ins = line.substr(1, arrow - 1);
  std::string_view outs = line.substr(arrow + 6, line.size() - arrow - 7);
  for (std::string_view i : split_top(ins)) abstract_shapes(i, false, k.inputs);
  for (std::string_view o : split_top(outs)) abstract_shapes(o, true, k.outputs);
  return true;
}

}  // namespace

IrGraph parse_ms_graph_ir(std::string_view text) {
  IrGraph out;
  constexpr std::string_view kScope = "# Fullname with scope: (";
  IrKernelShapes pending;
  bool have_node = false, have_abstract = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.front() == '%' && line.find(" = ") != std::string_view::npos) {
      have_node = true;
      have_abstract = false;
      pending = IrKernelShapes();
    } else if (have_node && !have_abstract && line.rfind(": (", 0) == 0) {
      have_abstract = parse_abstract_line(line, pending);
    } else if (line.rfind(kScope, 0) == 0 && line.back() == ')') {
      if (have_node && have_abstract) {
        std::string name(line.substr(kScope.size(), line.size() - kScope.size() - 1));
        if (out.shapes.emplace(name, std::move(pending)).second)
          out.order.push_back(std::move(name));
      }
      have_node = false;
      have_abstract = false;
      pending = IrKernelShapes();
    }
  }
  return out;
}

}  // namespace numprobe::convert
