#include "format/dump_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "format/dump_render.h"
#include "format/file_util.h"
#include "format/journal.h"
#include "format/mapped_file.h"
#include "format/py_json_writer.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"
#include "numprobe/string_pool.h"

namespace numprobe {
namespace {

// Journal writes are gathered up to this size, dump.json text too. Below glibc's mmap threshold
// (128 KiB): the buffers never move to fresh, page-faulting pages.
constexpr size_t kHeldBytes = size_t{64} << 10;

std::string journal_path(const std::string& dir) {
  return dir + "/" + kJournalFileName;
}

// True while a live DumpWriter holds the journal's lock. Where locks are not supported the answer
// is false (the journal then looks like one a dead writer left).
bool journal_in_use(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return busy;
}

std::vector<std::string> header_fields(const DumpHeader& h) {
  auto str = [](std::string_view s) {
    std::string out;
    format::append_py_string(out, s);
    return out;
  };
  return {"task",          str(h.task),
          "level",         str(h.level),
          "framework",     str(h.framework),
          "dump_data_dir", h.dump_data_dir ? str(*h.dump_data_dir) : std::string("null"),
          "data",          ""};
}

std::vector<std::string> header_fields(const DumpFile& d) {
  auto members = format::render_header_members(d);
  std::vector<std::string> fields;
  for (size_t i = 0; i <= members.size(); ++i) {
    if (i == d.data_position) {
      fields.emplace_back("data");
      fields.emplace_back();
    }
    if (i < members.size()) {
      fields.push_back(members[i].first);
      fields.push_back(members[i].second);
    }
  }
  return fields;
}

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return std::vector<std::string_view>(v.begin(), v.end());
}

// Adds s to the pool; true if it was not there (the first record of a name is the one kept).
bool first_time(StringPool& pool, std::string_view s) {
  const size_t before = pool.size();
  pool.intern(s);
  return pool.size() != before;
}

}  // namespace

namespace format {

// Builds dump.json, stack.json and construct.json from records in journal order. The writer
// feeds it as records are added, recovery feeds it a journal's records: both give the same files.
// dump.json text goes to `file` every kHeldBytes when there is one (else it stays in dump_text);
// the stack and construct tables stay in memory (names and distinct frames only).
//
// The header comes first (a later header, or one after entries, is ignored); a repeated entry,
// stack or construct name keeps its first record.
struct DumpAssembly {
  explicit DumpAssembly(AtomicFileWriter* f) : file(f) {
    dump_text.reserve(kHeldBytes + kHeldBytes / 2);
    construct.begin_object();
  }

  // fields: key, rendered value, ...; the pair ("data", "") marks the slot of the entries.
  void header(const std::vector<std::string_view>& fields) {
    if (have_header || data_open) return;
    have_header = true;
    open_data(&fields);
  }

  void entry(std::string_view name, std::string_view body) {
    if (!data_open) open_data(nullptr);
    if (!first_time(entry_names, name)) return;
    dump.key(name);
    dump.raw_value(body);
    if (file != nullptr && dump_text.size() >= kHeldBytes) spill();
  }

  // The group holding these frames (a new one if no earlier stack had them).
  uint32_t group_of_frames(const std::vector<std::string_view>& frames) {
    std::string key;
    for (auto f : frames) {
      key.append(f);
      key += '\0';
    }
    auto [it, fresh] =
        stack_groups.emplace(std::move(key), static_cast<uint32_t>(stacks.group_frames.size()));
    if (fresh) {
      stacks.group_names.emplace_back();
      stacks.group_frames.emplace_back();
      for (auto f : frames) stacks.group_frames.back().push_back(stacks.strings.intern(f));
    }
    return it->second;
  }
  // The group of an earlier entry's stack, or kNoString.
  uint32_t group_of_name(std::string_view name) const {
    uint32_t id = stacks.strings.find(name);
    if (id == kNoString) return kNoString;
    auto it = stacks.group_of.find(id);
    return it == stacks.group_of.end() ? kNoString : it->second;
  }
  void add_to_group(std::string_view name, uint32_t group) {
    uint32_t name_id = stacks.strings.intern(name);
    if (stacks.group_of.emplace(name_id, group).second)
      stacks.group_names[group].push_back(name_id);
  }

