// How each kind of checkpoint becomes Checkpoint entries (checkpoint.cc picks by path).
#pragma once

#include <string>

#include "ckpt/checkpoint.h"

namespace numprobe::ckpt {

// A torch.save file (zip archive): every tensor under its dotted key path; a file that is not a zip
// but a safetensors image is read as one.
void load_torch_file(Checkpoint& c, const std::string& path);
// The tensors of a parsed torch state dict whose key path starts with `subtree` (all when empty),
// renamed prefix + (path without subtree) + suffix.
void add_pt_tensors(Checkpoint& c, size_t file, const PtStateDict& sd, const std::string& subtree,
                    const std::string& prefix, const std::string& suffix);
// One .npy file as one tensor called name.
void load_npy_file(Checkpoint& c, const std::string& path, const std::string& name);
// A Megatron tree: a checkpoint root (latest_checkpointed_iteration.txt), an iter_XXXXXXX or
// release directory, holding mp_rank_XX[_YYY[_ZZZ]]/model_optim_rng.pt.
bool is_megatron_tree(const std::string& dir);
void load_megatron(Checkpoint& c, const std::string& dir);
// One rank's model_optim_rng.pt (its "model" or "model<stage>" weights), names prefixed.
void load_megatron_rank(Checkpoint& c, const std::string& file, const std::string& prefix);
// Megatron, safetensors shards (index json or not), torch .bin shards with an index, or .npy
// files (searched recursively).
void load_directory(Checkpoint& c, const std::string& dir);

}  // namespace numprobe::ckpt
