"""Which torch callables are "APIs" (msprobe's L1 level) and what msprobe calls them.

The set is msprobe's (msprobe_apis.py), so both tools record the same calls. Identity, not
attribute names, decides: the table maps function objects, so an API imported by value
(``from torch import relu``) is still recognised; a callable the table does not know is looked up
once by the name it calls itself (``resolve_api``), so an API a library rebound before capture
started (``F.gelu = wrapper``) is still recorded.
"""
import inspect
import os
import types

import torch
import torch.nn.functional as F

from . import msprobe_apis

# numprobe's former, wider set (NUMPROBE_API_SET=all): every public callable of the three
# namespaces but these, which describe tensors rather than compute on them.
_TENSOR_SKIP = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage", "storage_offset",
    "data_ptr", "element_size", "is_contiguous", "is_floating_point", "is_complex", "is_signed",
    "is_set_to", "is_shared", "is_pinned", "get_device", "item", "tolist", "numpy", "untyped_storage",
    "type", "has_names", "is_nonzero", "is_same_size", "is_inference", "is_coalesced",
    "requires_grad_", "retain_grad", "register_hook", "backward", "detach_", "share_memory_",
    "record_stream", "dim_order", "nbytes", "itemsize", "storage_type", "is_conj", "is_neg",
}
_TORCH_SKIP = {
    "is_tensor", "is_storage", "is_grad_enabled", "is_inference_mode_enabled", "set_grad_enabled",
    "no_grad", "enable_grad", "inference_mode", "get_default_dtype", "set_default_dtype",
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "typename",
    "is_floating_point", "is_complex", "is_nonzero", "numel", "get_num_threads",
    "set_num_threads", "compile", "load", "save", "device", "dtype", "Size", "empty_like",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "result_type",
    "can_cast", "promote_types", "set_printoptions", "is_autocast_enabled", "broadcast_shapes",
}


# APIs Python also reaches through an operator alias that msprobe does not wrap. msprobe replaces
# the listed attributes of torch.Tensor, while `-x`, `abs(x)` and `1.0 / x` go through __neg__,
# __abs__ and __rtruediv__, bound to the original functions when torch.Tensor was defined: msprobe
# records nothing for `-x` and `abs(x)`, and for `1.0 / x` the calls inside torch's __rdiv__
# (reciprocal, then __mul__). numprobe's mode sees the original function whichever name reached it,
# so these are recorded only through their attribute (an API site), and __rdiv__ reached through
# the mode runs torch's own body so that the calls inside it are recorded (TRANSPARENT_BODIES).
# Otherwise every later call of those APIs is numbered differently from msprobe's (issue 30).
ATTRIBUTE_ONLY = frozenset({"Tensor.neg", "Tensor.abs", "Tensor.__rdiv__"})


def transparent_bodies(call_api):
    """{function the mode may see: body to run instead}: torch's __rdiv__, reached as __rtruediv__
    (never an API site). `call_api(name, func, args, kwargs)` records a call: torch pops the mode
    while the function it dispatched runs, so the body records its reciprocal itself; its `*` is
    the Tensor.__mul__ API site."""
    reciprocal = torch.Tensor.reciprocal

    def rdiv(self, other):
        # torch.Tensor.__rdiv__'s own body (torch/_tensor.py, 1.13 to 2.14): `other / self`.
        return call_api("Tensor.reciprocal", reciprocal, (self,), None) * other

    return {torch.Tensor.__rtruediv__: rdiv}


def _is_api(obj):
    return callable(obj) and not isinstance(obj, type) and isinstance(
        obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
              types.WrapperDescriptorType, types.BuiltinMethodType))


def _lookup(ns, dotted):
    obj = ns
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _namespaces():
    """(prefix, namespace objects, listed names) in precedence order: an object two namespaces
    share is named after the first (F.conv2d is torch.conv2d: msprobe names the call after the
    namespace models use; nn.LSTM calls torch._VF.lstm, which is torch.lstm). F's builtins live in
    torch._C._nn too, where a rebinding of F's attribute cannot hide them."""
    return (("Functional", (F, torch._C._nn), msprobe_apis.FUNCTIONAL),
            ("VF", (torch._VF,), msprobe_apis.VF),
            ("Tensor", (torch.Tensor,), msprobe_apis.TENSOR),
            ("Torch", (torch,), msprobe_apis.TORCH))


