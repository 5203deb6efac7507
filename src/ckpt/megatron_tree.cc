// Megatron-LM checkpoint trees: <root>/latest_checkpointed_iteration.txt names the iteration
// ("release" or a number), whose directory iter_XXXXXXX holds one mp_rank_XX[_YYY[_ZZZ]] directory
// per tensor (pipeline, expert) parallel rank with model_optim_rng.pt: a pickle of
// {"args": Namespace, "model": state dict (or "model0", "model1", ... with virtual pipeline
// stages), "optimizer": ..., "rng_state": [...]}. Only the model weights are compared; msprobe
// names them "<key>.<virtual stage>".
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "base/mapped_file.h"
#include "ckpt/loaders.h"
#include "numprobe/error.h"

namespace numprobe::ckpt {
namespace {

namespace fs = std::filesystem;

const char kTracker[] = "latest_checkpointed_iteration.txt";
const char kRankFile[] = "model_optim_rng.pt";

std::string trim(std::string s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t k = 0;
  while (k < s.size() && isspace(static_cast<unsigned char>(s[k]))) ++k;
  return s.substr(k);
}

// The directory holding the mp_rank_* directories.
std::string iteration_dir(const std::string& dir) {
  const fs::path tracker = fs::path(dir) / kTracker;
  std::error_code ec;
  if (!fs::exists(tracker, ec)) return dir;
  std::string text;
  {
    base::MappedFile m(tracker.string());
    text = trim(std::string(m.data(), m.size()));
  }
  std::string sub;
  if (text == "release") {
    sub = "release";
  } else {
    if (text.empty() || text.size() > 12 ||
        !std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      throw InputError(tracker.string(), "expected an iteration number or 'release', found '" +
                                             text.substr(0, 40) + "'");
    char name[32];
    snprintf(name, sizeof name, "iter_%07llu", std::stoull(text));
    sub = name;
  }
  const fs::path it = fs::path(dir) / sub;
  if (!fs::is_directory(it, ec))
    throw InputError(tracker.string(),
                     "names iteration directory " + it.string() + ", which does not exist");
  return it.string();
}

std::vector<std::string> rank_dirs(const std::string& dir) {
  static const std::regex kRank("mp_rank_[0-9]{2}(_[0-9]{3}){0,2}");
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && std::regex_match(e.path().filename().string(), kRank))
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool is_megatron_tree(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / kTracker, ec) || !rank_dirs(dir).empty();
}

void load_megatron_rank(Checkpoint& c, const std::string& file, const std::string& prefix) {
  const size_t f = c.add_file(file);
  const base::MappedFile& m = c.file(f);
  const PtStateDict sd =
      parse_pt_state_dict(reinterpret_cast<const uint8_t*>(m.data()), m.size(), file);
  bool has_model = false;
  for (const PtNamedTensor& t : sd.tensors)
    if (t.name.rfind("model.", 0) == 0) has_model = true;
  if (has_model) {
    add_pt_tensors(c, f, sd, "model", prefix, ".0");
  } else {
    for (int stage = 0;; ++stage) {
      const std::string key = "model" + std::to_string(stage);
      bool found = false;
      for (const PtNamedTensor& t : sd.tensors)
        if (t.name.rfind(key + ".", 0) == 0) found = true;
      if (!found) break;
      has_model = true;
      add_pt_tensors(c, f, sd, key, prefix, "." + std::to_string(stage));
    }
  }
  if (!has_model) throw InputError(file, "no 'model' (or 'model0') weights in this Megatron file");
  for (const PtPlaceholder& p : sd.placeholders) c.add_placeholder(prefix + p.name, p.klass);
}

void load_megatron(Checkpoint& c, const std::string& dir) {
  c.set_kind(dir, "Megatron");
  const std::string it = iteration_dir(dir);
  const std::vector<std::string> ranks = rank_dirs(it);
  if (ranks.empty()) throw InputError(it, "no mp_rank_XX directories in this Megatron checkpoint");
  for (const std::string& r : ranks) {
    const std::string file = (fs::path(it) / r / kRankFile).string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      throw InputError(file,
                       "missing: every mp_rank directory needs its " + std::string(kRankFile));
    // One rank: msprobe's names. Several: the rank directory first (TP shards are not joined).
    load_megatron_rank(c, file, ranks.size() > 1 ? r + "/" : "");
  }
}

}  // namespace numprobe::ckpt
