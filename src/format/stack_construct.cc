#include <charconv>

#include "base/json_cursor.h"
#include "base/json_writer.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"

namespace numprobe {
namespace {

using base::JsonCursor;
using base::JsonType;

std::vector<uint32_t> read_string_list(base::JsonCursor& c, StringPool& pool, const char* what) {
  std::vector<uint32_t> out;
  if (c.peek() != base::JsonType::kArray)
    c.fail_schema(std::string(what) + " must be a list of strings");
  c.begin_array();
  while (c.next_item()) {
    if (c.peek() != base::JsonType::kString)
      c.fail_schema(std::string(what) + " must be a list of strings");
    out.push_back(pool.intern(c.read_string()));
  }
  return out;
}

bool is_group_index(std::string_view k) {
  if (k.empty()) return false;
  for (char ch : k) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

}  // namespace

const std::vector<uint32_t>* StackTable::frames_of(std::string_view name) const {
  uint32_t id = strings.find(name);
  if (id == kNoString) return nullptr;
  auto it = group_of.find(id);
  return it == group_of.end() ? nullptr : &group_frames[it->second];
}

StackTable parse_stack_json(std::string_view text, const std::string& name) {
  StackTable t;
  base::JsonCursor c(text.data(), text.size(), name);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("stack.json must be a JSON object");
  c.begin_object();
  std::string_view key;
  bool first = true;
  while (c.next_key(key)) {
    // The de-duplicated format has numeric keys and [[names], [frames]] values.
    if (first) {
      t.deduplicated = is_group_index(key) && c.peek() == base::JsonType::kArray;
      first = false;
    }
    auto g = static_cast<uint32_t>(t.group_frames.size());
    if (t.deduplicated) {
      if (c.peek() != base::JsonType::kArray)
        c.fail_schema("stack group must be [[names], [frames]]");
      c.begin_array();
      if (!c.next_item()) c.fail_schema("stack group must be [[names], [frames]]");
      t.group_names.push_back(read_string_list(c, t.strings, "stack group names"));
      if (!c.next_item()) c.fail_schema("stack group must be [[names], [frames]]");
      t.group_frames.push_back(read_string_list(c, t.strings, "stack frames"));
      if (c.next_item()) c.fail_schema("stack group has more than two lists");
    } else {
      uint32_t id = t.strings.intern(key);
      t.group_names.push_back({id});
      t.group_frames.push_back(read_string_list(c, t.strings, "stack frames"));
    }
    for (uint32_t n : t.group_names.back()) t.group_of[n] = g;
  }
  c.expect_end();
  return t;
}

StackTable read_stack_json(const std::string& path) {
  base::MappedFile f(path);
  return parse_stack_json(std::string_view(f.data(), f.size()), path);
}

std::optional<std::string_view> ConstructTable::parent_of(std::string_view node) const {
  uint32_t id = strings.find(node);
  if (id == kNoString) return std::nullopt;
  auto it = index.find(id);
  if (it == index.end()) return std::nullopt;
  return strings.get(edges[it->second].parent);
}

ConstructTable parse_construct_json(std::string_view text, const std::string& name) {
  ConstructTable t;
  base::JsonCursor c(text.data(), text.size(), name);
  if (c.peek() != base::JsonType::kObject) c.fail_schema("construct.json must be a JSON object");
  c.begin_object();
  std::string_view key;
  while (c.next_key(key)) {
    ConstructEdge e;
    e.node = t.strings.intern(key);
    switch (c.peek()) {
      case base::JsonType::kNull:
        c.read_null();
        break;
      case base::JsonType::kString:
        e.parent = t.strings.intern(c.read_string());
        break;
      case base::JsonType::kArray:
        e.parent_is_list = true;
        c.begin_array();
        if (!c.next_item()) break;  // [] : no parent recorded
        e.list_items = 1;
        if (c.peek() == base::JsonType::kNull) {
          c.read_null();
        } else if (c.peek() == base::JsonType::kString) {
          e.parent = t.strings.intern(c.read_string());
        } else {
          c.fail_schema("construct parent list must start with a module name or null");
        }
        if (c.next_item()) {
          if (c.peek() != base::JsonType::kNumber)
            c.fail_schema("construct micro step must be a number");
          auto n = c.read_number();
          if (!n.is_int) c.fail_schema("construct micro step must be an integer");
          e.micro_step = n.int_value;
          e.list_items = 2;
          if (c.next_item()) c.fail_schema("construct parent list has more than two items");
        }
        break;
      default:
        c.fail_schema("construct.json values must be a module name, null or [name, micro_step]");
    }
    t.index[e.node] = static_cast<uint32_t>(t.edges.size());
    t.edges.push_back(e);
  }
  c.expect_end();
  return t;
}

ConstructTable read_construct_json(const std::string& path) {
  base::MappedFile f(path);
  return parse_construct_json(std::string_view(f.data(), f.size()), path);
}

std::string render_stack_json(const StackTable& t) {
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1), 0);
  w.begin_object();
  for (size_t g = 0; g < t.group_frames.size(); ++g) {
    if (t.deduplicated) {
      w.key(std::to_string(g));
      w.begin_array();
      w.begin_array();
      for (uint32_t n : t.group_names[g]) w.string_value(t.strings.get(n));
      w.end_array();
    } else {
      w.key(t.strings.get(t.group_names[g].at(0)));
    }
    w.begin_array();
    for (uint32_t f : t.group_frames[g]) w.string_value(t.strings.get(f));
    w.end_array();
    if (t.deduplicated) w.end_array();
  }
  w.end_object();
  return out;
}

namespace {
void write_parent(base::JsonWriter& w, const ConstructTable& t, const ConstructEdge& e) {
  auto parent = [&] {
    if (e.parent == kNoString) {
      w.null_value();
    } else {
      w.string_value(t.strings.get(e.parent));
    }
  };
  if (!e.parent_is_list) {
    parent();
    return;
  }
  w.begin_array();
  if (e.list_items >= 1) parent();
  if (e.list_items >= 2) w.int_value(e.micro_step);
  w.end_array();
}
}  // namespace

std::string render_construct_parent(const ConstructTable& t, const ConstructEdge& e) {
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1), 1);
  write_parent(w, t, e);
  return out;
}

std::string render_construct_json(const ConstructTable& t) {
  std::string out;
  base::JsonWriter w(out, base::JsonDialect::python(1), 0);
  w.begin_object();
  for (const ConstructEdge& e : t.edges) {
    w.key(t.strings.get(e.node));
    write_parent(w, t, e);
  }
  w.end_object();
  return out;
}

}  // namespace numprobe
