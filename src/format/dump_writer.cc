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

std::string journal_path(const std::string& dir) { return dir + "/" + kJournalFileName; }

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

DumpWriter::DumpWriter(const std::string& rank_dir, const DumpHeader& header,
                       DumpWriterOptions opt)
    : dir_(rank_dir), opt_(opt) {
  open_journal();
  auto fields = header_fields(header);
  append(format::kRecHeader, std::vector<std::string_view>(fields.begin(), fields.end()));
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
  append(format::kRecHeader, std::vector<std::string_view>(fields.begin(), fields.end()));
}

DumpWriter::~DumpWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void DumpWriter::open_journal() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error(dir_ + ": cannot create directory: " + ec.message());
  std::string path = journal_path(dir_);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    if (errno == EEXIST) {
      throw Error(path + ": a journal already exists (an earlier writer stopped mid-step); run "
                         "`numprobe recover " + dir_ + "` first");
    }
    throw Error(path + ": cannot create: " + strerror(errno));
  }
  buf_.assign(format::kJournalMagic, sizeof format::kJournalMagic);
}

void DumpWriter::append(char type, const std::vector<std::string_view>& fields) {
  if (finished_) throw Error(dir_ + ": record added after finish()");
  format::encode_record(buf_, type, fields);
  // One write per record: a record is either fully in the file or (torn) detected by its CRC.
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

void DumpWriter::finish() {
  if (finished_) return;
  finished_ = true;
  ::close(fd_);
  fd_ = -1;
  RecoverReport r = recover_rank_dir(dir_);
  if (r.bytes_dropped != 0) {
    throw Error(journal_path(dir_) + ": journal damaged while writing: " + r.detail);
  }
}

AssembledDump assemble_journal(const std::string& path) {
  format::MappedFile file(path);
  format::JournalScan scan = format::scan_journal(file.data(), file.size(), path);
  AssembledDump out;
  RecoverReport& rep = out.report;
  rep.had_journal = true;
  rep.records = scan.records.size();
  rep.bytes_total = file.size();
  rep.bytes_dropped = file.size() - scan.valid_bytes;
  rep.detail = scan.stop_reason;

  const format::JournalRecord* header = nullptr;
  std::unordered_set<std::string_view> seen_entries;
  std::unordered_map<std::string, uint32_t> stack_groups;
  StackTable stacks;
  std::string construct_text;
  format::PyJsonWriter cw(construct_text, 1, 0);
  cw.begin_object();
  std::unordered_set<std::string_view> seen_construct;

  for (const auto& r : scan.records) {
    switch (r.type) {
      case format::kRecHeader:
        if (header == nullptr) header = &r;
        break;
      case format::kRecStack: {
        if (r.fields.empty()) break;
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
        uint32_t name = stacks.strings.intern(r.fields[0]);
        if (stacks.group_of.emplace(name, it->second).second) {
          stacks.group_names[it->second].push_back(name);
          ++rep.stacks;
        }
        break;
      }
      case format::kRecConstruct:
        if (r.fields.size() == 2 && seen_construct.insert(r.fields[0]).second) {
          cw.key(r.fields[0]);
          cw.raw_value(r.fields[1]);
          ++rep.constructs;
        }
        break;
      default:
        break;
    }
  }
  cw.end_object();
  out.construct_json = std::move(construct_text);
  out.stack_json = render_stack_json(stacks);

  // dump.json: header members in order with the entries at the "data" slot.
  std::string& dj = out.dump_json;
  dj.reserve(file.size());
  format::PyJsonWriter w(dj, 1, 0);
  w.begin_object();
  auto write_data = [&] {
    w.key("data");
    w.begin_object();
    for (const auto& r : scan.records) {
      if (r.type != format::kRecEntry || r.fields.size() != 2) continue;
      if (!seen_entries.insert(r.fields[0]).second) continue;
      w.key(r.fields[0]);
      w.raw_value(r.fields[1]);
      ++rep.entries;
    }
    w.end_object();
  };
  bool data_written = false;
  if (header != nullptr) {
    for (size_t i = 0; i + 1 < header->fields.size(); i += 2) {
      if (header->fields[i] == "data" && header->fields[i + 1].empty()) {
        write_data();
        data_written = true;
      } else {
        w.key(header->fields[i]);
        w.raw_value(header->fields[i + 1]);
      }
    }
  } else {
    if (!rep.detail.empty()) rep.detail += "; ";
    rep.detail += "no header record (task/level/framework unknown)";
  }
  if (!data_written) write_data();
  w.end_object();
  return out;
}

RecoverReport recover_rank_dir(const std::string& rank_dir) {
  std::string jpath = journal_path(rank_dir);
  RecoverReport rep;
  if (!format::file_exists(jpath)) return rep;
  if (format::file_exists(rank_dir + "/dump.json")) {
    // The writer died after assembling (rename is atomic): the files are complete.
    rep.had_journal = true;
    rep.detail = "dump.json already complete; stale journal removed";
    ::unlink(jpath.c_str());
    return rep;
  }
  AssembledDump a = assemble_journal(jpath);
  // dump.json last: its presence marks the set as complete.
  format::write_file_atomic(rank_dir + "/stack.json", a.stack_json);
  format::write_file_atomic(rank_dir + "/construct.json", a.construct_json);
  format::write_file_atomic(rank_dir + "/dump.json", a.dump_json);
  ::unlink(jpath.c_str());
  return a.report;
}

}  // namespace numprobe
