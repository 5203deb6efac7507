#include "ckpt/safetensors.h"

#include <algorithm>
#include <set>

#include "base/json_cursor.h"
#include "base/mapped_file.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

// A header longer than this is not a checkpoint's (the safetensors library caps it at 100 MB).
constexpr uint64_t kMaxHeader = 100u << 20;

struct StDtype {
  const char* name;
  size_t size;
  DType dtype;  // kUnknown: readable, not comparable
};
constexpr StDtype kDtypes[] = {
    {"F64", 8, DType::kF64},
    {"F32", 4, DType::kF32},
    {"F16", 2, DType::kF16},
    {"BF16", 2, DType::kBF16},
    {"F8_E4M3", 1, DType::kF8E4M3FN},
    {"F8_E5M2", 1, DType::kF8E5M2},
    {"I64", 8, DType::kI64},
    {"I32", 4, DType::kI32},
    {"I16", 2, DType::kI16},
    {"I8", 1, DType::kI8},
    {"U8", 1, DType::kU8},
    {"BOOL", 1, DType::kBool},
    {"U16", 2, DType::kUnknown},
    {"U32", 4, DType::kUnknown},
    {"U64", 8, DType::kUnknown},
    {"C64", 8, DType::kUnknown},
    {"C128", 16, DType::kUnknown},
};

const StDtype* find_dtype(std::string_view s) {
  for (const auto& d : kDtypes)
    if (s == d.name) return &d;
  return nullptr;
}

uint64_t read_size(base::JsonCursor& j, const char* what) {
  const size_t at = j.offset();
  if (j.peek() != base::JsonType::kNumber)
    j.fail_schema_at(at, std::string(what) + " is not a number");
  const base::JsonNumber n = j.read_number();
  if (!n.is_int || n.int_value < 0)
    j.fail_schema_at(at, std::string(what) + " is not a non-negative integer");
  return static_cast<uint64_t>(n.int_value);
}

struct Parsed {
  TensorEntry entry;
  uint64_t end = 0;  // data_offsets[1]
  size_t elem = 0;
};

Parsed parse_tensor(base::JsonCursor& j, std::string_view tensor_name) {
  Parsed p;
  p.entry.name = std::string(tensor_name);
  bool has_dtype = false, has_shape = false, has_offsets = false;
  uint64_t begin = 0;
  if (j.peek() != base::JsonType::kObject)
    j.fail_schema("tensor '" + p.entry.name + "' is not an object");
  j.begin_object();
  std::string_view key;
  while (j.next_key(key)) {
    if (key == "dtype") {
      if (j.peek() != base::JsonType::kString) j.fail_schema("dtype is not a string");
      const std::string_view d = j.read_string();
      const StDtype* t = find_dtype(d);
      if (!t)
        j.fail_schema("tensor '" + p.entry.name + "': unknown dtype '" + std::string(d) + "'");
      p.entry.dtype = t->dtype;
      p.entry.dtype_text = t->name;
      p.elem = t->size;
      has_dtype = true;
    } else if (key == "shape") {
      if (j.peek() != base::JsonType::kArray) j.fail_schema("shape is not a list");
      j.begin_array();
      while (j.next_item()) {
        if (p.entry.shape.size() >= 64) j.fail_schema("shape has more than 64 dimensions");
        p.entry.shape.push_back(static_cast<int64_t>(read_size(j, "a shape dimension")));
      }
      has_shape = true;
    } else if (key == "data_offsets") {
      if (j.peek() != base::JsonType::kArray) j.fail_schema("data_offsets is not a list");
      j.begin_array();
      int n = 0;
      while (j.next_item()) {
        const uint64_t v = read_size(j, "a data offset");
        if (n == 0) begin = v;
        if (n == 1) p.end = v;
        ++n;
      }
      if (n != 2)
        j.fail_schema("tensor '" + p.entry.name + "': data_offsets must hold two numbers");
      has_offsets = true;
    } else {
      j.skip_value();
    }
  }
  if (!has_dtype || !has_shape || !has_offsets)
    j.fail_schema("tensor '" + p.entry.name + "' lacks dtype, shape or data_offsets");
  if (begin > p.end) j.fail_schema("tensor '" + p.entry.name + "': data_offsets run backwards");
  p.entry.begin = static_cast<size_t>(begin);
  return p;
}

}  // namespace

