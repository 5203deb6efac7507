// The JSON tree (json_tree.h), built over base::JsonCursor.
#include "base/json_tree.h"

#include <cmath>
#include <unordered_map>

#include "base/json_cursor.h"
#include "base/utf8.h"
#include "numprobe/error.h"

namespace numprobe::base {
namespace {

// Objects up to this many keys look duplicates up by a scan; larger ones by a hash index (the
// packs' members hold objects of thousands of keys).
constexpr size_t kScanKeys = 16;

class TreeReader {
 public:
  TreeReader(std::string_view text, const std::string& source, const JsonReadOptions& options)
      : text_(text), opt_(options), c_(text.data(), text.size(), source, options.max_depth) {
    c_.set_syntax_label(options.syntax_label);
  }

  Json document() {
    Json j = value();
    c_.expect_end();
    return j;
  }

 private:
  Json value() {
    Json j;
    const JsonType type = c_.peek();  // skips whitespace: offset() is the value's
    j.offset = c_.offset();
    switch (type) {
      case JsonType::kNull:
        c_.read_null();
        break;
      case JsonType::kBool:
        j.kind = Json::kBool;
        j.boolean = c_.read_bool();
        break;
      case JsonType::kNumber:
        number(j);
        break;
      case JsonType::kString:
        j.kind = Json::kString;
        j.text = string(c_.read_string(), j.offset);
        break;
      case JsonType::kArray:
        j.kind = Json::kArray;
        c_.begin_array();
        while (c_.next_item()) {
          if (opt_.unique_keys) path_.push_back("[" + std::to_string(j.items.size()) + "]");
          j.items.push_back(value());
          if (opt_.unique_keys) path_.pop_back();
        }
        break;
      case JsonType::kObject:
        j.kind = Json::kObject;
        object(j);
        break;
    }
    return j;
  }

  void number(Json& j) {
    j.kind = Json::kNumber;
    const JsonNumber n = c_.read_number();
    j.text = std::string(text_.substr(j.offset, c_.offset() - j.offset));
    const char first = j.text[j.text.size() > 1 && j.text[0] == '-' ? 1 : 0];
    const bool word = first == 'N' || first == 'I';  // NaN, Infinity, -Infinity
    if (opt_.strict && word) c_.fail_at(j.offset, j.text + " is not a JSON number");
    if (opt_.strict && !std::isfinite(n.value))
      c_.fail_at(j.offset, "number overflow: " + j.text + " does not fit a double");
    j.number = n.value;
    j.integral = !word && j.text.find_first_of(".eE") == std::string::npos;
    j.fits_int64 = n.is_int;
    j.integer = n.int_value;
  }

  std::string string(std::string_view s, size_t at) {
    if (opt_.strict && utf8_invalid_at(s.data(), s.size()) != s.size())
      c_.fail_at(at, "a string is not valid UTF-8");
    return std::string(s);
  }

  void object(Json& j) {
    c_.begin_object();
    std::unordered_map<std::string, size_t> index;  // key -> position, once past kScanKeys
    std::string_view key;
    while (c_.next_key(key)) {
      const size_t key_at = c_.offset();  // just past the ':'
      std::string k = string(key, key_at);
      size_t at = j.fields.size();
      if (j.fields.size() <= kScanKeys) {
        for (size_t i = 0; i < j.fields.size(); ++i)
          if (j.fields[i].first == k) at = i;
      } else {
        if (index.empty())
          for (size_t i = 0; i < j.fields.size(); ++i) index.emplace(j.fields[i].first, i);
        if (auto it = index.find(k); it != index.end()) at = it->second;
      }
      if (opt_.unique_keys) {
        path_.push_back(path_.empty() ? k : "." + k);
        if (at != j.fields.size()) {
          std::string full;
          for (const auto& p : path_) full += p;
          c_.fail_schema_at(key_at, "field \"" + full + "\" appears twice");
        }
      }
      Json v = value();
      if (opt_.unique_keys) path_.pop_back();
      if (at != j.fields.size()) {
        j.fields[at].second = std::move(v);  // Python: the first position, the last value
        continue;
      }
      if (!index.empty()) index.emplace(k, at);
      j.fields.emplace_back(std::move(k), std::move(v));
    }
  }

  std::string_view text_;
  const JsonReadOptions& opt_;
  JsonCursor c_;
  std::vector<std::string> path_;  // keys and [indices] down to the current value (unique_keys)
};

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

const char* Json::type_name() const {
  switch (kind) {
    case kNull:
      return "null";
    case kBool:
      return "boolean";
    case kNumber:
      return "number";
    case kString:
      return "string";
    case kArray:
      return "array";
    case kObject:
      return "object";
  }
  return "null";
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

Json parse_json(std::string_view text, const std::string& source, const JsonReadOptions& options) {
  return TreeReader(text, source, options).document();
}

}  // namespace numprobe::base