  void construct_edge(std::string_view name, std::string_view rendered_parent) {
    if (!first_time(construct_names, name)) return;
    construct.key(name);
    construct.raw_value(rendered_parent);
  }

  // Completes the text of dump.json (the rest written to `file`, if any) and of construct.json.
  void finish() {
    if (!data_open) open_data(nullptr);
    dump.end_object();  // data
    for (size_t i = 0; i + 1 < after_data.size(); i += 2) {
      dump.key(after_data[i]);
      dump.raw_value(after_data[i + 1]);
    }
    dump.end_object();
    construct.end_object();
    if (file != nullptr) spill();
  }

  // After finish(): writes stack.json and construct.json into dir and commits them, then
  // dump.json (`file`) last: its presence marks the set complete.
  void commit(const std::string& dir, bool durable) {
    AtomicFileWriter stack_file(dir + "/stack.json", durable);
    stack_file.write(render_stack_json(stacks));
    AtomicFileWriter construct_file(dir + "/construct.json", durable);
    construct_file.write(construct_text);
    stack_file.commit();
    construct_file.commit();
    file->commit();
  }

  size_t entries() const { return entry_names.size(); }
  size_t stack_entries() const { return stacks.entry_count(); }
  size_t constructs() const { return construct_names.size(); }

  AtomicFileWriter* file;
  std::string dump_text;
  PyJsonWriter dump{dump_text, 1, 0};
  bool have_header = false;
  bool data_open = false;
  std::vector<std::string> after_data;  // header members after "data": key, value, ...
  StringPool entry_names;
  StackTable stacks;
  std::unordered_map<std::string, uint32_t> stack_groups;  // frames joined by '\0' -> group
  std::unordered_map<uint64_t, uint32_t> stack_keys;       // the writer's stack keys -> group
  std::string construct_text;
  PyJsonWriter construct{construct_text, 1, 0};
  StringPool construct_names;

 private:
  void spill() {
    file->write(dump_text);
    dump_text.clear();
  }

  // Writes the header members before "data" and opens it; the rest waits for finish().
  void open_data(const std::vector<std::string_view>* fields) {
    dump.begin_object();
    bool data_seen = false;
    if (fields != nullptr) {
      for (size_t i = 0; i + 1 < fields->size(); i += 2) {
        std::string_view k = (*fields)[i], v = (*fields)[i + 1];
        if (!data_seen && k == "data" && v.empty()) {
          data_seen = true;
          dump.key("data");
          dump.begin_object();
        } else if (data_seen) {
          after_data.emplace_back(k);
          after_data.emplace_back(v);
        } else {
          dump.key(k);
          dump.raw_value(v);
        }
      }
    }
    if (!data_seen) {
      dump.key("data");
      dump.begin_object();
    }
    data_open = true;
  }
};

}  // namespace format

DumpWriter::DumpWriter(const std::string& rank_dir, const DumpHeader& header, DumpWriterOptions opt)
    : dir_(rank_dir), opt_(opt) {
  open_journal();
  append_header(views(header_fields(header)));
}

DumpWriter::DumpWriter(const std::string& rank_dir, const DumpFile& header_from,
                       DumpWriterOptions opt)
    : dir_(rank_dir), opt_(opt) {
  open_journal();
  append_header(views(header_fields(header_from)));
}

void DumpWriter::append_header(const std::vector<std::string_view>& fields) {
  try {
    dump_file_ =
        std::make_unique<format::AtomicFileWriter>(dir_ + "/dump.json", opt_.sync_each_record);
    out_ = std::make_unique<format::DumpAssembly>(dump_file_.get());
    append(format::kRecHeader, fields);
    out_->header(fields);
  } catch (...) {
    // The destructor does not run for a throwing constructor. The journal was created by this
    // constructor and holds no record: it goes too, or every later writer would refuse the
    // directory.
    out_.reset();
    dump_file_.reset();
    ::close(fd_);
    fd_ = -1;
    ::unlink(journal_path(dir_).c_str());
    throw;
  }
}

// Unfinished (a crash-like close): the held records go to the journal, which stays;
// dump.json.tmp is removed by its writer's destructor.
DumpWriter::~DumpWriter() {
  if (fd_ >= 0) {
    try {
      write_buffer();
    } catch (const Error&) {  // what cannot be written is lost, as in a crash
    }
    ::close(fd_);
  }
}

