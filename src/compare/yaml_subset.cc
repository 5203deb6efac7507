#include "compare/yaml_subset.h"

#include <cctype>
#include <cstdint>
#include <unordered_map>

#include "base/utf8.h"
#include "numprobe/error.h"

namespace numprobe::compare_yaml {
namespace {

// One line with content: indentation in spaces, the text after it without comment or trailing
// blanks, and the column (0-based) where that text starts.
struct Line {
  int no = 0;
  int indent = 0;
  std::string_view body;
};

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_list_item(std::string_view body) {
  return body == "-" || (body.size() > 1 && body[0] == '-' && body[1] == ' ');
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& name) : name_(name) { split_lines(text); }

  Node document() {
    size_t i = 0;
    if (lines_.empty()) {
      Node n;
      n.kind = Node::kMap;
      n.line = 1;
      return n;
    }
    if (lines_[0].indent != 0) error(lines_[0], 0, "the document must start in column 1");
    // A whole document on one line: "{}" (what yaml dumpers write for an empty map) or "[...]".
    const bool flow = lines_[0].body[0] == '{' || lines_[0].body[0] == '[';
    Node n = flow ? inline_value(lines_[0], lines_[0].body, 0) : block(i, 0);
    if (flow) ++i;
    if (i < lines_.size()) error(lines_[i], 0, "unexpected content after the document");
    return n;
  }

 private:
  [[noreturn]] void error(int line, size_t col, const std::string& what) const {
    throw InputError(name_, "line " + std::to_string(line) + ", column " + std::to_string(col + 1) +
                                ": " + what);
  }
  [[noreturn]] void error(const Line& l, size_t at, const std::string& what) const {
    error(l.no, static_cast<size_t>(l.indent) + at, what);
  }

  // Whether s[k] is the first character of a scalar: only blanks before it, or a blank after
  // an indicator that ends a key or opens an item (':', '-'), or a flow list's '[' / ','.
  static bool starts_scalar(std::string_view s, size_t k) {
    size_t j = k;
    while (j > 0 && is_space(s[j - 1])) --j;
    if (j == 0) return true;
    const char p = s[j - 1];
    if (p == '[' || p == ',') return true;
    return (p == ':' || p == '-') && j < k;
  }

  // Cuts a comment: '#' at the start or after a blank, outside quotes.
  std::string_view strip_comment(std::string_view s, int no, int indent) const {
    char quote = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      const char c = s[k];
      if (quote) {
        if (c == '\\' && quote == '"') {
          ++k;
        } else if (c == quote) {
          if (quote == '\'' && k + 1 < s.size() && s[k + 1] == '\'') {
            ++k;
          } else {
            quote = 0;
          }
        }
        continue;
      }
      if ((c == '"' || c == '\'') && starts_scalar(s, k)) {
        quote = c;
      } else if (c == '#' && (k == 0 || is_space(s[k - 1]))) {
        return s.substr(0, k);
      }
    }
    if (quote) error(no, static_cast<size_t>(indent), "unterminated quoted scalar");
    return s;
  }

