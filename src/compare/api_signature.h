// Positional parameters of the torch APIs whose Python code re-spells arguments before torch
// dispatches them (torch.nn.functional's layer_norm, batch_norm, dropout, ...): one run may record
// `layer_norm(x, s, w, b, 1e-5)` (msprobe, numprobe's API sites) and another
// `layer_norm(x, s, weight=w, bias=b, eps=1e-5)` (the same call seen through torch's dispatch).
// Table: api_signatures.inc, generated from torch's own signatures by
// scripts/gen_api_signatures.py.
#pragma once

#include <string>
#include <string_view>

#include "numprobe/compare/rows.h"

namespace numprobe {

// "Functional.layer_norm" for a row of Functional.layer_norm.0.forward; "" for rows of module,
// backward and other entries.
std::string forward_api_of(const CompareRow& row);

// The other spelling of a forward input row's suffix for `api` ("Functional.layer_norm"):
// "input.3" <-> "input.weight", nested parts kept ("input.3.0" <-> "input.weight.0"). "" when the
// API or the parameter is unknown, or the suffix is not an input.
std::string other_input_spelling(std::string_view api, std::string_view suffix);

}  // namespace numprobe
