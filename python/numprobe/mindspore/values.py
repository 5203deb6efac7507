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
    TENSOR_TYPES = (Tensor, StubTensor)
except ImportError:
    TENSOR_TYPES = (Tensor,)

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


def to_numpy(t):
    dtype = t.dtype
    shape = tuple(int(d) for d in t.shape)
    try:
        arr = host_array(t)
    except Exception:  # a tensor whose values cannot be read here: no statistics, still a leaf
        arr = None
    requires_grad = bool(getattr(t, "requires_grad", False)) if isinstance(t, ms.Parameter) else False
    return arr, str(dtype), requires_grad, shape


def describe(obj):
    """{"type", "value"} of objects other than tensors and Python scalars, or None (null)."""
    if isinstance(obj, ms.dtype.Type):
        return ("mindspore.dtype", str(obj))
    if isinstance(obj, np.ndarray):
        return ("numpy.ndarray", f"shape={obj.shape} dtype={obj.dtype}")
    if isinstance(obj, np.generic):
        return (type(obj).__name__, obj.item())
    return None
