// Builds dump.json, stack.json and construct.json from journal records, in journal order. The
// writer feeds it as records are added, recovery feeds it a journal's records: both give the same
// files. dump.json text goes to its file every kHeldBytes when there is one (else it stays in
// memory); the stack and construct tables stay in memory (names and distinct frames only).
//
// The header comes first (a later header, or one after entries, is ignored); a repeated entry,
// stack or construct name keeps its first record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/file_util.h"
#include "base/json_writer.h"
#include "format/dump_writer.h"
#include "numprobe/stack_construct.h"
#include "numprobe/string_pool.h"

namespace numprobe::format {

class DumpAssembly {
 public:
  // file: where dump.json's text goes as it is built (commit() commits it); null: the texts stay in
  // memory for take_texts().
  explicit DumpAssembly(base::AtomicFileWriter* file);

  // fields: key, rendered value, ...; the pair ("data", "") marks the slot of the entries.
  void header(const std::vector<std::string_view>& fields);
  void entry(std::string_view name, std::string_view body);

  // Stacks are groups of entry names sharing one list of frames.
  // The group of a stack: the one an earlier stack of this `key` (non-zero) went to, else the one
  // holding these frames (a new one if no earlier stack had them).
  uint32_t stack_group(uint64_t key, const std::vector<std::string>& frames);
  uint32_t group_of_frames(const std::vector<std::string_view>& frames);
  // The group of an earlier entry's stack, or kNoString.
  uint32_t group_of_name(std::string_view name) const;
  // The first entry name of a group, none while it has no entry.
  std::optional<std::string_view> group_first_name(uint32_t group) const;
  void add_to_group(std::string_view name, uint32_t group);

  void construct_edge(std::string_view name, std::string_view rendered_parent);

  // Completes the text of dump.json (the rest written to the file, if any) and of construct.json.
  void finish();
  // After finish(): writes stack.json and construct.json into dir and commits them, then
  // dump.json (the file) last: its presence marks the set complete.
  void commit(const std::string& dir, bool durable);
  // After finish(), without a file: the three files' texts.
  void take_texts(std::string& dump_json, std::string& stack_json, std::string& construct_json);

  bool has_header() const { return have_header_; }
  size_t entries() const { return entry_names_.size(); }
  size_t stack_entries() const { return stacks_.entry_count(); }
  size_t constructs() const { return construct_names_.size(); }

 private:
  void spill();
  // Writes the header members before "data" and opens it; the rest waits for finish().
  void open_data(const std::vector<std::string_view>* fields);

  base::AtomicFileWriter* file_;
  std::string dump_text_;
  base::JsonWriter dump_{dump_text_, base::JsonDialect::python(1), 0};
  bool have_header_ = false;
  bool data_open_ = false;
  std::vector<std::string> after_data_;  // header members after "data": key, value, ...
  StringPool entry_names_;
  StackTable stacks_;
  std::unordered_map<std::string, uint32_t> stack_groups_;  // frames joined by '\0' -> group
  std::unordered_map<uint64_t, uint32_t> stack_keys_;       // the writer's stack keys -> group
  std::string construct_text_;
  base::JsonWriter construct_{construct_text_, base::JsonDialect::python(1), 0};
  StringPool construct_names_;
};

// Feeds a journal's intact records to `a` (a stack reference to an entry without a stack is
// ignored) and completes it (finish()). Throws InputError if the bytes are not a numprobe journal.
RecoverReport assemble_records(const char* data, size_t size, const std::string& name,
                               DumpAssembly& a);

}  // namespace numprobe::format
