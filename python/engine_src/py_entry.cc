#include "py_entry.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "../common/py_plain_values.h"
#include "base/worker_pool.h"
#include "core/hash.h"
#include "core/stats.h"
#include "numprobe/error.h"

namespace py = pybind11;

namespace numprobe::pyengine {
namespace {

// The element type of a buffer from its struct format ("<f", "f", "=q", "?"). Unsigned types
// wider than a byte have no numprobe DType: such leaves get no statistics, as exotic dtypes on
// the torch side.
DType dtype_of_format(const char* format, Py_ssize_t itemsize) {
  std::string_view f = format ? format : "B";
  while (!f.empty() && (f.front() == '<' || f.front() == '=' || f.front() == '@' ||
                        f.front() == '|' || f.front() == '!'))
    f.remove_prefix(1);
  if (f.size() != 1) return DType::kUnknown;
  switch (f[0]) {
    case 'f':
      return itemsize == 4 ? DType::kF32 : DType::kUnknown;
    case 'd':
      return itemsize == 8 ? DType::kF64 : DType::kUnknown;
    case 'e':
      return itemsize == 2 ? DType::kF16 : DType::kUnknown;
    case '?':
      return DType::kBool;
    case 'b':
      return DType::kI8;
    case 'B':
      return DType::kU8;
    case 'h':
      return itemsize == 2 ? DType::kI16 : DType::kUnknown;
    case 'i':
    case 'l':
    case 'q':
      return itemsize == 4 ? DType::kI32 : itemsize == 8 ? DType::kI64 : DType::kUnknown;
    default:
      return DType::kUnknown;
  }
}

// A Python buffer held for the length of one call.
class Buffer {
 public:
  explicit Buffer(PyObject* obj) {
    if (PyObject_GetBuffer(obj, &view_, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0)
      throw py::error_already_set();
    held_ = true;
  }
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  const Py_buffer& view() const { return view_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

WorkerPool* stats_pool() {
  // As the torch side: persistent workers for tensors above 1M elements (never freed).
  static WorkerPool* pool = new WorkerPool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  return pool;
}

StatsOptions engine_stats_options() {
  StatsOptions opt;
  opt.threads = 0;
  opt.pool = stats_pool();
  opt.parallel_threshold = size_t{1} << 20;
  return opt;
}

std::string child_stem(const LeafPlan& plan, const std::string& stem, std::string_view part) {
  if (!plan.names_files) return std::string();
  std::string s = stem;
  s += '.';
  s += part;
  return s;
}

template <typename T, typename Decode>
double count_near_zero(const void* data, size_t n, double eps, Decode decode) {
  const T* x = static_cast<const T*>(data);
  uint64_t c = 0;
  for (size_t i = 0; i < n; ++i) c += std::fabs(static_cast<double>(decode(x[i]))) < eps;
  return static_cast<double>(c);
}

double near_zero_count(const void* data, size_t n, DType dt, double eps) {
  auto same = [](auto v) { return v; };
  switch (dt) {
    case DType::kF32:
      return count_near_zero<float>(data, n, eps, same);
    case DType::kF64:
      return count_near_zero<double>(data, n, eps, same);
    case DType::kF16:
      return count_near_zero<uint16_t>(data, n, eps, half_to_float);
    case DType::kBool:
      return count_near_zero<uint8_t>(data, n, 0.5, same);  // false elements
    case DType::kI8:
      return count_near_zero<int8_t>(data, n, eps, same);
    case DType::kU8:
      return count_near_zero<uint8_t>(data, n, eps, same);
    case DType::kI16:
      return count_near_zero<int16_t>(data, n, eps, same);
    case DType::kI32:
      return count_near_zero<int32_t>(data, n, eps, same);
    case DType::kI64:
      return count_near_zero<int64_t>(data, n, eps, same);
    default:
      return std::nan("");
  }
}

}  // namespace

bool buffer_stats(PyObject* array, TensorStats& stats, double eps, double* near_zero) {
  Buffer buf(array);
  const Py_buffer& v = buf.view();
  const DType dt = dtype_of_format(v.format, v.itemsize);
  const size_t n = v.itemsize > 0 ? static_cast<size_t>(v.len / v.itemsize) : 0;
  if (n == 0 || dt == DType::kUnknown) return false;
  stats = compute_stats(v.buf, n, dt, engine_stats_options());
  if (near_zero) *near_zero = near_zero_count(v.buf, n, dt, eps);
  return true;
}

void fill_leaf_from_buffer(PyObject* array, const LeafPlan& plan, capture::TensorLeaf& leaf,
                           const std::string& save_as) {
  Buffer buf(array);
  const Py_buffer& v = buf.view();
  const DType dt = dtype_of_format(v.format, v.itemsize);
  const size_t n = v.itemsize > 0 ? static_cast<size_t>(v.len / v.itemsize) : 0;
  if (n == 0 || dt == DType::kUnknown) return;
  if (plan.md5) leaf.crc32 = crc32(v.buf, static_cast<size_t>(v.len));
  if (plan.save && !save_as.empty()) {
    // The writer thread writes the .npy later, without the GIL: it gets its own copy (the
    // training step may change the tensor meanwhile).
    auto bytes = std::make_shared<std::vector<char>>(static_cast<const char*>(v.buf),
                                                     static_cast<const char*>(v.buf) + v.len);
    leaf.pending.data = bytes->data();
    leaf.pending.owner = std::shared_ptr<const void>(bytes, bytes.get());
    leaf.pending.dtype = dt;
    leaf.data_name = save_as;
  }
  if (plan.md5 || !plan.stats) return;
  leaf.stats = compute_stats(v.buf, n, dt, engine_stats_options());
  leaf.has_stats = true;
  leaf.bool_stats = dt == DType::kBool;
}

void add_value(const TensorAdapter& ad, const LeafPlan& plan, capture::EntryRecord& rec,
               PyObject* obj, const std::string& stem, bool is_output, int depth) {
  if (depth > 16) {  // a self-containing list; msprobe stops too
    rec.null();
    return;
  }
  if (ad.tensor_types && PyObject_IsInstance(obj, ad.tensor_types) == 1) {
    py::object got = py::reinterpret_borrow<py::object>(ad.to_numpy)(py::handle(obj));
    py::tuple t = got.cast<py::tuple>();
    if (t.size() != 4)
      throw Error("to_numpy must return (array, dtype_name, requires_grad, shape)");
    capture::TensorLeaf& leaf = rec.tensor();
    leaf.type = ad.tensor_type_name;
    leaf.dtype = t[1].cast<std::string>();
    // None: the framework's leaves have no requires_grad member (msprobe's MindSpore dump).
    if (t[2].is_none())
      leaf.write_requires_grad = false;
    else
      leaf.requires_grad = t[2].cast<bool>();
    for (py::handle d : t[3]) leaf.shape.push_back(d.cast<int64_t>());
    if (!t[0].is_none()) {
      fill_leaf_from_buffer(t[0].ptr(), plan, leaf, plan.save ? stem + ".npy" : std::string());
      if (is_output && leaf.has_stats &&
          (leaf.stats.nan_count || leaf.stats.pos_inf_count || leaf.stats.neg_inf_count))
        rec.overflow = true;
    }
    return;
  }
  if (PyErr_Occurred()) throw py::error_already_set();
  if (python_common::add_plain_value(rec, obj)) {
    return;
  }
  if (PyTuple_Check(obj) || PyList_Check(obj)) {
    rec.begin_list();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t i = 0; i < n; ++i)
      add_value(ad, plan, rec, items[i], child_stem(plan, stem, std::to_string(i)), is_output,
                depth + 1);
    rec.end();
  } else if (PyDict_Check(obj)) {
    rec.begin_dict();
    python_common::for_each_str_item(obj, [&](const char* ks, PyObject* v) {
      rec.key(ks);
      add_value(ad, plan, rec, v, child_stem(plan, stem, ks), is_output, depth + 1);
    });
    rec.end();
  } else {
    // Framework objects the front names (a mindspore dtype): {"type": ..., "value": "..."}.
    py::object d =
        ad.describe ? py::reinterpret_borrow<py::object>(ad.describe)(py::handle(obj)) : py::none();
    if (d.is_none()) {
      rec.null();
      return;
    }
    py::tuple t = d.cast<py::tuple>();
    rec.typed(t[0].cast<std::string>());
    rec.string(py::str(t[1]).cast<std::string>());
  }
}

}  // namespace numprobe::pyengine
