// The API hook (levels L1 and mix): how a torch API call becomes a dump entry. Calls arrive two
// ways and meet in record_call:
//  - through numprobe's torch function mode (__torch_function__), which sees every API torch
//    dispatches, including functions the user stored before capture started;
//  - through API sites (api_site.cc): callables installed over msprobe-listed attributes while
//    capture runs, so that a call is recorded under the name the user wrote (`a + b` is
//    Tensor.__add__, which the mode cannot tell from a.add(b)) and with the arguments as the user
//    passed them (torch's Python functions re-spell them before dispatching).
// An API called inside a recorded API is part of it and not recorded (msprobe does the same).
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "capture/capture_session.h"

namespace numprobe::capture {
class TorchCapture;
}

namespace numprobe::python {

// One API type ("Functional.gelu") and its per-step call counter in the current session.
struct ApiInfo {
  std::string type;
  // Whether calls of this API may come from torch's hook machinery (set_internal_callers), decided
  // once: -1 not yet, 0 no, 1 yes (its callers are checked).
  int8_t from_machinery = -1;
  uint64_t session = 0;  // CaptureSession::id() the slot belongs to
  capture::CaptureSession::CounterSlot slot = nullptr;
  // Keyword defaults of a Python torch function: torch's own dispatch passes them although the
  // user did not (F.relu(x) reaches the mode as relu(x, inplace=False)). A call seen by the mode
  // drops a keyword whose value is its default (None, bool, int, float or str, compared by value),
  // so it is recorded as it was most likely written. References are owned.
  std::vector<std::pair<std::string, PyObject*>> defaults;
  // Whether this is a dropout API (msprobe records no backward entry for a dropout with p == 0,
  // whose backward only passes gradients on): -1 not decided yet, 0 no, 1 yes.
  int8_t dropout = -1;

  explicit ApiInfo(std::string t = {}) : type(std::move(t)) {}
  int64_t next_count(capture::TorchCapture& cap);
};

// How a call reached record_call.
enum class CallPath {
  kMode,  // torch's dispatch: arguments as torch re-spelled them (defaults dropped)
  kSite,  // an API site or a custom API wrapper: arguments as the caller passed them
};

// Runs func(*args, **kwargs) as the API `api`, dumping its forward entry and arming its backward
// entry. Returns a new reference, or null with a Python error set.
PyObject* record_call(ApiInfo& api, PyObject* func, PyObject* args, PyObject* kwargs,
                      CallPath path);

// Whether a call now may be recorded: a capture is active and dumping on this step. False lets an
// API site call straight through, with no allocation (sites stay installed between captures).
bool capture_dumping();

// Defines the module functions of the API hook on numprobe._C: set_api_names, set_api_defaults,
// set_api_resolver, set_transparent, set_internal_callers, call_api, api_site, and the
// torch_function / torch_function_method attributes.
void register_api_hook(pybind11::module_& m);

// Defined in api_site.cc: the callable an API site stands in for (borrowed), or null when `obj`
// is not a site.
PyObject* api_site_original(PyObject* obj);
// Defined in api_site.cc: a new API site recording calls of `original` as `type` (see above).
// Returns a new reference, or null with a Python error set.
PyObject* new_api_site(const std::string& type, PyObject* original);
// The type of API sites (a borrowed reference; null with a Python error set if it cannot be made).
PyTypeObject* api_site_type();

}  // namespace numprobe::python
