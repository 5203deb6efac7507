// Fuzzes the mapping-file readers of `numprobe compare` (-dm/-cm/-am/-lm, the strict YAML subset
// under them): any input parses or throws numprobe::Error naming the file; what parses as a data
// mapping writes back and reads back unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compare/yaml_subset.h"
#include "numprobe/compare/mapping.h"
#include "numprobe/error.h"

namespace {

template <typename F>
void attempt(F&& f) {
  try {
    f();
  } catch (const numprobe::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attempt([&] { numprobe::compare_yaml::parse(text, "fuzz.yaml"); });
  attempt([&] {
    const numprobe::NamePairs m = numprobe::parse_data_mapping(text, "fuzz-dm.yaml");
    const numprobe::NamePairs back =
        numprobe::parse_data_mapping(numprobe::render_mapping_yaml(m), "fuzz-rt.yaml");
    if (back != m) __builtin_trap();
  });
  attempt([&] { numprobe::parse_cell_mapping(text, "fuzz-cm.yaml"); });
  attempt([&] {
    for (const auto& a : numprobe::parse_api_mapping(text, "fuzz-am.yaml")) {
      if (a.ms_api.empty() || a.pt_api.empty() || a.ms_args.size() != a.pt_args.size())
        __builtin_trap();
    }
  });
  attempt([&] {
    for (const auto& r : numprobe::parse_layer_mapping(text, "fuzz-lm.yaml")) {
      if (r.from.empty() || r.to.empty() || r.type == "Cell") __builtin_trap();
    }
  });
  return 0;
}
