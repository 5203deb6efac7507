// ckpt-compare's output files: msprobe's JSON {param: {l2, cos, numel, shape}} with numprobe's
// fields added, and the same as CSV.
#pragma once

#include <string>

#include "ckpt/ckpt_compare.h"

namespace numprobe::ckpt {

// {"param": {"l2", "cos", "numel", "shape", "max_abs_err", "max_rel_err", "dtype", "status"
// [, "reason"] [, "only_in"]}, ...} in result order (worst first), Python json.dump layout with
// indent 4. Where msprobe has None (no metric) the value is null; numel and shape become
// [a, b] pairs when the sides differ, as msprobe writes them.
std::string render_json(const CkptCompareResult& r);
// One row per parameter: name,status,reason,l2,cos,max_abs_err,max_rel_err,numel_a,numel_b,
// shape_a,shape_b,dtype_a,dtype_b.
std::string render_csv(const CkptCompareResult& r);
// Writes json_path (and, with csv, json_path with .csv for .json) atomically.
void write_reports(const CkptCompareResult& r, const std::string& json_path, bool csv);
// json_path with its .json extension (if any) replaced by .csv.
std::string csv_path_for(const std::string& json_path);

}  // namespace numprobe::ckpt
