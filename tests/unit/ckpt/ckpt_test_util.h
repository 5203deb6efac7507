// Builders shared by the checkpoint tests: safetensors images and seed paths.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

namespace numprobe::ckpt::testutil {

inline std::string seed(const std::string& rel) {
  return std::string(NUMPROBE_SOURCE_DIR) + "/tests/fuzz/seeds/" + rel;
}

// A safetensors image: 8-byte little-endian header length, the header, the data.
inline std::string safetensors_image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[static_cast<size_t>(k)] = static_cast<char>((n >> (8 * k)) & 255);
  return out + header + data;
}

inline std::string floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  memcpy(&s[0], v.data(), s.size());
  return s;
}

// {"name": F32 [n] tensor, ...} with consecutive offsets.
inline std::string f32_safetensors(
    const std::vector<std::pair<std::string, std::vector<float>>>& ts) {
  std::string header = "{", data;
  for (const auto& [name, v] : ts) {
    if (header.size() > 1) header += ",";
    header += "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(v.size()) +
              "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + v.size() * 4) + "]}";
    data += floats(v);
  }
  return safetensors_image(header + "}", data);
}

}  // namespace numprobe::ckpt::testutil
