#include "numprobe/dump_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "format/dump_render.h"
#include "format/file_util.h"
#include "format/journal.h"
#include "format/mapped_file.h"
#include "format/py_json_writer.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"

namespace numprobe {
namespace {

RecoverReport assemble_to_files(const std::string& rank_dir, bool require_intact, bool durable);

std::string journal_path(const std::string& dir) {
  return dir + "/" + kJournalFileName;
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

}  // namespace

DumpWriter::DumpWriter(const std::string& rank_dir, const DumpHeader& header, DumpWriterOptions opt)
    : dir_(rank_dir), opt_(opt) {
  open_journal();
  auto fields = header_fields(header);
  append_header(std::vector<std::string_view>(fields.begin(), fields.end()));
}

DumpWriter::DumpWriter(const std::string& rank_dir, const DumpFile& header_from,
                       DumpWriterOptions opt)
    : dir_(rank_dir), opt_(opt) {
  open_journal();
  auto members = format::render_header_members(header_from);
  std::vector<std::string> fields;
  for (size_t i = 0; i <= members.size(); ++i) {
    if (i == header_from.data_position) {
      fields.emplace_back("data");
      fields.emplace_back();
    }
    if (i < members.size()) {
      fields.push_back(members[i].first);
      fields.push_back(members[i].second);
    }
  }
  append_header(std::vector<std::string_view>(fields.begin(), fields.end()));
}

void DumpWriter::append_header(const std::vector<std::string_view>& fields) {
  try {
    append(format::kRecHeader, fields);
  } catch (...) {
    // The destructor does not run for a throwing constructor.
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

namespace {
constexpr size_t kHeldBytes = size_t{64} << 10;
}  // namespace

DumpWriter::~DumpWriter() {
  if (fd_ >= 0) {
    try {
      write_buffer();
    } catch (const Error&) {  // a crash-like close: what cannot be written is lost
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
      throw Error(path +
                  ": a journal already exists (an earlier writer stopped mid-step); run "
                  "`numprobe recover " +
                  dir_ + "` first");
    }
    throw Error(path + ": cannot create: " + strerror(errno));
  }
  // From here on the journal is the authority for this rank directory: files of an earlier run go,
  // so that a journal next to a dump.json can only mean "died after assembling" (same content).
  for (const char* f : {"dump.json", "stack.json", "construct.json"}) {
    ::unlink((dir_ + "/" + f).c_str());
  }
  buf_.assign(format::kJournalMagic, sizeof format::kJournalMagic);
}

void DumpWriter::append(char type, const std::vector<std::string_view>& fields) {
  if (finished_) throw Error(dir_ + ": record added after finish()");
  format::encode_record(buf_, type, fields);
  if (holding_ && buf_.size() < kHeldBytes) return;
  write_buffer();
}

void DumpWriter::hold_writes() {
  holding_ = true;
  // Below glibc's mmap threshold (128 KiB): the buffer never moves to fresh, page-faulting pages.
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
      throw Error(journal_path(dir_) + ": write failed: " + strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  buf_.clear();
  if (opt_.sync_each_record) ::fdatasync(fd_);
}

void DumpWriter::add_entry(std::string_view name, std::string_view body) {
  append(format::kRecEntry, {name, body});
  ++entries_;
}

void DumpWriter::add_entry(const DumpFile& d, size_t index) {
  add_entry(d.entry_name(index), format::render_entry_body(d, index));
}

void DumpWriter::add_stack(std::string_view name, const std::vector<std::string>& frames) {
  std::vector<std::string_view> fields{name};
  for (const auto& f : frames) fields.emplace_back(f);
  append(format::kRecStack, fields);
}

void DumpWriter::add_construct(std::string_view name, std::optional<std::string_view> parent) {
  std::string value = "null";
  if (parent) {
    value.clear();
    format::append_py_string(value, *parent);
  }
  append(format::kRecConstruct, {name, value});
}

void DumpWriter::add_construct(const ConstructTable& table, const ConstructEdge& edge) {
  std::string value = render_construct_parent(table, edge);
  append(format::kRecConstruct, {table.strings.get(edge.node), value});
}

void DumpWriter::finish() {
  if (finished_) return;
  write_held();
  finished_ = true;
  ::close(fd_);
  fd_ = -1;
  assemble_to_files(dir_, /*require_intact=*/true, /*durable=*/opt_.sync_each_record);
}

namespace {

// Text output that spills to a file every few MB, or stays in memory when there is no file.
struct Sink {
  std::string buf;
  format::AtomicFileWriter* file = nullptr;
  void spill(bool force = false) {
    if (file != nullptr && (force || buf.size() >= (size_t{4} << 20))) {
      file->write(buf);
      buf.clear();
    }
  }
};

// Two passes over the journal: side records (header, stacks, construct edges) first, then the
// entries streamed into dump.json in journal order. Memory: the stack table, the set of names
// seen, and a few MB of output buffer.
RecoverReport assemble(const char* data, size_t size, const std::string& name, Sink& dump,
                       Sink& stack, Sink& construct) {
  format::JournalReader reader(data, size, name);
  RecoverReport rep;
  rep.had_journal = true;
  rep.bytes_total = size;

  std::vector<std::string> header;
  bool have_header = false;
  std::unordered_map<std::string, uint32_t> stack_groups;
  StackTable stacks;
  std::unordered_set<std::string_view> seen_construct;
  format::PyJsonWriter cw(construct.buf, 1, 0);
  cw.begin_object();
  format::JournalRecord r;
  while (reader.next(r)) {
    ++rep.records;
    if (r.type == format::kRecHeader && !have_header) {
      have_header = true;
      header.assign(r.fields.begin(), r.fields.end());
    } else if (r.type == format::kRecStack && !r.fields.empty()) {
      std::string key;
      for (size_t i = 1; i < r.fields.size(); ++i) {
        key.append(r.fields[i]);
        key += '\0';
      }
      auto [it, fresh] = stack_groups.emplace(std::move(key), stacks.group_frames.size());
      if (fresh) {
        stacks.group_names.emplace_back();
        stacks.group_frames.emplace_back();
        for (size_t i = 1; i < r.fields.size(); ++i) {
          stacks.group_frames.back().push_back(stacks.strings.intern(r.fields[i]));
        }
      }
      uint32_t name_id = stacks.strings.intern(r.fields[0]);
      if (stacks.group_of.emplace(name_id, it->second).second) {
        stacks.group_names[it->second].push_back(name_id);
        ++rep.stacks;
      }
    } else if (r.type == format::kRecConstruct && r.fields.size() == 2 &&
               seen_construct.insert(r.fields[0]).second) {
      cw.key(r.fields[0]);
      cw.raw_value(r.fields[1]);
      ++rep.constructs;
      construct.spill();
    }
  }
  cw.end_object();
  rep.bytes_dropped = size - reader.valid_bytes();
  rep.detail = reader.stop_reason();
  stack.buf = render_stack_json(stacks);

  format::PyJsonWriter w(dump.buf, 1, 0);
  w.begin_object();
  auto write_data = [&] {
    w.key("data");
    w.begin_object();
    std::unordered_set<std::string_view> seen;
    reader.rewind();
    while (reader.next(r)) {
      if (r.type != format::kRecEntry || r.fields.size() != 2) continue;
      if (!seen.insert(r.fields[0]).second) continue;
      w.key(r.fields[0]);
      w.raw_value(r.fields[1]);
      ++rep.entries;
      dump.spill();
    }
    w.end_object();
  };
  bool data_written = false;
  for (size_t i = 0; i + 1 < header.size(); i += 2) {
    if (header[i] == "data" && header[i + 1].empty()) {
      write_data();
      data_written = true;
    } else {
      w.key(header[i]);
      w.raw_value(header[i + 1]);
    }
  }
  if (!have_header) {
    if (!rep.detail.empty()) rep.detail += "; ";
    rep.detail += "no header record (task/level/framework unknown)";
  }
  if (!data_written) write_data();
  w.end_object();
  return rep;
}

}  // namespace

AssembledDump assemble_journal(const std::string& path) {
  format::MappedFile file(path);
  return assemble_journal_bytes(file.data(), file.size(), path);
}

AssembledDump assemble_journal_bytes(const char* data, size_t size, const std::string& name) {
  Sink dump, stack, construct;
  AssembledDump out;
  out.report = assemble(data, size, name, dump, stack, construct);
  out.dump_json = std::move(dump.buf);
  out.stack_json = std::move(stack.buf);
  out.construct_json = std::move(construct.buf);
  return out;
}

namespace {

// Writes the three files from the journal (stack, construct, then dump.json last: its presence
// marks the set complete) and removes the journal. With require_intact, a damaged journal throws
// before anything is committed and stays in place.
// durable: fsync the files before the journal goes (power-loss safety; the writer asks for it
// only with sync_each_record, whose journal records are themselves synced).
RecoverReport assemble_to_files(const std::string& rank_dir, bool require_intact, bool durable) {
  const std::string jpath = journal_path(rank_dir);
  RecoverReport rep;
  {
    format::MappedFile file(jpath);
    format::AtomicFileWriter dump_file(rank_dir + "/dump.json", durable);
    format::AtomicFileWriter stack_file(rank_dir + "/stack.json", durable);
    format::AtomicFileWriter construct_file(rank_dir + "/construct.json", durable);
    Sink dump, stack, construct;
    dump.file = &dump_file;
    stack.file = &stack_file;
    construct.file = &construct_file;
    rep = assemble(file.data(), file.size(), jpath, dump, stack, construct);
    if (require_intact && rep.bytes_dropped != 0) {
      throw Error(jpath + ": journal damaged while writing (" + rep.detail +
                  "); it is kept: inspect it or run `numprobe recover`");
    }
    for (Sink* sink : {&dump, &stack, &construct}) sink->spill(true);
    stack_file.commit();
    construct_file.commit();
    dump_file.commit();
  }
  ::unlink(jpath.c_str());
  return rep;
}

}  // namespace

RecoverReport recover_rank_dir(const std::string& rank_dir) {
  if (!format::file_exists(journal_path(rank_dir))) return RecoverReport{};
  // A journal is always newer than any json files beside it (DumpWriter removes those when it
  // starts), so the journal wins; after a death between assembling and removing the journal the
  // two hold the same content.
  return assemble_to_files(rank_dir, /*require_intact=*/false, /*durable=*/true);
}

}  // namespace numprobe
