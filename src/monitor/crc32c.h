// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of TFRecord framing.
#pragma once

#include <cstdint>
#include <string_view>

namespace numprobe::monitor {

uint32_t crc32c(std::string_view bytes);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so a CRC stored inside
// CRC-checked data does not checksum to a fixed value.
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace numprobe::monitor
