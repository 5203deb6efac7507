// User mappings for compare: msprobe's -dm / -cm / -am / -lm (docs/compare.md, "Mappings"), for
// runs whose names differ (MindSpore against PyTorch, renamed layers). They pair entries or rows
// before the name-based stages of compare/pair.h; their pairs carry MatchKind::kMapped.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numprobe/compare/pair.h"
#include "numprobe/compare/rows.h"
#include "numprobe/dump_tree.h"

namespace numprobe {

// (target name, golden name) in file or target order. "N/A" as golden name: no counterpart.
using NamePairs = std::vector<std::pair<std::string, std::string>>;

// One item of an -am yaml: the target API `ms_api` ("Functional.flash_attention_score", prefix and
// name as in dump names) is the golden API `pt_api`; argument / output / parameter i of the list
// on the target side is the one at the same list position on the golden side. Rows of a mapped
// call that no list names stay unpaired (as in msprobe).
struct ApiArgMapping {
  std::string ms_api, pt_api;
  std::vector<std::string> ms_args, pt_args, ms_outputs, pt_outputs, ms_parameters, pt_parameters;
  int line = 0;  // where the item starts in its file
};

// One -lm rule: under a layer whose class is `type` ("TopLayer" for the root), the child scope
// path `from` on the target side ("reduce_from_mp_region.all_reduce": one or more scope names) is
// `to` on the golden side.
struct LayerRule {
  std::string type, from, to;
};

struct CompareMappings {
  NamePairs data;                   // -dm: target row -> golden row
  bool cell = false;                // -cm: Cell.* entries compare as Module.*
  NamePairs cells;                  //      "{cell path}.{Class}" -> "{module path}.{Class}"
  bool api = false;                 // -am: built-in MindSpore -> PyTorch API names
  std::vector<ApiArgMapping> apis;  //      plus the user's argument mappings
  bool layer = false;               // -lm: pair by layer scope (decides every target entry)
  std::vector<LayerRule> layers;    //      scope renames
  bool any() const { return !data.empty() || cell || api || layer; }
};

// The files, each a strict YAML subset (docs/format.md, "Mapping files"). Throw InputError
// "<name>: line L: <what>" for malformed YAML or content of the wrong shape.
NamePairs parse_data_mapping(std::string_view text, const std::string& name);
NamePairs parse_cell_mapping(std::string_view text, const std::string& name);
std::vector<ApiArgMapping> parse_api_mapping(std::string_view text, const std::string& name);
std::vector<LayerRule> parse_layer_mapping(std::string_view text, const std::string& name);

// The command line's mapping options. data_mapping "" = off; the others: nullopt = off, "" = on
// without a file.
struct MappingOptions {
  std::string data_mapping;
  std::optional<std::string> cell_mapping, api_mapping, layer_mapping;
  // Takes each option this one leaves unset from `other` (command-line flags win over the ones a
  // compare.json names).
  void fill_unset_from(const MappingOptions& other) {
    if (data_mapping.empty()) data_mapping = other.data_mapping;
    if (!cell_mapping) cell_mapping = other.cell_mapping;
    if (!api_mapping) api_mapping = other.api_mapping;
    if (!layer_mapping) layer_mapping = other.layer_mapping;
  }
};
// Reads and checks the files named. Throws InputError for unreadable or malformed files and Error
// for combinations that cannot be honoured (-lm with another mapping).
CompareMappings load_compare_mappings(const MappingOptions& o);

// The compiled-in MindSpore -> PyTorch API name ("Mint.cos" -> "Torch.cos", "Functional.add" ->
// "Torch.add"), or "" where the PyTorch API carries the same name or none is known.
std::string builtin_pt_api(std::string_view ms_api);

// msprobe's layer mapping. Every target entry gets a scope: its module path (from its own name for
// Cell/Module entries, from construct.json for APIs, "TopLayer" without a parent), then for APIs
// the innermost framework function that called it (from stack.json; none without one), then its
// own name. Target scopes are renamed by `rules` walking down from the root, each step looking up
// the class of the layer it leaves. An entry pairs with the golden entry that has the same scope,
// the same direction and the same position among that scope's entries of that direction.
// Returns, in target order, every target entry with its golden entry or "N/A".
NamePairs layer_mapping_entries(const RankDump& target, const RankDump& golden,
                                const std::vector<LayerRule>& rules);

// The row-level form of an entry mapping (what msprobe writes as data_mapping.yaml): each target
// row of a mapped entry with the golden row of the same suffix, or "N/A".
NamePairs data_mapping_of(const NamePairs& entries, const DumpFile& target, const DumpFile& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows);

// What -lm generates, as msprobe writes it: api_mapping (entries) and data_mapping (rows).
struct GeneratedMappings {
  NamePairs api, data;
};

// The pairings `m` fixes for one pair of dumps, in the order msprobe gives them precedence:
// -lm alone decides every entry; otherwise -am / -cm rename entries (a user -am item also
// remaps argument rows), then -dm rows override. Fills `generated` for -lm.
MappingPlan plan_mappings(const CompareMappings& m, const RankDump& target, const RankDump& golden,
                          const std::vector<CompareRow>& target_rows,
                          const std::vector<CompareRow>& golden_rows,
                          GeneratedMappings* generated = nullptr);

// "target: golden" lines, names quoted where YAML needs it; reads back with parse_data_mapping.
std::string render_mapping_yaml(const NamePairs& m);

}  // namespace numprobe
