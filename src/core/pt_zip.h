// The stored-record subset of the zip format that torch.save writes (PyTorchStreamWriter): a
// central directory (zip64 when large) pointing at uncompressed records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace numprobe::pt {

struct ZipRecord {
  std::string name;
  size_t data_begin = 0;  // byte offset of the record's data in the archive
  size_t size = 0;
};

// All records, with data ranges checked to lie inside [0, len). Throws InputError(name) for a
// buffer that is not a zip, a compressed record, or offsets outside the buffer.
std::vector<ZipRecord> read_zip_directory(const uint8_t* buf, size_t len, const std::string& name);

}  // namespace numprobe::pt
