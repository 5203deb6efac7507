#include "api_signature.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "format/entry_name.h"

namespace numprobe {
namespace {

struct Signature {
  std::string_view api;
  std::string_view params;  // positional parameter names, space-separated, in order
};

constexpr Signature kSignatures[] = {
#include "api_signatures.inc"
};

const Signature* find_signature(std::string_view api) {
  auto it = std::lower_bound(std::begin(kSignatures), std::end(kSignatures), api,
                             [](const Signature& s, std::string_view a) { return s.api < a; });
  return it != std::end(kSignatures) && it->api == api ? it : nullptr;
}

// Parameter `index` of a space-separated list, or "".
std::string_view param_at(std::string_view params, size_t index) {
  size_t pos = 0;
  for (size_t i = 0; pos <= params.size(); ++i) {
    const size_t end = std::min(params.find(' ', pos), params.size());
    if (i == index) return params.substr(pos, end - pos);
    pos = end + 1;
  }
  return {};
}

// Position of `name` in a space-separated list, or -1.
long param_position(std::string_view params, std::string_view name) {
  size_t pos = 0;
  for (long i = 0; pos <= params.size(); ++i) {
    const size_t end = std::min(params.find(' ', pos), params.size());
    if (params.substr(pos, end - pos) == name) return i;
    pos = end + 1;
  }
  return -1;
}

}  // namespace

std::string other_input_spelling(std::string_view api, std::string_view suffix) {
  constexpr std::string_view kInput = "input.";
  if (suffix.rfind(kInput, 0) != 0) return {};
  const Signature* sig = find_signature(api);
  if (!sig) return {};
  const std::string_view rest = suffix.substr(kInput.size());
  const size_t dot = rest.find('.');
  const std::string_view head = rest.substr(0, dot);
  const std::string_view tail =
      dot == std::string_view::npos ? std::string_view() : rest.substr(dot);
  if (head.empty()) return {};
  size_t index = 0;
  auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), index);
  std::string other;
  if (ec == std::errc() && end == head.data() + head.size()) {
    const std::string_view name = param_at(sig->params, index);
    if (name.empty()) return {};
    other.assign(kInput).append(name);
  } else {
    const long at = param_position(sig->params, head);
    if (at < 0) return {};
    other.assign(kInput).append(std::to_string(at));
  }
  return other.append(tail);
}

std::string forward_api_of(const CompareRow& row) {
  std::string_view entry = row.name.substr(0, row.suffix_at);
  if (!entry.empty() && entry.back() == '.') entry.remove_suffix(1);
  const EntryName e = parse_entry_name(entry);
  if (e.direction != Direction::kForward || e.prefix == "Module") return {};
  std::string api(e.prefix);
  return api.append(".").append(e.op);
}

}  // namespace numprobe
