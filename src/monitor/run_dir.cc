#include "monitor/run_dir.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include "base/file_util.h"
#include "numprobe/error.h"

namespace numprobe::monitor {
namespace {

const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// (month, day, hour, minute, second) of a time tag, for ordering; false if it is not one.
bool tag_key(const std::string& tag, std::tuple<int, int, int, int, int>* key) {
  if (tag.size() != 14 || tag[5] != '_' || tag[8] != '-' || tag[11] != '-') return false;
  int month = -1;
  for (int i = 0; i < 12; ++i)
    if (tag.compare(0, 3, kMonths[i]) == 0) month = i;
  int d, h, m, s;
  if (month < 0 || sscanf(tag.c_str() + 3, "%2d_%2d-%2d-%2d", &d, &h, &m, &s) != 4) return false;
  *key = {month, d, h, m, s};
  return true;
}

std::string random_uid8() {
  std::random_device rd;
  char buf[16];
  snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

}  // namespace

std::string run_time_tag(time_t t) {
  const time_t shanghai = t + 8 * 3600;
  tm parts{};
  gmtime_r(&shanghai, &parts);
  char buf[32];
  snprintf(buf, sizeof buf, "%s%02d_%02d-%02d-%02d", kMonths[parts.tm_mon], parts.tm_mday,
           parts.tm_hour, parts.tm_min, parts.tm_sec);
  return buf;
}

bool parse_run_dir_name(const std::string& name, std::string* time_tag, int64_t* rank) {
  const size_t r = name.find("-rank");
  if (r == std::string::npos || r > 20) return false;
  for (size_t i = 0; i < r; ++i) {
    const unsigned char c = name[i];
    if (!(isalnum(c) || c == '_' || c == '-')) return false;
  }
  size_t i = r + 5, digits = 0;
  int64_t v = 0;
  while (i < name.size() && isdigit(static_cast<unsigned char>(name[i])) && digits < 6) {
    v = v * 10 + (name[i++] - '0');
    ++digits;
  }
  if (digits == 0 || digits > 5 || i >= name.size() || name[i] != '-') return false;
  if (time_tag) *time_tag = name.substr(0, r);
  if (rank) *rank = v;
  return true;
}

std::string make_run_dir(const std::string& base, int64_t rank,
                         const std::vector<std::string>& append_output) {
  if (append_output.size() == 2) {
    std::tuple<int, int, int, int, int> lo, hi, k, best_k;
    if (!tag_key(append_output[0], &lo) || !tag_key(append_output[1], &hi))
      throw Error("append_output: time tags must look like 'Dec03_21-34-40'");
    std::string best;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(base, ec)) {
      std::string tag;
      int64_t r;
      const std::string name = e.path().filename().string();
      if (!e.is_directory() || !parse_run_dir_name(name, &tag, &r) || r != rank) continue;
      if (!tag_key(tag, &k) || k < lo || hi < k) continue;
      if (best.empty() || best_k < k || (best_k == k && best < name)) {
        best = name;
        best_k = k;
      }
    }
    if (best.empty())
      throw Error(base + ": append_output: no run directory of rank " + std::to_string(rank) +
                  " between " + append_output[0] + " and " + append_output[1]);
    return base + "/" + best;
  }
  const std::string dir = base + "/" + run_time_tag(time(nullptr)) + "-rank" +
                          std::to_string(rank) + "-" + random_uid8();
  base::make_dirs(dir);
  return dir;
}

}  // namespace numprobe::monitor
