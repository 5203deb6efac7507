// Directories: Megatron trees, sharded safetensors / torch files, .npy trees.
#include <algorithm>
#include <filesystem>
#include <set>

#include "base/json_cursor.h"
#include "base/mapped_file.h"
#include "ckpt/loaders.h"
#include "ckpt/safetensors.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

namespace fs = std::filesystem;

bool has_ext(const fs::path& p, const char* ext) {
  return p.extension() == ext;
}

std::vector<fs::path> files_with(const std::string& dir, const char* ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && has_ext(e.path(), ext)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void load_shard(Checkpoint& c, const fs::path& p) {
  if (has_ext(p, ".safetensors"))
    load_safetensors(c, p.string());
  else
    load_torch_file(c, p.string());
}

// {"metadata": {...}, "weight_map": {"tensor name": "shard file", ...}}: every shard must exist,
// and every tensor the map lists must be in the shard it names.
void load_index(Checkpoint& c, const fs::path& index) {
  const std::string ipath = index.string();
  std::vector<std::pair<std::string, std::string>> weight_map;
  {
    base::MappedFile m(ipath);
    base::JsonCursor j(m.data(), m.size(), ipath, 64);
    if (j.peek() != base::JsonType::kObject) j.fail_schema("index is not a JSON object");
    j.begin_object();
    std::string_view key;
    bool found = false;
    while (j.next_key(key)) {
      if (key != "weight_map") {
        j.skip_value();
        continue;
      }
      found = true;
      if (j.peek() != base::JsonType::kObject) j.fail_schema("weight_map is not an object");
      j.begin_object();
      std::string_view name;
      while (j.next_key(name)) {
        std::string n(name);
        if (j.peek() != base::JsonType::kString)
          j.fail_schema("weight_map value is not a file name");
        weight_map.emplace_back(std::move(n), std::string(j.read_string()));
      }
    }
    j.expect_end();
    if (!found) throw InputError(ipath, "no weight_map in this index");
  }
  std::set<std::string> shards;
  for (const auto& [name, shard] : weight_map) {
    if (shard.find('/') != std::string::npos || shard == ".." || shard.empty())
      throw InputError(ipath, "shard '" + shard + "' is not a file name in this directory");
    shards.insert(shard);
  }
  for (const std::string& s : shards) {
    const fs::path p = index.parent_path() / s;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      throw InputError(ipath, "shard " + s + " is missing from " + index.parent_path().string());
  }
  for (const std::string& s : shards) load_shard(c, index.parent_path() / s);
  std::set<std::pair<std::string, std::string>> held;
  for (const TensorEntry& t : c.tensors())
    held.emplace(t.name, fs::path(c.file_path(t.file)).filename().string());
  for (const auto& [name, shard] : weight_map)
    if (!held.count({name, shard}))
      throw InputError(ipath, "tensor '" + name + "' is not in shard " + shard + " as it says");
}

void load_npy_tree(Checkpoint& c, const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec) && has_ext(it->path(), ".npy")) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    std::string name = fs::relative(p, dir).replace_extension().generic_string();
    load_npy_file(c, p.string(), name);
  }
}

}  // namespace

void load_directory(Checkpoint& c, const std::string& dir) {
  if (is_megatron_tree(dir)) return load_megatron(c, dir);
  std::error_code ec;
  const fs::path rank_file = fs::path(dir) / "model_optim_rng.pt";
  if (fs::is_regular_file(rank_file, ec)) {  // one mp_rank_XX directory
    c.set_kind(dir, "Megatron");
    return load_megatron_rank(c, rank_file.string(), "");
  }
  std::vector<fs::path> indexes;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 11 && n.compare(n.size() - 11, 11, ".index.json") == 0)
      indexes.push_back(e.path());
  }
  std::sort(indexes.begin(), indexes.end());
  if (!indexes.empty()) {
    // model.safetensors.index.json before pytorch_model.bin.index.json when both are there.
    auto st = std::find_if(indexes.begin(), indexes.end(), [](const fs::path& p) {
      return p.filename().string().find("safetensors") != std::string::npos;
    });
    c.set_kind(dir, "sharded checkpoint");
    return load_index(c, st != indexes.end() ? *st : indexes.front());
  }
  const std::vector<fs::path> st = files_with(dir, ".safetensors");
  if (!st.empty()) {
    c.set_kind(dir, "safetensors directory");
    for (const fs::path& p : st) load_safetensors(c, p.string());
    return;
  }
  c.set_kind(dir, "npy directory");
  load_npy_tree(c, dir);
  if (c.tensors().empty())
    throw InputError(dir,
                     "no checkpoint here: no Megatron tree, *.index.json, *.safetensors or "
                     "*.npy files");
}

}  // namespace numprobe::ckpt
