// Pairing inside module instances (pair.h, EntryScopes): the stage of pair_entries that pairs API
// entries within the module instance paired with their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "numprobe/compare/pair.h"

namespace numprobe {

// "Module.fc.Linear.parameters_grad" for Module.fc.Linear.parameters_grad.3: the op and direction
// without the call counter (the name itself when it has none).
std::string op_key(std::string_view name);

// Per entry: the golden entry index of the innermost enclosing module that is paired (for a golden
// entry: its own innermost paired enclosing module), -1 at the top. Two entries with the same key
// sit inside the same pair of module instances. `p` holds the module pairs already made; `used`
// marks the golden entries paired so far.
struct ScopeKeys {
  std::vector<int64_t> target, golden;
};
ScopeKeys scope_keys(const EntryScopes& s, const EntryPairing& p, const std::vector<bool>& used);

// Pairs the open API entries (`open[i]`) inside each pair of module instances: for every op key
// (op and direction, `target_keys`/`golden_keys`), the calls inside the target module with those
// inside the golden one whose call counter differs by the shift that lines up most of them (0 when
// nothing shifted), the rest in call order. `target_names`: the target's names as the golden side
// would spell them (a mapping's rename). kExact when the names agree, else kRenumbered.
void pair_within_modules(const DumpFile& target, const DumpFile& golden, const ScopeKeys& keys,
                         const std::vector<std::string>& target_keys,
                         const std::vector<std::string>& golden_keys,
                         const std::vector<std::string_view>& target_names,
                         const std::vector<bool>& open, EntryPairing& p, std::vector<bool>& used);

// Pairs each open API backward entry with the golden backward of the golden forward its forward
// paired with (a backward entry carries its forward's counter, in msprobe as in numprobe).
void pair_backward_by_forward(const DumpFile& target, const DumpFile& golden, EntryPairing& p,
                              std::vector<bool>& used, const std::vector<bool>& closed);

}  // namespace numprobe
