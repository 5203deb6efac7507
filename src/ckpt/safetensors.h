// safetensors files read natively: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the raw little-endian bytes. Every claim of the header is checked against the others and
// against the file size before any byte is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"

namespace numprobe::ckpt {

// The tensors of an in-memory safetensors image, with begin as an offset into buf. Throws
// InputError(name) for a short file, a header length past the end, invalid JSON, an unknown
// dtype, a shape whose byte size differs from its data_offsets, offsets outside the data, tensors
// that overlap or leave holes, or duplicate names. file is stored in each entry.
std::vector<TensorEntry> parse_safetensors(const uint8_t* buf, size_t len, const std::string& name,
                                           size_t file = 0);

// Adds a safetensors file's tensors to ckpt.
void load_safetensors(Checkpoint& ckpt, const std::string& path);

}  // namespace numprobe::ckpt