std::vector<TensorEntry> parse_safetensors(const uint8_t* buf, size_t len, const std::string& name,
                                           size_t file) {
  if (len < 8) throw InputError(name, "safetensors: shorter than its 8-byte header length");
  uint64_t header = 0;
  for (int k = 7; k >= 0; --k) header = (header << 8) | buf[k];
  if (header > kMaxHeader)
    throw InputError(name, "safetensors: header length " + std::to_string(header) +
                               " exceeds the 100 MB limit (not a safetensors file?)");
  if (header > len - 8)
    throw InputError(name, "safetensors: header length " + std::to_string(header) +
                               " runs past the end of the file (" + std::to_string(len) +
                               " bytes): truncated?");
  const size_t data_begin = 8 + static_cast<size_t>(header);
  const size_t data_len = len - data_begin;
  base::JsonCursor j(reinterpret_cast<const char*>(buf + 8), static_cast<size_t>(header), name, 64);
  if (j.peek() != base::JsonType::kObject) j.fail_schema("safetensors header is not a JSON object");
  std::vector<Parsed> parsed;
  std::set<std::string> names;
  j.begin_object();
  std::string_view key;
  while (j.next_key(key)) {
    if (key == "__metadata__") {
      j.skip_value();
      continue;
    }
    std::string tensor_name(key);
    if (!names.insert(tensor_name).second)
      j.fail_schema("tensor '" + tensor_name + "' is listed twice");
    parsed.push_back(parse_tensor(j, tensor_name));
  }
  j.expect_end();
  // Sizes: the shape's bytes must be exactly what data_offsets span.
  for (Parsed& p : parsed) {
    uint64_t count = 1;
    for (int64_t d : p.entry.shape) {
      const auto u = static_cast<uint64_t>(d);
      if (u != 0 && count > (uint64_t{1} << 62) / u)
        throw InputError(name, "safetensors: tensor '" + p.entry.name + "': shape overflows");
      count *= u;
    }
    const uint64_t span = p.end - p.entry.begin;
    if (count > (uint64_t{1} << 62) / p.elem || count * p.elem != span)
      throw InputError(name, "safetensors: tensor '" + p.entry.name + "': shape and dtype " +
                                 p.entry.dtype_text + " need " + std::to_string(count * p.elem) +
                                 " bytes, data_offsets span " + std::to_string(span));
    p.entry.count = static_cast<size_t>(count);
  }
  // Layout: the tensors tile the data section, in some order, with no gap and no overlap.
  std::sort(parsed.begin(), parsed.end(),
            [](const Parsed& a, const Parsed& b) { return a.entry.begin < b.entry.begin; });
  uint64_t at = 0;
  for (const Parsed& p : parsed) {
    if (p.entry.begin != at)
      throw InputError(
          name,
          "safetensors: tensor '" + p.entry.name + "' starts at data offset " +
              std::to_string(p.entry.begin) + ", expected " + std::to_string(at) +
              (p.entry.begin < at ? " (it overlaps the tensor before)" : " (a gap in the data)"));
    at = p.end;
  }
  if (at != data_len)
    throw InputError(name, "safetensors: the header describes " + std::to_string(at) +
                               " data bytes, the file holds " + std::to_string(data_len) +
                               (at > data_len ? " (truncated?)" : " (trailing bytes)"));
  std::vector<TensorEntry> out;
  out.reserve(parsed.size());
  for (Parsed& p : parsed) {
    p.entry.begin += data_begin;
    p.entry.file = file;
    out.push_back(std::move(p.entry));
  }
  return out;
}

void load_safetensors(Checkpoint& ckpt, const std::string& path) {
  const size_t f = ckpt.add_file(path);
  const base::MappedFile& m = ckpt.file(f);
  for (TensorEntry& t :
       parse_safetensors(reinterpret_cast<const uint8_t*>(m.data()), m.size(), path, f))
    ckpt.add_tensor(std::move(t));
}

}  // namespace numprobe::ckpt