void DumpWriter::open_journal() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error(dir_ + ": cannot create directory: " + ec.message());
  std::string path = journal_path(dir_);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    if (errno == EEXIST) {
      if (journal_in_use(path)) {
        throw Error(path +
                    ": another writer is writing this directory now (two debuggers or processes "
                    "with the same dump_path, step and rank?)");
      }
      throw Error(path +
                  ": a journal already exists (an earlier writer stopped mid-step); run "
                  "`numprobe recover " +
                  dir_ + "` first");
    }
    throw Error(path + ": cannot create: " + strerror(errno));
  }
  // Held until the journal is closed (also by the kernel when the process dies): recovery and
  // other writers can tell a live journal from one a dead writer left.
  ::flock(fd_, LOCK_EX | LOCK_NB);
  // From here on the journal is the authority for this rank directory: files of an earlier run go,
  // so that a journal next to a dump.json can only mean "died after assembling" (same content).
  for (const char* f : {"dump.json", "stack.json", "construct.json"}) {
    ::unlink((dir_ + "/" + f).c_str());
  }
  buf_.assign(format::kJournalMagic, sizeof format::kJournalMagic);
}

void DumpWriter::append(char type, const std::vector<std::string_view>& fields) {
  if (finished_) throw Error(dir_ + ": record added after finish()");
  check_usable();
  format::encode_record(buf_, type, fields);
  if (holding_ && buf_.size() < kHeldBytes) return;
  write_buffer();
}

void DumpWriter::hold_writes() {
  holding_ = true;
  buf_.reserve(kHeldBytes + kHeldBytes / 2);
}

void DumpWriter::write_held() {
  holding_ = false;
  write_buffer();
}

