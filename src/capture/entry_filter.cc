// EntryFilter: list / scope / data_mode / tensor_list decisions (rules in capture_config.h).
#include <string>
#include <string_view>

#include "capture/capture_config.h"
#include "format/entry_name.h"

namespace numprobe::capture {
namespace {

constexpr std::string_view kParamsGradSuffix = ".parameters_grad";

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// An entry name cut into the parts the rules compare. All views point into `full`.
struct Call {
  enum Kind { kOther, kApi, kModule, kParamsGrad };
  Kind kind = kOther;
  std::string_view full;
  std::string_view type_part;  // API: "{Prefix}.{api}"
  std::string_view
      stem;  // API: "{Prefix}.{api}.{n}"; module / params grad: "Module.{path}.{Class}"
  std::string_view counter;  // module: ".{n}"
};

Call parse_call(std::string_view name) {
  Call c;
  c.full = name;
  if (ends_with(name, kParamsGradSuffix)) {  // "Module.fc.Linear.parameters_grad", no counter
    c.kind = Call::kParamsGrad;
    c.stem = name.substr(0, name.size() - kParamsGradSuffix.size());
    return c;
  }
  EntryName e = parse_entry_name(name);
  if (e.index < 0 || e.prefix.empty()) return c;
  size_t last = name.rfind('.');
  if (e.direction == Direction::kParametersGrad) {
    c.kind = Call::kParamsGrad;
    c.stem = name.substr(0, last - kParamsGradSuffix.size());
  } else if (e.direction == Direction::kForward || e.direction == Direction::kBackward) {
    // prefix and op are views into name: "{prefix}.{op}" starts at name.data().
    c.type_part = name.substr(0, e.prefix.size() + 1 + e.op.size());
    if (e.is_module) {
      c.kind = Call::kModule;
      c.stem = c.type_part;
      c.counter = name.substr(last);
    } else {
      c.kind = Call::kApi;
      c.stem = name.substr(0, last);
    }
  }
  return c;
}

// Whether `item` names this call (see "call name" in capture_config.h).
bool names_call(std::string_view item, const Call& c) {
  if (item == c.full) return true;
  if (c.kind == Call::kOther || !starts_with(item, c.stem)) return false;
  std::string_view rest = item.substr(c.stem.size());
  if (rest.empty()) return true;
  switch (c.kind) {
    case Call::kApi:
      return rest == ".forward" || rest == ".backward";
    case Call::kModule:
      if (starts_with(rest, ".forward")) return rest.substr(8) == c.counter;
      if (starts_with(rest, ".backward")) return rest.substr(9) == c.counter;
      return false;
    case Call::kParamsGrad:  // any call of the module, or the grads without their counter
      if (rest == kParamsGradSuffix) return true;
      if (starts_with(rest, ".forward.")) return all_digits(rest.substr(9));
      if (starts_with(rest, ".backward.")) return all_digits(rest.substr(10));
      return false;
    case Call::kOther:
      break;
  }
  return false;
}

bool list_matches_call(const std::vector<std::string>& list, const Call& c) {
  for (const std::string& item : list) {
    if (names_call(item, c)) return true;
    if (c.kind == Call::kApi && c.type_part.find(item) != std::string_view::npos) return true;
    // Names the rules do not parse (debug saves, foreign prefixes): msprobe's plain substring.
    if (c.kind == Call::kOther && c.full.find(item) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

EntryFilter::EntryFilter(const CaptureConfig& cfg)
    : list_(cfg.list), scope_(cfg.scope), tensor_list_(cfg.tensor_list), data_mode_(cfg.data_mode) {
  // The parser guarantees 0 or 2 scope items; a hand-built config with one means [A, A].
  if (scope_.size() == 1) scope_.push_back(scope_[0]);
  if (scope_.size() > 2) scope_.resize(2);
}

void EntryFilter::reset() {
  state_ = ScopeState::kBefore;
  closing_modules_.clear();
  listed_modules_.clear();
  last_enclosing_.clear();
  last_enclosing_listed_ = false;
}

bool EntryFilter::list_matches(std::string_view entry_name) const {
  return list_.empty() || list_matches_call(list_, parse_call(entry_name));
}

bool EntryFilter::tensor_list_matches(std::string_view entry_name) const {
  for (const std::string& item : tensor_list_) {
    if (entry_name.find(item) != std::string_view::npos) return true;
  }
  return false;
}

bool EntryFilter::wants_forward(std::string_view entry_name, std::string_view enclosing_module) {
  if (selects_everything()) return true;
  // Both are evaluated for every entry: each keeps state that later entries depend on.
  bool in_scope = scope_.empty() || advance_scope(entry_name, enclosing_module);
  bool listed = list_.empty() || list_selected(entry_name, enclosing_module);
  return in_scope && listed;
}

bool EntryFilter::advance_scope(std::string_view entry, std::string_view enclosing) {
  Call c = parse_call(entry);
  switch (state_) {
    case ScopeState::kBefore:
      if (!names_call(scope_[0], c)) return false;
      state_ = ScopeState::kInside;
      [[fallthrough]];  // the start may also be the end
    case ScopeState::kInside:
      if (names_call(scope_[1], c)) {
        if (c.kind == Call::kModule) {
          state_ = ScopeState::kClosing;
          closing_modules_.insert(std::string(entry));
        } else {
          state_ = ScopeState::kDone;
        }
      }
      return true;
    case ScopeState::kClosing:
      if (!enclosing.empty() && closing_modules_.count(std::string(enclosing))) {
        if (c.kind == Call::kModule) closing_modules_.insert(std::string(entry));
        return true;
      }
      state_ = ScopeState::kDone;
      closing_modules_.clear();
      return false;
    case ScopeState::kDone:
      break;
  }
  return false;
}

bool EntryFilter::list_selected(std::string_view entry, std::string_view enclosing) {
  bool inside = false;
  if (!enclosing.empty()) {
    if (enclosing == last_enclosing_) {
      inside = last_enclosing_listed_;
    } else {
      // Seen as a listed (or expanded) module, or, if the caller never reported it, named itself.
      inside = listed_modules_.count(std::string(enclosing)) > 0;
      if (!inside) {
        Call m = parse_call(enclosing);
        if (m.kind == Call::kModule) {
          for (const std::string& item : list_) {
            if (names_call(item, m)) {
              inside = true;
              break;
            }
          }
        }
      }
      last_enclosing_.assign(enclosing);
      last_enclosing_listed_ = inside;
    }
  }
  Call c = parse_call(entry);
  bool selected = inside || list_matches_call(list_, c);
  if (selected && c.kind == Call::kModule &&
      !starts_with(entry.substr(c.stem.size()), ".backward")) {
    listed_modules_.insert(std::string(entry));
    if (entry == last_enclosing_) last_enclosing_listed_ = true;
  }
  return selected;
}

}  // namespace numprobe::capture
