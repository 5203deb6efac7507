#include "monitor/protobuf_wire.h"

#include <cstring>

#include "numprobe/error.h"

namespace numprobe::monitor::pb {
namespace {

void put_le(std::string& out, uint64_t bits, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
}

}  // namespace

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void put_int64(std::string& out, uint32_t field, int64_t v) {
  put_key(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(v));
}

void put_double(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_key(out, field, kI64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_key(out, field, kI32);
  put_le(out, bits, 4);
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLen);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

double Field::as_double() const {
  double d;
  std::memcpy(&d, &varint, 8);
  return d;
}

float Field::as_float() const {
  const uint32_t bits = static_cast<uint32_t>(varint);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint64_t Reader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) throw InputError(source_, "protobuf varint runs past the message");
    const auto b = static_cast<unsigned char>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  throw InputError(source_, "protobuf varint longer than 10 bytes");
}

bool Reader::next(Field& f) {
  if (pos_ >= data_.size()) return false;
  const uint64_t key = varint();
  f.number = static_cast<uint32_t>(key >> 3);
  f.type = static_cast<WireType>(key & 7);
  f.bytes = {};
  f.varint = 0;
  auto take = [&](uint64_t n) {
    if (n > data_.size() - pos_) throw InputError(source_, "protobuf field runs past the message");
    const std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  };
  switch (f.type) {
    case kVarint:
      f.varint = varint();
      break;
    case kI64:
    case kI32: {
      const std::string_view s = take(f.type == kI64 ? 8 : 4);
      for (size_t i = 0; i < s.size(); ++i)
        f.varint |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
      break;
    }
    case kLen:
      f.bytes = take(varint());
      break;
    default:
      throw InputError(source_, "protobuf wire type " + std::to_string(key & 7) + " not supported");
  }
  return true;
}

}  // namespace numprobe::monitor::pb
