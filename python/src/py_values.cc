#include "py_values.h"

#include <frameobject.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "../common/py_plain_values.h"
#include "core/hash.h"

namespace numprobe::python {

using capture::EntryRecord;
using capture::TorchCapture;

namespace {
constexpr int kMaxDepth = 400;  // msprobe's DUMP_MAX_DEPTH
std::string g_own_dir;

bool is_torch_size(PyObject* obj) {
  return PyTuple_Check(obj) && std::string_view(Py_TYPE(obj)->tp_name) == "torch.Size";
}

}  // namespace

void set_own_package_dir(std::string dir) {
  g_own_dir = std::move(dir);
}

namespace {
PyObject* g_group_ranks_fn = nullptr;  // Python callable: ProcessGroup -> list of global ranks
}

void set_group_ranks_fn(PyObject* fn) {
  Py_XINCREF(fn);
  Py_XDECREF(g_group_ranks_fn);
  g_group_ranks_fn = fn;
}

// torch.distributed objects in msprobe's forms: a ProcessGroup as {"type": "torch.ProcessGroup",
// "group_ranks": [...], "group_id": crc32(str(ranks))}, a ReduceOp as {"type":
// "torch.distributed.ReduceOp", "value": "SUM"}. False when obj is neither.
bool add_distributed_object(EntryRecord& rec, PyObject* obj) {
  std::string_view type = Py_TYPE(obj)->tp_name;
  if (type.find("ProcessGroup") != std::string_view::npos && g_group_ranks_fn) {
    PyObject* ranks = PyObject_CallOneArg(g_group_ranks_fn, obj);
    if (!ranks || !PyList_Check(ranks)) {
      PyErr_Clear();
      Py_XDECREF(ranks);
      return false;
    }
    std::string text = "[";
    rec.begin_dict();
    rec.key("type");
    rec.string("torch.ProcessGroup");
    rec.key("group_ranks");
    rec.begin_list();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ranks); ++i) {
      long long r = PyLong_AsLongLong(PyList_GET_ITEM(ranks, i));
      rec.integer(r);
      text += (i ? ", " : "") + std::to_string(r);
    }
    rec.end();
    text += "]";
    char id[16];
    std::snprintf(id, sizeof id, "%08x", crc32(text.data(), text.size()));
    rec.key("group_id");
    rec.string(id);
    rec.end();
    Py_DECREF(ranks);
    return true;
  }
  if (type.find("ReduceOp") != std::string_view::npos || type == "RedOpType") {
    PyObject* str = PyObject_Str(obj);
    const char* s = str ? PyUnicode_AsUTF8(str) : nullptr;
    if (!s) {
      PyErr_Clear();
      Py_XDECREF(str);
      return false;
    }
    std::string_view v(s);
    if (auto dot = v.rfind('.'); dot != std::string_view::npos) v = v.substr(dot + 1);
    rec.typed("torch.distributed.ReduceOp");
    rec.string(v);
    Py_DECREF(str);
    return true;
  }
  return false;
}

void add_pyitems(TorchCapture& cap, EntryRecord& rec, PyObject* seq, const std::string& stem,
                 bool is_output) {
  rec.begin_list();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; ++i)
    add_pyobject(cap, rec, items[i], cap.stem(stem, static_cast<size_t>(i)), is_output, 1);
  rec.end();
}

namespace {
// {"type": "torch.memory_format", "format": "preserve_format"}, as msprobe writes it; null when the
// object cannot say its name.
void add_memory_format(EntryRecord& rec, PyObject* obj) {
  PyObject* text = PyObject_Str(obj);  // "torch.preserve_format"
  const char* s = text ? PyUnicode_AsUTF8(text) : nullptr;
  if (!s) {
    PyErr_Clear();
    Py_XDECREF(text);
    rec.null();
    return;
  }
  std::string_view name(s);
  if (name.rfind("torch.", 0) == 0) name.remove_prefix(6);
  rec.begin_dict();
  rec.key("type");
  rec.string("torch.memory_format");
  rec.key("format");
  rec.string(name);
  rec.end();
  Py_DECREF(text);
}
}  // namespace

