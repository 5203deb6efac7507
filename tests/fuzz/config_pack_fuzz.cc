// libFuzzer target for config-check's readers: the pack zip (stored and deflated members, sizes,
// CRCs), then every check over the members it accepted (their JSON, the step/rank/rank member
// names, the pip text), the pack compared with itself. Bad input must be an InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config_check/config_compare.h"
#include "config_check/pack_zip.h"
#include "numprobe/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace numprobe::configcheck;
  try {
    auto members =
        read_zip_members(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>");
    const Pack pack("<fuzz>", std::move(members));
    const auto tables = compare_packs(pack, pack, "pytorch");
    for (const auto& t : tables)
      if (t.status == "skipped" && !t.rows.empty()) __builtin_trap();
  } catch (const numprobe::InputError&) {
  }
  return 0;
}