void DumpWriter::write_buffer() {
  if (buf_.empty() || fd_ < 0) return;
  // Whole records per write: a record is either fully in the file or (torn) detected by its CRC.
  size_t off = 0;
  while (off < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;  // the journal may end in a torn record: nothing more goes after it
      buf_.clear();
      throw Error(journal_path(dir_) + ": write failed: " + strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  buf_.clear();
  if (opt_.sync_each_record) ::fdatasync(fd_);
}

void DumpWriter::check_usable() const {
  if (failed_) {
    throw Error(dir_ + ": an earlier write failed; the journal keeps what was written (run " +
                "`numprobe recover " + dir_ + "`)");
  }
}

template <typename F>
void DumpWriter::building(F&& f) {
  try {
    f();
  } catch (...) {
    failed_ = true;  // the files being built are incomplete: finish() must not commit them
    throw;
  }
}

// Every record is encoded into the journal before the files being built take it.
void DumpWriter::add_entry(std::string_view name, std::string_view body) {
  append(format::kRecEntry, {name, body});
  building([&] { out_->entry(name, body); });
  ++entries_;
}

void DumpWriter::add_entry(const DumpFile& d, size_t index) {
  add_entry(d.entry_name(index), format::render_entry_body(d, index));
}

void DumpWriter::add_stack(std::string_view name, const std::vector<std::string>& frames,
                           uint64_t key) {
  check_usable();
  format::DumpAssembly& a = *out_;
  building([&] {
    uint32_t group = kNoString;
    if (key != 0) {
      if (auto it = a.stack_keys.find(key); it != a.stack_keys.end()) group = it->second;
    }
    if (group == kNoString) {
      // A new key may still name frames an earlier stack had (under another key, or none).
      group = a.group_of_frames(views(frames));
      if (key != 0) a.stack_keys.emplace(key, group);
    }
    const auto& names = a.stacks.group_names[group];
    if (!names.empty()) {
      append(format::kRecStackRef, {name, a.stacks.strings.get(names.front())});
    } else {
      std::vector<std::string_view> fields{name};
      for (const auto& f : frames) fields.emplace_back(f);
      append(format::kRecStack, fields);
    }
    a.add_to_group(name, group);
  });
}

void DumpWriter::add_construct(std::string_view name, std::optional<std::string_view> parent) {
  std::string value = "null";
  if (parent) {
    value.clear();
    format::append_py_string(value, *parent);
  }
  append(format::kRecConstruct, {name, value});
  building([&] { out_->construct_edge(name, value); });
}

void DumpWriter::add_construct(const ConstructTable& table, const ConstructEdge& edge) {
  std::string value = render_construct_parent(table, edge);
  append(format::kRecConstruct, {table.strings.get(edge.node), value});
  building([&] { out_->construct_edge(table.strings.get(edge.node), value); });
}

// On any error nothing more is committed and the journal stays (for `numprobe recover`).
void DumpWriter::finish() {
  if (finished_) return;
  check_usable();
  write_held();
  finished_ = true;
  ::close(fd_);
  fd_ = -1;
  building([&] {
    out_->finish();
    out_->commit(dir_, opt_.sync_each_record);
  });
  ::unlink(journal_path(dir_).c_str());
}

namespace {

// Feeds a journal's intact records to an assembly (a stack reference to an entry without a stack
// is ignored) and completes it.
RecoverReport assemble(const char* data, size_t size, const std::string& name,
                       format::DumpAssembly& a) {
  format::JournalReader reader(data, size, name);
  RecoverReport rep;
  rep.had_journal = true;
  rep.bytes_total = size;
  format::JournalRecord r;
  std::vector<std::string_view> frames;
  while (reader.next(r)) {
    ++rep.records;
    switch (r.type) {
      case format::kRecHeader:
        a.header(r.fields);
        break;
      case format::kRecEntry:
        if (r.fields.size() == 2) a.entry(r.fields[0], r.fields[1]);
        break;
      case format::kRecStack:
        if (!r.fields.empty()) {
          frames.assign(r.fields.begin() + 1, r.fields.end());
          a.add_to_group(r.fields[0], a.group_of_frames(frames));
        }
        break;
      case format::kRecStackRef:
        if (r.fields.size() == 2) {
          uint32_t g = a.group_of_name(r.fields[1]);
          if (g != kNoString) a.add_to_group(r.fields[0], g);
        }
        break;
      case format::kRecConstruct:
        if (r.fields.size() == 2) a.construct_edge(r.fields[0], r.fields[1]);
        break;
      default:
        break;
    }
  }
  rep.bytes_dropped = size - reader.valid_bytes();
  rep.detail = reader.stop_reason();
  if (!a.have_header) {
    if (!rep.detail.empty()) rep.detail += "; ";
    rep.detail += "no header record (task/level/framework unknown)";
  }
  a.finish();
  rep.entries = a.entries();
  rep.stacks = a.stack_entries();
  rep.constructs = a.constructs();
  return rep;
}

}  // namespace

AssembledDump assemble_journal(const std::string& path) {
  format::MappedFile file(path);
  return assemble_journal_bytes(file.data(), file.size(), path);
}

AssembledDump assemble_journal_bytes(const char* data, size_t size, const std::string& name) {
  format::DumpAssembly a(nullptr);
  AssembledDump out;
  out.report = assemble(data, size, name, a);
  out.dump_json = std::move(a.dump_text);
  out.stack_json = render_stack_json(a.stacks);
  out.construct_json = std::move(a.construct_text);
  return out;
}

namespace {

// Writes the three files from the journal, keeping every intact record, fsynced, and removes the
// journal.
RecoverReport assemble_to_files(const std::string& rank_dir) {
  const std::string jpath = journal_path(rank_dir);
  RecoverReport rep;
  {
    format::MappedFile file(jpath);
    format::AtomicFileWriter dump_file(rank_dir + "/dump.json");
    format::DumpAssembly a(&dump_file);
    rep = assemble(file.data(), file.size(), jpath, a);
    a.commit(rank_dir, /*durable=*/true);
  }
  ::unlink(jpath.c_str());
  return rep;
}

}  // namespace

RecoverReport recover_rank_dir(const std::string& rank_dir) {
  if (!format::file_exists(journal_path(rank_dir))) return RecoverReport{};
  // Recovering a live journal would remove it under its writer, and lose every record after.
  if (journal_in_use(journal_path(rank_dir))) {
    throw Error(journal_path(rank_dir) +
                ": a running process is still writing this journal; recover it after that "
                "process has ended");
  }
  // A journal is always newer than any json files beside it (DumpWriter removes those when it
  // starts), so the journal wins; after a death between assembling and removing the journal the
  // two hold the same content.
  return assemble_to_files(rank_dir);
}

}  // namespace numprobe
