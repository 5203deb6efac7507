#include "format/dump_assembly.h"

#include "base/file_util.h"
#include "format/journal.h"

namespace numprobe::format {
namespace {

// Adds s to the pool; true if it was not there (the first record of a name is the one kept).
bool first_time(StringPool& pool, std::string_view s) {
  const size_t before = pool.size();
  pool.intern(s);
  return pool.size() != before;
}

}  // namespace

DumpAssembly::DumpAssembly(base::AtomicFileWriter* file) : file_(file) {
  dump_text_.reserve(kHeldBytes + kHeldBytes / 2);
  construct_.begin_object();
}

void DumpAssembly::header(const std::vector<std::string_view>& fields) {
  if (have_header_ || data_open_) return;
  have_header_ = true;
  open_data(&fields);
}

void DumpAssembly::entry(std::string_view name, std::string_view body) {
  if (!data_open_) open_data(nullptr);
  if (!first_time(entry_names_, name)) return;
  dump_.key(name);
  dump_.raw_value(body);
  if (file_ != nullptr && dump_text_.size() >= kHeldBytes) spill();
}

uint32_t DumpAssembly::stack_group(uint64_t key, const std::vector<std::string>& frames) {
  if (key != 0) {
    if (auto it = stack_keys_.find(key); it != stack_keys_.end()) return it->second;
  }
  // A new key may still name frames an earlier stack had (under another key, or none).
  const uint32_t group =
      group_of_frames(std::vector<std::string_view>(frames.begin(), frames.end()));
  if (key != 0) stack_keys_.emplace(key, group);
  return group;
}

uint32_t DumpAssembly::group_of_frames(const std::vector<std::string_view>& frames) {
  std::string key;
  for (auto f : frames) {
    key.append(f);
    key += '\0';
  }
  auto [it, fresh] =
      stack_groups_.emplace(std::move(key), static_cast<uint32_t>(stacks_.group_frames.size()));
  if (fresh) {
    stacks_.group_names.emplace_back();
    stacks_.group_frames.emplace_back();
    for (auto f : frames) stacks_.group_frames.back().push_back(stacks_.strings.intern(f));
  }
  return it->second;
}

uint32_t DumpAssembly::group_of_name(std::string_view name) const {
  uint32_t id = stacks_.strings.find(name);
  if (id == kNoString) return kNoString;
  auto it = stacks_.group_of.find(id);
  return it == stacks_.group_of.end() ? kNoString : it->second;
}

std::optional<std::string_view> DumpAssembly::group_first_name(uint32_t group) const {
  const auto& names = stacks_.group_names[group];
  if (names.empty()) return std::nullopt;
  return stacks_.strings.get(names.front());
}

void DumpAssembly::add_to_group(std::string_view name, uint32_t group) {
  uint32_t name_id = stacks_.strings.intern(name);
  if (stacks_.group_of.emplace(name_id, group).second)
    stacks_.group_names[group].push_back(name_id);
}

void DumpAssembly::construct_edge(std::string_view name, std::string_view rendered_parent) {
  if (!first_time(construct_names_, name)) return;
  construct_.key(name);
  construct_.raw_value(rendered_parent);
}

void DumpAssembly::finish() {
  if (!data_open_) open_data(nullptr);
  dump_.end_object();  // data
  for (size_t i = 0; i + 1 < after_data_.size(); i += 2) {
    dump_.key(after_data_[i]);
    dump_.raw_value(after_data_[i + 1]);
  }
  dump_.end_object();
  construct_.end_object();
  if (file_ != nullptr) spill();
}

void DumpAssembly::commit(const std::string& dir, bool durable) {
  base::AtomicFileWriter stack_file(dir + "/stack.json", durable);
  stack_file.write(render_stack_json(stacks_));
  base::AtomicFileWriter construct_file(dir + "/construct.json", durable);
  construct_file.write(construct_text_);
  stack_file.commit();
  construct_file.commit();
  file_->commit();
}

void DumpAssembly::take_texts(std::string& dump_json, std::string& stack_json,
                              std::string& construct_json) {
  dump_json = std::move(dump_text_);
  stack_json = render_stack_json(stacks_);
  construct_json = std::move(construct_text_);
}

void DumpAssembly::spill() {
  file_->write(dump_text_);
  dump_text_.clear();
}

void DumpAssembly::open_data(const std::vector<std::string_view>* fields) {
  dump_.begin_object();
  bool data_seen = false;
  if (fields != nullptr) {
    for (size_t i = 0; i + 1 < fields->size(); i += 2) {
      std::string_view k = (*fields)[i], v = (*fields)[i + 1];
      if (!data_seen && k == "data" && v.empty()) {
        data_seen = true;
        dump_.key("data");
        dump_.begin_object();
      } else if (data_seen) {
        after_data_.emplace_back(k);
        after_data_.emplace_back(v);
      } else {
        dump_.key(k);
        dump_.raw_value(v);
      }
    }
  }
  if (!data_seen) {
    dump_.key("data");
    dump_.begin_object();
  }
  data_open_ = true;
}

RecoverReport assemble_records(const char* data, size_t size, const std::string& name,
                               DumpAssembly& a) {
  JournalReader reader(data, size, name);
  RecoverReport rep;
  rep.had_journal = true;
  rep.bytes_total = size;
  JournalRecord r;
  std::vector<std::string_view> frames;
  while (reader.next(r)) {
    ++rep.records;
    switch (r.type) {
      case kRecHeader:
        a.header(r.fields);
        break;
      case kRecEntry:
        if (r.fields.size() == 2) a.entry(r.fields[0], r.fields[1]);
        break;
      case kRecStack:
        if (!r.fields.empty()) {
          frames.assign(r.fields.begin() + 1, r.fields.end());
          a.add_to_group(r.fields[0], a.group_of_frames(frames));
        }
        break;
      case kRecStackRef:
        if (r.fields.size() == 2) {
          uint32_t g = a.group_of_name(r.fields[1]);
          if (g != kNoString) a.add_to_group(r.fields[0], g);
        }
        break;
      case kRecConstruct:
        if (r.fields.size() == 2) a.construct_edge(r.fields[0], r.fields[1]);
        break;
      default:
        break;
    }
  }
  rep.bytes_dropped = size - reader.valid_bytes();
  rep.detail = reader.stop_reason();
  if (!a.has_header()) {
    if (!rep.detail.empty()) rep.detail += "; ";
    rep.detail += "no header record (task/level/framework unknown)";
  }
  a.finish();
  rep.entries = a.entries();
  rep.stacks = a.stack_entries();
  rep.constructs = a.constructs();
  return rep;
}

}  // namespace numprobe::format
