// The protocol buffers wire format, by hand, for the few TensorBoard messages the monitor writes
// and reads (no protoc, no libprotobuf).
//
// Spec (https://protobuf.dev/programming-guides/encoding/): a message is a sequence of fields,
// each a key varint (field_number << 3 | wire_type) followed by its payload:
//   wire type 0 VARINT: base-128 varint, 7 bits per byte, least significant group first, high bit
//                       set on every byte but the last (int64 negatives take 10 bytes);
//   wire type 1 I64:    8 bytes little endian (double, fixed64);
//   wire type 2 LEN:    a varint byte count, then the bytes (string, bytes, sub-message);
//   wire type 5 I32:    4 bytes little endian (float, fixed32).
// Wire types 3 and 4 (groups) are obsolete; the reader refuses them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace numprobe::monitor::pb {

enum WireType : uint32_t { kVarint = 0, kI64 = 1, kLen = 2, kI32 = 5 };

void put_varint(std::string& out, uint64_t v);
void put_key(std::string& out, uint32_t field, WireType type);
void put_int64(std::string& out, uint32_t field, int64_t v);  // VARINT, two's complement
void put_double(std::string& out, uint32_t field, double v);  // I64
void put_float(std::string& out, uint32_t field, float v);    // I32
void put_bytes(std::string& out, uint32_t field, std::string_view bytes);  // LEN

// One field read from a message.
struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t varint = 0;     // kVarint; the raw bits for kI64 / kI32
  std::string_view bytes;  // kLen
  double as_double() const;
  float as_float() const;
};

// Reads the fields of one message in order. next() returns false at the end; a truncated or
// malformed field throws numprobe::InputError naming `source`.
class Reader {
 public:
  Reader(std::string_view data, std::string source) : data_(data), source_(std::move(source)) {}
  bool next(Field& f);

 private:
  uint64_t varint();
  std::string_view data_;
  size_t pos_ = 0;
  std::string source_;
};

}  // namespace numprobe::monitor::pb
