"""MindSpore values as numprobe's engine reads them (numprobe._engine's tensor adapter).

A tensor becomes a numpy array over its values (bfloat16 widened to float32 exactly, as msprobe
does before its own statistics and md5), its MindSpore dtype spelling ("Float32", "BFloat16") and
its shape. Statistics, CRC-32 and .npy bytes are then computed by the engine from the array's
buffer: float64 sums and NaN/Inf/zero counts on every backend, without MindSpore kernels (msprobe's
statistics call ``mint`` norm, which has no CPU kernel).
"""
import numpy as np
import mindspore as ms
from mindspore import Tensor

try:  # MindSpore < 2.5 returns lazy StubTensors from ops
    from mindspore.common._stub_tensor import StubTensor
    _FRAMEWORK_TYPES = (Tensor, StubTensor)
except ImportError:
    _FRAMEWORK_TYPES = (Tensor,)

_WIDEN = {ms.bfloat16: ms.float32}


def host_array(t):
    """t's values as a C-contiguous numpy array (bfloat16 widened to float32, complex as
    magnitudes): what the engine reads. A copy only where MindSpore's asnumpy makes one."""
    dtype = t.dtype
    src = t.astype(_WIDEN[dtype]) if dtype in _WIDEN else t
    arr = np.ascontiguousarray(np.asarray(src.asnumpy()))
    if np.iscomplexobj(arr):  # summarised by magnitudes, as msprobe
        arr = np.abs(arr)
    return arr


class Held:
    """A tensor's values read when its entry's call began (a collective changes its tensors in
    place afterwards); `orig` gives the dtype spelling and the shape."""

    __slots__ = ("orig", "array")

    def __init__(self, orig, array):
        self.orig, self.array = orig, array


TENSOR_TYPES = _FRAMEWORK_TYPES + (Held,)


def _read(t):
    """numpy values of a framework tensor (bfloat16 widened), or None where they cannot be read."""
    try:
        return host_array(t)
    except Exception:  # a tensor whose values cannot be read here: no statistics, still a leaf
        return None


def hold(t):
    return Held(t, _read(t))


def to_numpy(t):
    # None as requires_grad: no requires_grad member. msprobe's MindSpore leaves have type, dtype,
    # shape and the statistics only (its torch leaves have requires_grad).
    if isinstance(t, Held):
        arr, t = t.array, t.orig
    else:
        arr = _read(t)
    return arr, str(t.dtype), None, tuple(int(d) for d in t.shape)


def describe(obj):
    """{"type", "value"} of objects other than tensors and Python scalars, or None (null)."""
    if isinstance(obj, ms.dtype.Type):
        return ("mindspore.dtype", str(obj))
    if isinstance(obj, np.ndarray):
        return ("numpy.ndarray", f"shape={obj.shape} dtype={obj.dtype}")
    if isinstance(obj, np.generic):
        return (type(obj).__name__, obj.item())
    return None