  void split_lines(std::string_view text) {
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    int no = 0;
    bool started = false;
    while (!text.empty()) {
      ++no;
      size_t nl = text.find('\n');
      std::string_view raw = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      for (char c : raw) {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          error(no, 0, "control character in the text");
        }
      }
      int indent = 0;
      while (static_cast<size_t>(indent) < raw.size() && raw[indent] == ' ') ++indent;
      std::string_view rest = raw.substr(static_cast<size_t>(indent));
      if (!rest.empty() && rest[0] == '\t') {
        error(no, static_cast<size_t>(indent), "tab in indentation (YAML indents with spaces)");
      }
      std::string_view body = rest;
      while (!body.empty() && is_space(body.back())) body.remove_suffix(1);
      body = strip_comment(body, no, indent);
      while (!body.empty() && is_space(body.back())) body.remove_suffix(1);
      if (body.empty()) continue;
      if (indent == 0 && (body == "---" || body.substr(0, 4) == "--- ")) {
        if (started) error(no, 0, "more than one document");
        if (body != "---") error(no, 4, "content after the document marker");
        started = true;
        continue;
      }
      if (indent == 0 && body == "...") break;
      if (body[0] == '%') error(no, 0, "YAML directives are not supported");
      started = true;
      lines_.push_back({no, indent, body});
    }
  }

  // The node whose first line is lines_[i], indented by exactly `indent`.
  Node block(size_t& i, int indent) {
    if (++depth_ > 64) error(lines_[i], 0, "nesting deeper than 64 levels");
    Node n = is_list_item(lines_[i].body) ? list(i, indent) : map(i, indent);
    --depth_;
    return n;
  }

  // The value after "key:" with nothing on its line: a deeper block, a list at the key's own
  // indentation (YAML's compact form), or null.
  Node value_below(size_t& i, int indent, const Line& key_line) {
    if (i < lines_.size() && lines_[i].indent > indent) return block(i, lines_[i].indent);
    if (i < lines_.size() && lines_[i].indent == indent && is_list_item(lines_[i].body)) {
      return list(i, indent);
    }
    Node n;
    n.line = key_line.no;
    n.null = true;
    return n;
  }

  Node map(size_t& i, int indent) {
    Node n;
    n.kind = Node::kMap;
    n.line = lines_[i].no;
    std::unordered_map<std::string, int> seen;  // key -> its line
    while (i < lines_.size() && lines_[i].indent == indent) {
      const Line l = lines_[i];
      if (is_list_item(l.body)) error(l, 0, "a list item where a 'key: value' was expected");
      size_t colon = 0;
      std::string key = read_key(l, colon);
      auto [first, fresh] = seen.emplace(key, l.no);
      if (!fresh) {
        error(l, 0,
              "duplicate key '" + key + "' (first on line " + std::to_string(first->second) + ")");
      }
      std::string_view rest = trim(l.body.substr(colon + 1));
      ++i;
      Node v;
      if (rest.empty()) {
        v = value_below(i, indent, l);
      } else {
        v = inline_value(l, rest, l.body.size() - rest.size());
        if (i < lines_.size() && lines_[i].indent > indent) {
          error(lines_[i], 0, "unexpected indentation (multi-line values are not supported)");
        }
      }
      if (v.line == 0) v.line = l.no;
      n.map.emplace_back(std::move(key), std::move(v));
    }
    if (i < lines_.size() && lines_[i].indent > indent) {
      error(lines_[i], 0, "unexpected indentation");
    }
    return n;
  }

  Node list(size_t& i, int indent) {
    Node n;
    n.kind = Node::kList;
    n.line = lines_[i].no;
    while (i < lines_.size() && lines_[i].indent == indent && is_list_item(lines_[i].body)) {
      Line& l = lines_[i];
      if (l.body == "-") {
        const Line item = l;
        ++i;
        if (i < lines_.size() && lines_[i].indent > indent) {
          n.list.push_back(block(i, lines_[i].indent));
        } else {
          Node v;
          v.line = item.no;
          v.null = true;
          n.list.push_back(std::move(v));
        }
        continue;
      }
      // "- rest": the item's content starts where `rest` does, as if it were on its own line.
      size_t skip = 1;
      while (skip < l.body.size() && l.body[skip] == ' ') ++skip;
      const Line item{l.no, l.indent + static_cast<int>(skip), l.body.substr(skip)};
      if (is_list_item(item.body) || looks_like_key(item.body)) {
        l = item;
        n.list.push_back(block(i, item.indent));
      } else {
        n.list.push_back(inline_value(item, item.body, 0));
        ++i;
        if (i < lines_.size() && lines_[i].indent > indent) {
          error(lines_[i], 0, "unexpected indentation (multi-line values are not supported)");
        }
      }
    }
    if (i < lines_.size() && lines_[i].indent > indent) {
      error(lines_[i], 0, "unexpected indentation");
    }
    return n;
  }

  // Whether `body` starts a map entry: a quoted scalar followed by ':', or plain text holding
  // ": " or ending in ':'.
  static bool looks_like_key(std::string_view body) {
    if (body.empty()) return false;
    if (body[0] == '"' || body[0] == '\'') {
      const char q = body[0];
      for (size_t k = 1; k < body.size(); ++k) {
        if (q == '"' && body[k] == '\\') {
          ++k;
        } else if (body[k] == q) {
          if (q == '\'' && k + 1 < body.size() && body[k + 1] == '\'') {
            ++k;
            continue;
          }
          std::string_view after = trim(body.substr(k + 1));
          return !after.empty() && after[0] == ':';
        }
      }
      return false;
    }
    if (body[0] == '[' || body[0] == '{') return false;
    return body.find(": ") != std::string_view::npos || body.back() == ':';
  }

  // The key of a "key: value" line; `colon` receives the position of the ':' in l.body.
  std::string read_key(const Line& l, size_t& colon) {
    std::string_view b = l.body;
    if (b[0] == '"' || b[0] == '\'') {
      size_t end = 0;
      std::string key = quoted(l, b, 0, end);
      size_t k = end;
      while (k < b.size() && b[k] == ' ') ++k;
      if (k >= b.size() || b[k] != ':' || (k + 1 < b.size() && b[k + 1] != ' ')) {
        error(l, k, "expected ':' after the quoted key");
      }
      colon = k;
      return key;
    }
    size_t c = b.find(": ");
    if (c == std::string_view::npos) {
      if (b.back() != ':') error(l, 0, "expected 'key: value'");
      c = b.size() - 1;
    }
    std::string_view key = trim(b.substr(0, c));
    if (key.empty()) error(l, 0, "empty key");
    check_plain(l, key, 0);
    if (key == "?" || key[0] == '?') error(l, 0, "complex keys ('? ') are not supported");
    colon = c;
    return std::string(key);
  }

  void check_plain(const Line& l, std::string_view s, size_t at) const {
    switch (s[0]) {
      case '&':
      case '*':
        error(l, at, "anchors and aliases are not supported");
      case '!':
        error(l, at, "tags are not supported");
      case '|':
      case '>':
        error(l, at, "block scalars ('|', '>') are not supported");
      case '@':
      case '`':
        error(l, at, std::string("a plain scalar cannot start with '") + s[0] + "'");
      case '{':
        error(l, at, "flow maps are not supported");
      case '}':
      case ']':
        error(l, at, std::string("unexpected '") + s[0] + "'");
      default:
        break;
    }
  }

  // A quoted scalar starting at b[at]; `end` receives the position after the closing quote.
  std::string quoted(const Line& l, std::string_view b, size_t at, size_t& end) const {
    const char q = b[at];
    std::string out;
    for (size_t k = at + 1; k < b.size(); ++k) {
      const char c = b[k];
      if (c == q) {
        if (q == '\'' && k + 1 < b.size() && b[k + 1] == '\'') {
          out += '\'';
          ++k;
          continue;
        }
        end = k + 1;
        return out;
      }
      if (q == '"' && c == '\\') {
        if (++k >= b.size()) break;
        switch (b[k]) {
          case '\\':
          case '"':
          case '/':
            out += b[k];
            break;
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case '0':
            out += '\0';
            break;
          case 'x':
          case 'u': {
            const size_t digits = b[k] == 'x' ? 2 : 4;
            if (k + digits >= b.size()) error(l, k, "truncated escape");
            uint32_t cp = 0;
            for (size_t d = 1; d <= digits; ++d) {
              const char h = b[k + d];
              cp <<= 4;
              if (h >= '0' && h <= '9') {
                cp |= static_cast<uint32_t>(h - '0');
              } else if (h >= 'a' && h <= 'f') {
                cp |= static_cast<uint32_t>(h - 'a' + 10);
              } else if (h >= 'A' && h <= 'F') {
                cp |= static_cast<uint32_t>(h - 'A' + 10);
              } else {
                error(l, k + d, "bad hex digit in escape");
              }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) error(l, k, "surrogate code point in escape");
            base::append_utf8(out, cp);
            k += digits;
            break;
          }
          default:
            error(l, k, std::string("unsupported escape '\\") + b[k] + "'");
        }
        continue;
      }
      out += c;
    }
    error(l, at, "unterminated quoted scalar (multi-line scalars are not supported)");
  }

  Node scalar(const Line& l, std::string_view s, size_t at) const {
    Node n;
    n.line = l.no;
    if (s[0] == '"' || s[0] == '\'') {
      size_t end = 0;
      n.text = quoted(l, s, 0, end);
      n.quoted = true;
      if (end != s.size()) error(l, at + end, "text after a quoted scalar");
      return n;
    }
    check_plain(l, s, at);
    if (s[0] == '[') error(l, at, "nested flow lists are not supported");
    if (s.find(": ") != std::string_view::npos || s.back() == ':') {
      error(l, at, "': ' inside a value; quote the value");
    }
    if (s == "~" || s == "null" || s == "Null" || s == "NULL") {
      n.null = true;
      return n;
    }
    n.text = std::string(s);
    return n;
  }

  Node inline_value(const Line& l, std::string_view v, size_t at) const {
    if (v == "{}") {
      Node n;
      n.kind = Node::kMap;
      n.line = l.no;
      return n;
    }
    if (v[0] != '[') return scalar(l, v, at);
    if (v.back() != ']') error(l, at, "a flow list must end on its line with ']'");
    Node n;
    n.kind = Node::kList;
    n.line = l.no;
    std::string_view inner = v.substr(1, v.size() - 2);
    if (trim(inner).empty()) return n;
    size_t start = 0;
    char q = 0;
    for (size_t k = 0; k <= inner.size(); ++k) {
      const char c = k < inner.size() ? inner[k] : ',';
      if (q) {
        if (q == '"' && c == '\\') {
          ++k;
        } else if (c == q) {
          q = 0;
        }
        continue;
      }
      if ((c == '"' || c == '\'') && trim(inner.substr(start, k - start)).empty()) {
        q = c;
      } else if (c == '[' || c == '{') {
        error(l, at + 1 + k, "nested flow collections are not supported");
      } else if (c == ',') {
        std::string_view item = inner.substr(start, k - start);
        size_t lead = 0;
        while (lead < item.size() && is_space(item[lead])) ++lead;
        item = trim(item);
        if (item.empty()) error(l, at + 1 + start, "empty item in a flow list");
        n.list.push_back(scalar(l, item, at + 1 + start + lead));
        start = k + 1;
      }
    }
    if (q) error(l, at, "unterminated quoted scalar in a flow list");
    return n;
  }

  const std::string& name_;
  std::vector<Line> lines_;
  int depth_ = 0;
};

bool plain_safe(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  const unsigned char f = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(f) || f == '_' || f == '.' || f == '/' || f == '<' || f == '(')) return false;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7F) return false;
    if (c == '#' || c == ':' || c == '"' || c == '\'' || c == ',' || c == '[' || c == ']' ||
        c == '{' || c == '}' || c == '\\') {
      return false;
    }
  }
  static const char* const kWords[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"};
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : kWords) {
    if (lower == w) return false;
  }
  return lower != ".inf" && lower != ".nan";
}

}  // namespace

Node parse(std::string_view text, const std::string& name) {
  return Parser(text, name).document();
}

void fail(const std::string& name, int line, const std::string& what) {
  throw InputError(name, "line " + std::to_string(line) + ": " + what);
}

std::string quote(std::string_view s) {
  if (plain_safe(s)) return std::string(s);
  bool control = false;
  for (char c : s) control |= static_cast<unsigned char>(c) < 0x20;
  std::string out;
  if (!control) {
    out += '\'';
    for (char c : s) {
      out += c;
      if (c == '\'') out += '\'';
    }
    out += '\'';
    return out;
  }
  out += '"';
  static const char kHex[] = "0123456789abcdef";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace numprobe::compare_yaml