void add_pyobject(TorchCapture& cap, EntryRecord& rec, PyObject* obj, const std::string& stem,
                  bool is_output, int depth) {
  if (depth > kMaxDepth) {
    rec.null();
    return;
  }
  if (THPVariable_Check(obj)) {
    cap.add_tensor(rec, THPVariable_Unpack(obj), stem, is_output);
  } else if (python_common::add_plain_value(rec, obj)) {
  } else if (is_torch_size(obj)) {
    rec.typed("torch.Size");
    rec.begin_list();
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); ++i)
      rec.integer(PyLong_AsLongLong(PyTuple_GET_ITEM(obj, i)));
    rec.end();
  } else if (PyTuple_Check(obj) || PyList_Check(obj)) {
    rec.begin_list();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t i = 0; i < n; ++i)
      add_pyobject(cap, rec, items[i], cap.stem(stem, static_cast<size_t>(i)), is_output,
                   depth + 1);
    rec.end();
  } else if (PyDict_Check(obj)) {
    rec.begin_dict();
    python_common::for_each_str_item(obj, [&](const char* ks, PyObject* v) {
      rec.key(ks);
      add_pyobject(cap, rec, v, cap.stem(stem, ks), is_output, depth + 1);
    });
    rec.end();
  } else if (add_distributed_object(rec, obj)) {
  } else if (THPDtype_Check(obj)) {
    rec.typed("torch.dtype");
    rec.string(std::string("torch.") + reinterpret_cast<THPDtype*>(obj)->name);
  } else if (THPDevice_Check(obj)) {
    rec.typed("torch.device");
    rec.string(reinterpret_cast<THPDevice*>(obj)->device.str());
  } else if (std::string_view(Py_TYPE(obj)->tp_name) == "torch.memory_format") {
    add_memory_format(rec, obj);
  } else {
    rec.null();
  }
}

void add_pyoutput(TorchCapture& cap, EntryRecord& rec, PyObject* out, const std::string& stem) {
  if ((PyTuple_Check(out) && !is_torch_size(out)) || PyList_Check(out)) {
    add_pyitems(cap, rec, out, stem, true);
    return;
  }
  rec.begin_list();
  add_pyobject(cap, rec, out, cap.stem(stem, size_t{0}), true, 1);
  rec.end();
}

const at::Tensor* first_grad_tensor(PyObject* obj, int depth) {
  if (depth > 8) return nullptr;
  if (THPVariable_Check(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    return t.defined() && t.grad_fn() ? &t : nullptr;
  }
  if (PyTuple_Check(obj) || PyList_Check(obj)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (const at::Tensor* t = first_grad_tensor(items[i], depth + 1)) return t;
  }
  return nullptr;
}

// Stacks are cached under the (code object, instruction) of every frame: walking the frames is
// cheap, resolving file names and line numbers happens once per distinct stack. Keying on fewer
// frames would give two calls that differ only in outer frames (the same layer reached from
// layer2 and from layer3) one record, with the wrong outer frames for the second.
namespace {
struct StackKeyHash {
  size_t operator()(const std::vector<uintptr_t>& k) const {
    uint64_t h = static_cast<uint64_t>(k.size()) * 0x9E3779B97F4A7C15ull;
    for (uintptr_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
    return static_cast<size_t>(h);
  }
};
}  // namespace

capture::CaptureSession::Frames current_python_stack() {
  if (!PyGILState_Check()) return nullptr;
  static std::unordered_map<std::vector<uintptr_t>, capture::CaptureSession::Frames, StackKeyHash>
      cache;
  thread_local std::vector<uintptr_t> key;
  thread_local std::vector<PyCodeObject*> codes;
  key.clear();
  codes.clear();
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
#if PY_VERSION_HEX >= 0x030B0000
    int where = PyFrame_GetLasti(f);
#else
    int where = PyFrame_GetLineNumber(f);
#endif
    key.push_back(reinterpret_cast<uintptr_t>(code));
    key.push_back(static_cast<uintptr_t>(static_cast<unsigned>(where)));
    codes.push_back(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  auto it = cache.find(key);
  if (it != cache.end()) {
    for (PyCodeObject* c : codes) Py_DECREF(c);
    return it->second;
  }
  // A cached key keeps its code objects (references from the walk above): their addresses cannot
  // be reused by other code while the key exists.

  auto out = std::make_shared<std::vector<capture::StackFrame>>();
  PyFrameObject* fr = PyEval_GetFrame();
  Py_XINCREF(fr);
  while (fr) {
    PyCodeObject* code = PyFrame_GetCode(fr);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* name = PyUnicode_AsUTF8(code->co_name);
    if (file && name) {
      std::string_view fv(file);
      bool own = !g_own_dir.empty() && fv.rfind(g_own_dir, 0) == 0;
      // torch 1.13 runs every mode's __torch_function__ through a Python wrapper here.
      bool wrapper = fv.size() >= 19 && fv.substr(fv.size() - 19) == "/torch/overrides.py";
      if (!own && !wrapper) out->push_back({file, PyFrame_GetLineNumber(fr), name});
    } else {
      PyErr_Clear();
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(fr);
    Py_DECREF(fr);
    fr = back;
  }
  return cache.emplace(key, std::move(out)).first->second;
}

}  // namespace numprobe::python
