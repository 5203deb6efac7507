#include "graph/vis_json.h"

#include <string>

#include "base/json_cursor.h"
#include "base/json_text.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

// Columns are small; a deep nesting is damage, not data.
constexpr int kMaxDepth = 64;

base::JsonCursor cursor(std::string_view json) {
  return base::JsonCursor(json.data(), json.size(), "<vis.db column>", kMaxDepth);
}

bool blank(std::string_view json) {
  return json.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// Runs fn over a parsed column; a malformed one leaves what was read so far.
template <typename Fn>
void leniently(std::string_view json, Fn fn) {
  if (blank(json)) return;
  try {
    auto c = cursor(json);
    fn(c);
  } catch (const InputError&) {
  }
}

// Runs fn(cursor) at each item of a JSON list column (nothing when it is not a list).
template <typename Fn>
void each_item(std::string_view json, Fn fn) {
  leniently(json, [&](base::JsonCursor& c) {
    if (c.peek() != base::JsonType::kArray) return;
    c.begin_array();
    while (c.next_item()) fn(c);
  });
}

std::string value_text(base::JsonCursor& c) {
  if (c.peek() == base::JsonType::kString) return std::string(c.read_string());
  return std::string(c.raw_value());
}

}  // namespace

std::string string_list_json(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    base::append_py_string(out, items[i]);
  }
  return out + ']';
}

std::string int_list_json(const std::set<int64_t>& items) {
  std::string out = "[";
  for (int64_t x : items) {
    if (out.size() > 1) out += ", ";
    out += std::to_string(x);
  }
  return out + ']';
}

std::vector<std::string> parse_string_list(std::string_view json) {
  std::vector<std::string> out;
  each_item(json, [&](base::JsonCursor& c) {
    if (c.peek() == base::JsonType::kString) {
      out.emplace_back(c.read_string());
    } else {
      c.skip_value();
    }
  });
  return out;
}

int64_t count_list_items(std::string_view json) {
  int64_t n = 0;
  each_item(json, [&](base::JsonCursor& c) {
    c.skip_value();
    ++n;
  });
  return n;
}

std::vector<int64_t> parse_int_list(std::string_view json) {
  std::vector<int64_t> out;
  each_item(json, [&](base::JsonCursor& c) {
    const bool number = c.peek() == base::JsonType::kNumber;
    const base::JsonNumber v = number ? c.read_number() : base::JsonNumber{};
    if (!number) c.skip_value();
    if (v.is_int) out.push_back(v.int_value);
  });
  return out;
}

std::vector<DataRow> parse_data_rows(std::string_view json) {
  std::vector<DataRow> out;
  leniently(json, [&](base::JsonCursor& c) {
    if (c.peek() != base::JsonType::kObject) return;
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      DataRow row;
      row.name = std::string(key);
      if (c.peek() == base::JsonType::kObject) {
        c.begin_object();
        std::string_view field;
        while (c.next_key(field)) {
          std::string name(field);  // the view dies at the next call
          row.fields.emplace_back(std::move(name), value_text(c));
        }
      } else {
        row.fields.emplace_back("value", value_text(c));
      }
      out.push_back(std::move(row));
    }
  });
  return out;
}

std::vector<ColorBin> parse_color_bins(std::string_view json) {
  std::vector<ColorBin> out;
  leniently(json, [&](base::JsonCursor& c) {
    if (c.peek() != base::JsonType::kObject) return;
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      ColorBin bin;
      bin.color = std::string(key);
      if (c.peek() != base::JsonType::kObject) {
        c.skip_value();
        continue;
      }
      c.begin_object();
      std::string_view field;
      while (c.next_key(field)) {
        if (field == "description" && c.peek() == base::JsonType::kString) {
          bin.description = std::string(c.read_string());
        } else if (field == "value" && c.peek() == base::JsonType::kArray) {
          std::vector<double> v;
          c.begin_array();
          while (c.next_item()) {
            if (c.peek() == base::JsonType::kNumber) {
              v.push_back(c.read_number().value);
            } else {
              c.skip_value();
            }
          }
          if (v.size() == 2) {
            bin.has_range = true;
            bin.lo = v[0];
            bin.hi = v[1];
          }
        } else {
          c.skip_value();
        }
      }
      out.push_back(std::move(bin));
    }
  });
  return out;
}

}  // namespace numprobe::graph
