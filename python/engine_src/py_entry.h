// Python values into capture records, for fronts that are not torch (MindSpore): no framework
// headers, no numpy headers. A tensor reaches the engine as an object with the buffer protocol
// (a numpy array the front made from the framework's tensor); its statistics, CRC-32 and .npy
// bytes come from numprobe's own kernels over that buffer.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

#include "capture/capture_record.h"
#include "capture/capture_session.h"
#include "core/stats.h"

namespace numprobe::pyengine {

// How the front sees its framework's tensors. `tensor_types` is a tuple of classes;
// `to_numpy(obj)` returns (array or None, dtype_name, requires_grad, shape) for an object of one of
// them: the array holds the tensor's values in a numpy type (bfloat16 as float32; None: no
// statistics), dtype_name is the framework's spelling ("Float32", "BFloat16"), requires_grad a bool
// or None (the leaf gets no requires_grad member, as msprobe's MindSpore leaves). `describe(obj)`
// returns (type_name, value) for any other object the walker does not know (a framework dtype), or
// None: the value is written null.
struct TensorAdapter {
  PyObject* tensor_types = nullptr;  // borrowed from the owner, which holds references
  PyObject* to_numpy = nullptr;
  PyObject* describe = nullptr;
  std::string tensor_type_name = "mindspore.Tensor";  // the leaf's "type"
};

// What a leaf gets: decided by the session's config once per entry.
struct LeafPlan {
  bool stats = true;         // Max/Min/Mean/Norm and the counts
  bool md5 = false;          // summary_mode md5: CRC-32 of the bytes instead of statistics
  bool save = false;         // task tensor (or tensor_list): the bytes go to <stem>.npy
  bool names_files = false;  // stems are built (only when something is saved)
};

// Appends `obj` as one value to `rec`. `stem` names the .npy file of a tensor leaf (children
// extend it with ".<index>" or ".<key>"); is_output marks leaves whose NaN/Inf set rec.overflow.
// Raises (a Python exception set, numprobe::Error thrown) only when the adapter itself fails.
void add_value(const TensorAdapter& ad, const LeafPlan& plan, capture::EntryRecord& rec,
               PyObject* obj, const std::string& stem, bool is_output, int depth = 0);

// A buffer's values as one leaf (exposed for the front's tests: the statistics of an array).
void fill_leaf_from_buffer(PyObject* array, const LeafPlan& plan, capture::TensorLeaf& leaf,
                           const std::string& save_as);

// The engine's statistics of a buffer's values (the monitor's summaries): false when it is empty
// or of a type without statistics. With near_zero, also the count of elements with |x| < eps
// (msprobe monitor's "zeros"; a bool's false elements), a second pass over the buffer.
bool buffer_stats(PyObject* array, TensorStats& stats, double eps, double* near_zero);

}  // namespace numprobe::pyengine
