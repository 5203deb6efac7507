// TensorBoard event files, as torch.utils.tensorboard's SummaryWriter writes scalars.
//
// File format (tensorflow/core/util/event.proto, tensorflow/core/lib/io/record_writer.cc):
//   name:    events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.0
//   records: TFRecord framing, repeated to the end of the file:
//              uint64 length (little endian)
//              uint32 masked CRC-32C of those 8 length bytes
//              length bytes of data: one serialized Event
//              uint32 masked CRC-32C of the data
//            (masked: ((crc >> 15) | (crc << 17)) + 0xa282ead8, crc32c.h)
//   Event:   wall_time (1, double, seconds since the epoch), step (2, int64),
//            file_version (3, string; the first record only: "brain.Event:2"),
//            summary (5, Summary)
//   Summary: value (1, repeated Value)
//   Value:   tag (1, string), simple_value (2, float)
// Each scalar is one Event holding one Value. TensorBoard reads a file that ends in a partial
// record up to that record, so flushing after each step keeps every finished step readable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace numprobe::monitor {

// One framed record, ready to append to an event file.
std::string tf_record(std::string_view data);
std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
std::string file_version_event(double wall_time);

class TfEventWriter {
 public:
  // Creates the event file in dir (which must exist) and writes the file_version record.
  explicit TfEventWriter(const std::string& dir);
  ~TfEventWriter();
  TfEventWriter(const TfEventWriter&) = delete;
  TfEventWriter& operator=(const TfEventWriter&) = delete;

  const std::string& path() const { return path_; }
  void add_scalar(std::string_view tag, int64_t step, double value, double wall_time);
  void flush();  // throws numprobe::Error naming the file on a write error
  void close();

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

struct ScalarEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  float value = 0;
};

struct EventFile {
  std::string file_version;  // from the first record
  std::vector<ScalarEvent> scalars;
};

// Reads every record; a bad CRC, a truncated record or malformed protobuf is an InputError naming
// the file and the record's byte offset. Events without a simple_value are skipped.
EventFile parse_event_file(std::string_view bytes, const std::string& source);
EventFile read_event_file(const std::string& path);

}  // namespace numprobe::monitor
