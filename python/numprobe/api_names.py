"""Which torch callables are "APIs" (msprobe's L1 level) and what msprobe calls them.

Identity, not attribute names: the table maps function objects, so an API imported by value
(``from torch import relu``) is still recognised, and nothing in torch is replaced.
"""
import types

import torch
import torch.nn.functional as F

# Callables that describe tensors rather than compute on them; msprobe does not dump them either.
_TENSOR_SKIP = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage", "storage_offset",
    "data_ptr", "element_size", "is_contiguous", "is_floating_point", "is_complex", "is_signed",
    "is_set_to", "is_shared", "is_pinned", "get_device", "item", "tolist", "numpy", "untyped_storage",
    "type", "has_names", "is_nonzero", "is_same_size", "is_inference", "is_coalesced",
    "requires_grad_", "retain_grad", "register_hook", "backward", "detach_", "share_memory_",
    "record_stream", "dim_order", "nbytes", "itemsize", "storage_type", "is_conj", "is_neg",
    "__len__", "__repr__", "__format__", "__hash__", "__bool__", "__iter__", "__reversed__",
    "__reduce_ex__", "__setstate__", "__deepcopy__", "__dir__", "__array__", "__array_wrap__",
    "__contains__", "__index__", "__int__", "__float__", "__complex__", "__long__", "__nonzero__",
    "__torch_function__", "__torch_dispatch__", "__get__", "__sizeof__", "__init__", "__new__",
    "__init_subclass__", "__class__", "__getattribute__", "__setattr__", "__delattr__",
    "__reduce__", "__subclasshook__", "__str__", "__eq__ids", "__dlpack__", "__dlpack_device__",
    "_make_subclass", "__array_priority__", "__cuda_array_interface__",
}
_FUNCTIONAL_SKIP = {
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "handle_torch_function", "boolean_dispatch", "assert_int_or_pair",
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


def _is_api(obj):
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType,
                            types.MethodDescriptorType, types.WrapperDescriptorType,
                            types.BuiltinMethodType)) or type(obj).__name__ in (
                                "method_descriptor", "builtin_function_or_method",
                                "wrapper_descriptor")


def build_api_table():
    """{callable: "Functional.gelu" | "Torch.matmul" | "Tensor.add_" | ...}.

    Functional wins over Torch for an object both expose (F.conv2d is torch.conv2d): msprobe names
    the call after the namespace users write in models.
    """
    table = {}

    def add(obj, name):
        try:
            if obj not in table:
                table[obj] = name
        except TypeError:  # unhashable
            pass

    # (namespace, prefix, names to skip, whether dunders count: Tensor's operators do)
    namespaces = ((F, "Functional", _FUNCTIONAL_SKIP, False), (torch.Tensor, "Tensor", _TENSOR_SKIP, True),
                  (torch, "Torch", _TORCH_SKIP, False))
    for ns, prefix, skip, dunders in namespaces:
        for name in dir(ns):
            private = name.startswith("_") and not (dunders and name.startswith("__"))
            if private or name in skip:
                continue
            try:
                obj = getattr(ns, name)
            except Exception:
                continue
            if _is_api(obj) and not isinstance(obj, type):
                add(obj, f"{prefix}.{name}")
    return table
