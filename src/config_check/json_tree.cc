// The JSON tree of pack members (json_tree.h), built over base::JsonCursor.
#include "config_check/json_tree.h"

#include "base/json_cursor.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

Json read(base::JsonCursor& c) {
  Json j;
  switch (c.peek()) {
    case base::JsonType::kNull:
      c.read_null();
      break;
    case base::JsonType::kBool:
      j.kind = Json::kBool;
      j.boolean = c.read_bool();
      break;
    case base::JsonType::kNumber: {
      j.kind = Json::kNumber;
      j.text = std::string(c.raw_value());
      base::JsonCursor n(j.text.data(), j.text.size(), c.name());
      j.number = n.read_number().value;
      break;
    }
    case base::JsonType::kString:
      j.kind = Json::kString;
      j.text = std::string(c.read_string());
      break;
    case base::JsonType::kArray:
      j.kind = Json::kArray;
      c.begin_array();
      while (c.next_item()) j.items.push_back(read(c));
      break;
    case base::JsonType::kObject: {
      j.kind = Json::kObject;
      c.begin_object();
      std::string_view key;
      while (c.next_key(key)) {
        std::string k(key);
        j.fields.emplace_back(std::move(k), read(c));
      }
      break;
    }
  }
  return j;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\\' || ch == '\'') out += '\\';
    out += ch;
  }
  return out + "'";
}

}  // namespace

const Json* Json::find(const std::string& key) const {
  for (auto it = fields.rbegin(); it != fields.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

std::string Json::python_str() const {
  return kind == kString ? text : python_repr();
}

std::string Json::python_repr() const {
  switch (kind) {
    case kNull:
      return "None";
    case kBool:
      return boolean ? "True" : "False";
    case kNumber:
      return text;
    case kString:
      return quote(text);
    case kArray: {
      std::string out = "[";
      for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i].python_repr();
      return out + "]";
    }
    case kObject: {
      std::string out = "{";
      for (size_t i = 0; i < fields.size(); ++i)
        out += (i ? ", " : "") + quote(fields[i].first) + ": " + fields[i].second.python_repr();
      return out + "}";
    }
  }
  return "";
}

Json parse_json(const std::string& text, const std::string& file, const std::string& member) {
  try {
    base::JsonCursor c(text.data(), text.size(), file + ": member " + member, 128);
    Json j = read(c);
    c.expect_end();
    return j;
  } catch (const InputError& e) {
    throw InputError(file,
                     std::string("member ") + member + " is not valid JSON (" + e.what() + ")");
  }
}

}  // namespace numprobe::configcheck
