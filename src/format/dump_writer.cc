#include "format/dump_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/file_util.h"
#include "base/json_text.h"
#include "base/mapped_file.h"
#include "format/dump_assembly.h"
#include "format/dump_render.h"
#include "format/journal.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"
#include "numprobe/string_pool.h"

namespace numprobe {
namespace {

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
    base::append_py_string(out, s);
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

}  // namespace

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
        std::make_unique<base::AtomicFileWriter>(dir_ + "/dump.json", opt_.sync_each_record);
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
  base::make_dirs(dir_);
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
  if (holding_ && buf_.size() < format::kHeldBytes) return;
  write_buffer();
}

void DumpWriter::hold_writes() {
  holding_ = true;
  buf_.reserve(format::kHeldBytes + format::kHeldBytes / 2);
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
  if (opt_.sync_each_record) base::sync_data(fd_, journal_path(dir_));
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
    const uint32_t group = a.stack_group(key, frames);
    if (auto first = a.group_first_name(group)) {
      append(format::kRecStackRef, {name, *first});
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
    base::append_py_string(value, *parent);
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

AssembledDump assemble_journal(const std::string& path) {
  base::MappedFile file(path);
  return assemble_journal_bytes(file.data(), file.size(), path);
}

AssembledDump assemble_journal_bytes(const char* data, size_t size, const std::string& name) {
  format::DumpAssembly a(nullptr);
  AssembledDump out;
  out.report = format::assemble_records(data, size, name, a);
  a.take_texts(out.dump_json, out.stack_json, out.construct_json);
  return out;
}

namespace {

// Writes the three files from the journal, keeping every intact record, fsynced, and removes the
// journal.
RecoverReport assemble_to_files(const std::string& rank_dir) {
  const std::string jpath = journal_path(rank_dir);
  RecoverReport rep;
  {
    base::MappedFile file(jpath);
    base::AtomicFileWriter dump_file(rank_dir + "/dump.json");
    format::DumpAssembly a(&dump_file);
    rep = format::assemble_records(file.data(), file.size(), jpath, a);
    a.commit(rank_dir, /*durable=*/true);
  }
  ::unlink(jpath.c_str());
  return rep;
}

}  // namespace

RecoverReport recover_rank_dir(const std::string& rank_dir) {
  if (!base::file_exists(journal_path(rank_dir))) return RecoverReport{};
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