def build_api_table():
    """{callable: "Functional.gelu" | "Torch.matmul" | "Tensor.__add__" | ...}."""
    table = {}

    def add(obj, name):
        if name in ATTRIBUTE_ONLY:
            return
        try:
            if obj is not None and _is_api(obj) and obj not in table:
                table[obj] = name
        except TypeError:  # unhashable
            pass

    for prefix, spaces, names in _namespaces():
        for name in sorted(names):
            for ns in spaces:
                add(_lookup(ns, name), f"{prefix}.{name}")
    if os.environ.get("NUMPROBE_API_SET") == "all":
        for ns, prefix, skip in ((F, "Functional", set()), (torch.Tensor, "Tensor", _TENSOR_SKIP),
                                 (torch, "Torch", _TORCH_SKIP)):
            for name in dir(ns):
                if name.startswith("_") or name in skip:
                    continue
                obj = getattr(ns, name, None)
                # The name the function calls itself where the namespace has it too: torch 1.13
                # leaks a loop variable torch.obj that is torch.zeros_like.
                own = getattr(obj, "__name__", None)
                if isinstance(own, str) and own != name and getattr(ns, own, None) is obj:
                    name = own
                add(obj, f"{prefix}.{name}")
    return table


_MODULE_PREFIX = {"torch.nn.functional": "Functional", "torch._C._nn": "Functional",
                  "torch.functional": "Torch", "torch": "Torch",
                  "torch._C._VariableFunctions": "Torch"}


def resolve_api(func):
    """The API name of a callable the table does not know, from the name it calls itself, or None:
    torch's own function under a rebound attribute, a Tensor method reached through a subclass."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None
    owner = getattr(func, "__objclass__", None)
    qualname = getattr(func, "__qualname__", "") or ""
    if owner is torch._C._TensorBase or qualname == f"Tensor.{name}":
        api = f"Tensor.{name}"
        return api if name in msprobe_apis.TENSOR and api not in ATTRIBUTE_ONLY else None
    prefix = _MODULE_PREFIX.get(getattr(func, "__module__", None) or "")
    listed = {"Functional": msprobe_apis.FUNCTIONAL, "Torch": msprobe_apis.TORCH}
    if prefix and name in listed[prefix]:
        return f"{prefix}.{name}"
    return None


def keyword_defaults(table):
    """{Python function in the table: {keyword: default}} for its simple defaults (None, bool, int,
    float, str): torch's Python functions pass these to the dispatch although the caller did not."""
    out = {}
    for func in table:
        if not isinstance(func, types.FunctionType):
            continue
        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            continue
        d = {p.name: p.default for p in params
             if p.default is not inspect.Parameter.empty
             and (p.default is None or type(p.default) in (bool, int, float, str))}
        if d:
            out[func] = d
    return out


def site_targets():
    """(owner, attribute, API name) for each API site capture installs (api_site.cc): the operators
    msprobe lists on torch.Tensor (the mode cannot tell ``a + b`` from ``a.add(b)``), and the Python
    functions of torch.nn.functional, torch and torch.Tensor, which re-spell their arguments before
    torch dispatches them."""
    out = []
    for prefix, owner in (("Functional", F), ("Tensor", torch.Tensor), ("Torch", torch)):
        names = {"Functional": msprobe_apis.FUNCTIONAL, "Tensor": msprobe_apis.TENSOR,
                 "Torch": msprobe_apis.TORCH}[prefix]
        for name in sorted(names):
            if "." in name:
                continue
            obj = getattr(owner, name, None)
            if obj is None:
                continue
            dunder = name.startswith("__")
            api = f"{prefix}.{name}"
            if dunder or isinstance(obj, types.FunctionType) or api in ATTRIBUTE_ONLY:
                out.append((owner, name, api))
    return out
