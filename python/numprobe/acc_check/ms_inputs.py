"""Arguments of a recorded MindSpore API call rebuilt as numpy arrays, for the MindSpore replay
(ms_runner.py); numpy only, no torch. The same rules as inputs.py (the torch replay's): recorded
.npy files in tensor dumps; in statistics dumps values drawn around the recorded Mean with the
spread the recorded Norm implies, clamped to [Min, Max], Min at the first and Max at the last
element; one generator per API seeded from the run seed and the API name.
"""
import math
import zlib

import numpy as np

from .replay_common import ReplayInputError, load_npy

TENSOR_TYPES = {"mindspore.Tensor", "mindspore.Parameter", "mindspore.common.tensor.Tensor"}
# MindSpore's dtype spellings -> numpy; BFloat16 is held as float32 (numpy has none) and cast
# by MindSpore when the tensor is made.
NUMPY_DTYPES = {"Float64": np.float64, "Float32": np.float32, "Float16": np.float16,
                "BFloat16": np.float32, "Int64": np.int64, "Int32": np.int32, "Int16": np.int16,
                "Int8": np.int8, "UInt8": np.uint8, "Bool": np.bool_}


class Tensor:
    """A rebuilt tensor argument: its values and the dtype the dump recorded ("Float32")."""

    def __init__(self, array, dtype, requires_grad):
        self.array, self.dtype, self.requires_grad = array, dtype, requires_grad


class Dtype:
    """A `mindspore.dtype` argument ("Float32")."""

    def __init__(self, name):
        self.name = name


class InputBuilder:
    def __init__(self, api_name, seed, real_data, data_dirs):
        self.real = real_data
        self.data_dirs = [d for d in data_dirs if d]
        self.rng = np.random.default_rng((seed * 1000003) ^ zlib.crc32(api_name.encode()))

    def value(self, leaf, depth=0):
        if depth > 32:
            raise ReplayInputError("arguments nested deeper than 32 levels")
        if leaf is None or isinstance(leaf, (int, float, bool)):
            return leaf
        if isinstance(leaf, list):
            return [self.value(x, depth + 1) for x in leaf]
        if isinstance(leaf, str):
            return ... if leaf == "..." else leaf
        if not isinstance(leaf, dict):
            raise ReplayInputError(f"argument {leaf!r} cannot be rebuilt")
        t = leaf.get("type")
        if t is None:
            return {k: self.value(v, depth + 1) for k, v in leaf.items()}
        if t in TENSOR_TYPES:
            return self.tensor(leaf)
        v = leaf.get("value")
        if t == "slice":
            return slice(*v)
        if t == "ellipsis":
            return ...
        if t == "mindspore.dtype":
            if v not in NUMPY_DTYPES:
                raise ReplayInputError(f"unknown MindSpore dtype {v!r}")
            return Dtype(v)
        if t in ("int", "float", "bool", "str") or t.startswith("numpy."):
            return v
        raise ReplayInputError(f"argument of type {t!r} cannot be rebuilt")

    def tensor(self, leaf):
        dtype = leaf.get("dtype")
        if dtype not in NUMPY_DTYPES:
            raise ReplayInputError(f"tensor dtype {dtype!r} is not one numprobe replays")
        shape = leaf.get("shape")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ReplayInputError(f"tensor shape {shape!r} is not a list of sizes")
        arr = self.load(leaf, shape) if self.real else self._generate(leaf, dtype, shape)
        return Tensor(arr.astype(NUMPY_DTYPES[dtype], copy=False), dtype,
                      bool(leaf.get("requires_grad")))

    def load(self, leaf, shape):
        return load_npy(self.data_dirs, leaf, shape)

    def _generate(self, leaf, dtype, shape):
        n = math.prod(shape)
        lo, hi = leaf.get("Min"), leaf.get("Max")
        if dtype == "Bool":
            lo, hi = (0 if lo is None else int(bool(lo))), (1 if hi is None else int(bool(hi)))
            return self.rng.integers(min(lo, hi), max(lo, hi) + 1, shape) > 0
        if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
            raise ReplayInputError(f"tensor without numeric Min/Max ({lo!r}, {hi!r}): "
                                   "cannot generate it (a structure or md5 dump?)")
        if not dtype.startswith(("Float", "BFloat")):
            arr = self.rng.integers(int(lo), int(hi) + 1, shape, dtype=np.int64)
        elif math.isnan(lo) or math.isnan(hi):
            arr = np.full(shape, np.nan)
        else:
            big = float(np.finfo(np.float16 if dtype == "Float16" else np.float32).max)
            lo_f = lo if math.isfinite(lo) else math.copysign(big, lo)
            hi_f = hi if math.isfinite(hi) else math.copysign(big, hi)
            mean, norm = leaf.get("Mean"), leaf.get("Norm")
            var = norm * norm / n - mean * mean if n > 2 and isinstance(mean, (int, float)) and \
                isinstance(norm, (int, float)) and lo_f < mean < hi_f else -1.0
            if var > 0 and math.isfinite(var):
                arr = np.clip(self.rng.standard_normal(shape) * math.sqrt(var) + mean, lo_f, hi_f)
            else:
                arr = self.rng.uniform(lo_f, hi_f, shape) if hi_f > lo_f else np.full(shape, lo_f)
        if n:
            flat = arr.reshape(-1)
            flat[0], flat[-1] = lo, hi
        return arr
