#include "monitor/tb_events.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/mapped_file.h"
#include "monitor/crc32c.h"
#include "monitor/protobuf_wire.h"
#include "numprobe/error.h"

namespace numprobe::monitor {
namespace {

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint64_t get_le(std::string_view s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

void parse_summary(std::string_view bytes, const std::string& source, double wall_time,
                   int64_t step, std::vector<ScalarEvent>& out) {
  pb::Reader summary(bytes, source);
  pb::Field f;
  while (summary.next(f)) {
    if (f.number != 1 || f.type != pb::kLen) continue;
    pb::Reader value(f.bytes, source);
    pb::Field v;
    ScalarEvent e;
    e.wall_time = wall_time;
    e.step = step;
    bool has_value = false;
    while (value.next(v)) {
      if (v.number == 1 && v.type == pb::kLen) e.tag.assign(v.bytes);
      if (v.number == 2 && v.type == pb::kI32) {
        e.value = v.as_float();
        has_value = true;
      }
    }
    if (has_value) out.push_back(std::move(e));
  }
}

}  // namespace

std::string tf_record(std::string_view data) {
  std::string out;
  std::string len;
  put_le(len, data.size(), 8);
  out += len;
  put_le(out, masked_crc32c(len), 4);
  out.append(data.data(), data.size());
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string v;
  pb::put_bytes(v, 1, tag);
  pb::put_float(v, 2, value);
  std::string summary;
  pb::put_bytes(summary, 1, v);
  std::string event;
  pb::put_double(event, 1, wall_time);
  pb::put_int64(event, 2, step);
  pb::put_bytes(event, 5, summary);
  return event;
}

std::string file_version_event(double wall_time) {
  std::string event;
  pb::put_double(event, 1, wall_time);
  pb::put_bytes(event, 3, "brain.Event:2");
  return event;
}

TfEventWriter::TfEventWriter(const std::string& dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  char name[400];
  snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d.0",
           static_cast<long long>(time(nullptr)), host, static_cast<int>(getpid()));
  path_ = dir + "/" + name;
  f_ = fopen(path_.c_str(), "wb");
  if (!f_) throw InputError(path_, std::string("cannot create: ") + strerror(errno));
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::string rec = tf_record(file_version_event(ts.tv_sec + ts.tv_nsec * 1e-9));
  fwrite(rec.data(), 1, rec.size(), f_);
  flush();
}

TfEventWriter::~TfEventWriter() {
  if (f_) fclose(f_);
}

void TfEventWriter::add_scalar(std::string_view tag, int64_t step, double value, double wall_time) {
  if (!f_) throw Error(path_ + ": event file is closed");
  const std::string rec = tf_record(scalar_event(wall_time, step, tag, static_cast<float>(value)));
  if (fwrite(rec.data(), 1, rec.size(), f_) != rec.size())
    throw InputError(path_, std::string("write error: ") + strerror(errno));
}

void TfEventWriter::flush() {
  if (f_ && fflush(f_) != 0)
    throw InputError(path_, std::string("write error: ") + strerror(errno));
}

void TfEventWriter::close() {
  if (!f_) return;
  const bool bad = fflush(f_) != 0;
  fclose(f_);
  f_ = nullptr;
  if (bad) throw InputError(path_, "write error on close");
}

EventFile parse_event_file(std::string_view bytes, const std::string& source) {
  EventFile out;
  size_t pos = 0;
  bool first = true;
  while (pos < bytes.size()) {
    const int64_t at = static_cast<int64_t>(pos);
    if (bytes.size() - pos < 12) throw InputError(source, "truncated record header", at);
    const uint64_t len = get_le(bytes, pos, 8);
    if (static_cast<uint32_t>(get_le(bytes, pos + 8, 4)) != masked_crc32c(bytes.substr(pos, 8)))
      throw InputError(source, "record length CRC mismatch", at);
    pos += 12;
    if (len > bytes.size() - pos || bytes.size() - pos - len < 4)
      throw InputError(source, "truncated record", at);
    const std::string_view data = bytes.substr(pos, len);
    if (static_cast<uint32_t>(get_le(bytes, pos + len, 4)) != masked_crc32c(data))
      throw InputError(source, "record data CRC mismatch", at);
    pos += len + 4;

    pb::Reader event(data, source);
    pb::Field f;
    double wall_time = 0;
    int64_t step = 0;
    std::string_view summary;
    while (event.next(f)) {
      if (f.number == 1 && f.type == pb::kI64) wall_time = f.as_double();
      if (f.number == 2 && f.type == pb::kVarint) step = static_cast<int64_t>(f.varint);
      if (f.number == 3 && f.type == pb::kLen && first) out.file_version.assign(f.bytes);
      if (f.number == 5 && f.type == pb::kLen) summary = f.bytes;
    }
    first = false;
    if (!summary.empty()) parse_summary(summary, source, wall_time, step, out.scalars);
  }
  return out;
}

EventFile read_event_file(const std::string& path) {
  const base::MappedFile file(path);
  return parse_event_file(std::string_view(file.data(), file.size()), path);
}

}  // namespace numprobe::monitor
