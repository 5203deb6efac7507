"""Arguments of a recorded API call rebuilt from its dump.json leaves.

Tensors come from the recorded .npy files (tensor dumps) or are generated from the recorded
statistics (statistics dumps): like msprobe the exact Min and Max are placed at the first and last
element and NaN/Inf go where the original had them; unlike msprobe the body is drawn around the
recorded Mean with the spread the recorded Norm implies (not uniformly over [Min, Max]), so the
replayed values look like the real ones. Every API gets its own generator seeded from the run seed
and the API name: results do not depend on which worker runs it or in which order.
"""
import math
import zlib

import torch

from .replay_common import ReplayInputError, load_npy

TENSOR_TYPES = {"torch.Tensor", "torch.nn.parameter.Parameter", "mindspore.Tensor",
                "mindspore.Parameter", "torch.nn.Parameter"}


def torch_dtype(name):
    if not isinstance(name, str):
        raise ReplayInputError(f"dtype {name!r} is not a string")
    n = name[6:] if name.startswith("torch.") else name
    n = n[10:] if n.startswith("mindspore.") else n
    n = {"Float32": "float32", "Float16": "float16", "BFloat16": "bfloat16", "Float64": "float64",
         "Int64": "int64", "Int32": "int32", "Int16": "int16", "Int8": "int8", "UInt8": "uint8",
         "Bool": "bool", "Complex64": "complex64", "Complex128": "complex128"}.get(n, n)
    dt = getattr(torch, n, None)
    if not isinstance(dt, torch.dtype):
        raise ReplayInputError(f"unknown dtype {name!r}")
    return dt


class InputBuilder:
    def __init__(self, api_name, seed, real_data, data_dirs):
        self.real = real_data
        self.data_dirs = [d for d in data_dirs if d]
        self.gen = torch.Generator().manual_seed((seed * 1000003) ^ zlib.crc32(api_name.encode()))

    # ---- values -------------------------------------------------------------------------------
    def value(self, leaf, want_grad=False, depth=0):
        if depth > 32:
            raise ReplayInputError("arguments nested deeper than 32 levels")
        if leaf is None:
            return None
        if isinstance(leaf, list):
            return [self.value(x, want_grad, depth + 1) for x in leaf]
        if isinstance(leaf, str):
            return ... if leaf == "..." else leaf
        if not isinstance(leaf, dict):
            return leaf
        t = leaf.get("type")
        if t is None:  # a dict argument
            return {k: self.value(v, want_grad, depth + 1) for k, v in leaf.items()}
        if t in TENSOR_TYPES:
            return self.tensor(leaf, want_grad)
        v = leaf.get("value")
        if t == "torch.Size":
            return torch.Size(v)
        if t == "slice":
            return slice(*v)
        if t == "ellipsis":
            return ...
        if t == "torch.dtype":
            return torch_dtype(v)
        if t == "torch.device":
            return torch.device(v)
        if t in ("int", "float", "bool", "str"):
            return v
        if t.startswith("numpy."):
            return v
        raise ReplayInputError(f"argument of type {t!r} cannot be rebuilt")

    def tensor(self, leaf, want_grad):
        dtype = torch_dtype(leaf.get("dtype"))
        shape = leaf.get("shape")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ReplayInputError(f"tensor shape {shape!r} is not a list of sizes")
        if self.real:
            t = self._load(leaf, dtype, shape)
        else:
            t = self._generate(leaf, dtype, shape)
        if want_grad and leaf.get("requires_grad") and t.is_floating_point():
            t.requires_grad_(True)
        return t

    def _load(self, leaf, dtype, shape):
        t = torch.from_numpy(load_npy(self.data_dirs, leaf, shape))
        return t.to(dtype) if t.dtype != dtype else t

    def _generate(self, leaf, dtype, shape):
        n = math.prod(shape)
        lo, hi = leaf.get("Min"), leaf.get("Max")
        if dtype == torch.bool:
            lo = 0 if lo is None else int(bool(lo))
            hi = 1 if hi is None else int(bool(hi))
            return torch.randint(min(lo, hi), max(lo, hi) + 1, shape, generator=self.gen) > 0
        if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
            raise ReplayInputError(f"tensor without numeric Min/Max ({lo!r}, {hi!r}): "
                                   "cannot generate it (a structure or md5 dump?)")
        if not dtype.is_floating_point and not dtype.is_complex:
            lo_i, hi_i = int(lo), int(hi)
            t = torch.randint(lo_i, hi_i + 1, shape, generator=self.gen, dtype=torch.int64)
            t = t.to(dtype)
            if n >= 2:
                flat = t.view(-1)
                flat[0], flat[-1] = lo_i, hi_i
            return t
        if dtype.is_complex:
            raise ReplayInputError("complex tensors cannot be generated from statistics")
        if math.isnan(hi) or math.isnan(lo):
            return torch.full(shape, float("nan"), dtype=dtype)
        # float64 only where the target needs it: generating in float32 is several times faster
        work = torch.float64 if dtype == torch.float64 else torch.float32
        finfo = torch.finfo(dtype)
        lo_f = max(lo, finfo.min) if math.isfinite(lo) else (finfo.min if lo < 0 else finfo.max)
        hi_f = min(hi, finfo.max) if math.isfinite(hi) else (finfo.max if hi > 0 else finfo.min)
        mean, norm = leaf.get("Mean"), leaf.get("Norm")
        body = None
        if (isinstance(mean, (int, float)) and isinstance(norm, (int, float)) and n > 2
                and math.isfinite(mean) and math.isfinite(norm) and lo_f < mean < hi_f):
            var = norm * norm / n - mean * mean
            if var > 0:
                # in place: the same values as randn() * sd + mean without two temporaries
                body = torch.randn(shape, generator=self.gen, dtype=work)
                body.mul_(math.sqrt(var)).add_(mean).clamp_(lo_f, hi_f)
        if body is None:
            body = torch.rand(shape, generator=self.gen, dtype=work)
            body.mul_(hi_f - lo_f).add_(lo_f)
        t = body.to(dtype)
        if n == 0:
            return t
        flat = t.view(-1)
        flat[0] = lo
        flat[-1] = hi
        if leaf.get("Max_origin") is not None and isinstance(leaf["Max_origin"], float) \
                and math.isnan(leaf["Max_origin"]) and n > 2:
            flat[1] = float("nan")
        return t
