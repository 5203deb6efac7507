"""MindSpore values as numprobe's engine reads them (numprobe._engine's tensor adapter).

A tensor becomes a numpy array over its values (bfloat16 widened to float32 exactly, as msprobe
does before its own statistics and md5), its MindSpore dtype spelling ("Float32", "BFloat16") and
its shape. Statistics, CRC-32 and .npy bytes are then computed by the engine from the array's
buffer: float64 sums and NaN/Inf/zero counts on every backend, without MindSpore kernels (msprobe's
statistics call ``mint`` norm, which has no CPU kernel).

Reading a tensor (``asnumpy``) makes the Python thread wait until MindSpore's asynchronous PyNative
pipeline has computed it: read after every recorded call, the pipeline never runs ahead of Python,
and at L1 that wait was most of the capture overhead. ``hold`` therefore takes a copy of the tensor
on MindSpore's side instead (one more queued op, no wait) and the copies are read in a batch when
the step's capture stops (recorder.Recorder.drain). The copy is ``x * 1``: exact for floating
types (IEEE multiplication by one returns x: signed zeros, infinities, quiet NaNs) and integers;
a bool mask becomes int64 0/1 and is turned back. Only where statistics are asked: md5 and saved
tensors, which need the exact bytes (a signalling NaN's payload), are read at once.
"""
import numpy as np
import mindspore as ms
from mindspore import Tensor, mint

try:  # MindSpore < 2.5 returns lazy StubTensors from ops
    from mindspore.common._stub_tensor import StubTensor
    _FRAMEWORK_TYPES = (Tensor, StubTensor)
except ImportError:
    _FRAMEWORK_TYPES = (Tensor,)

_WIDEN = {ms.bfloat16: ms.float32}
# Taken before numprobe wraps mint (api_wrap.py): the copy is never a recorded call.
_MUL = mint.mul


class Held:
    """A tensor's values as they were when its entry was recorded: `copy` (MindSpore-side, not read
    yet) or `array` (read at once). `orig` gives the dtype spelling and the shape when the entry is
    written; those never change in place, and asking for them earlier would wait for MindSpore."""

    __slots__ = ("orig", "copy", "array")

    def __init__(self, orig, copy, array):
        self.orig, self.copy, self.array = orig, copy, array

    def nbytes(self):
        """Bytes the copy holds (0 when read at once). Waits for the copy's op to be inferred:
        asked only of copies queued a while ago (recorder.py)."""
        return int(self.copy.nbytes) if self.copy is not None else 0


TENSOR_TYPES = _FRAMEWORK_TYPES + (Held,)


def _read(t):
    """numpy values of a framework tensor (bfloat16 widened), or None where they cannot be read."""
    try:
        src = t.astype(_WIDEN[t.dtype]) if t.dtype in _WIDEN else t
        arr = np.ascontiguousarray(np.asarray(src.asnumpy()))
        if np.iscomplexobj(arr):  # summarised by magnitudes, as msprobe
            arr = np.abs(arr)
        return arr
    except Exception:  # a tensor whose values cannot be read here: no statistics, still a leaf
        return None


def hold(t, copy=True):
    """A Held snapshot of tensor t. copy=True: ``t * 1`` queued on MindSpore's side, nothing waited
    for (no dtype or shape is asked: on an op still in flight, even those wait). copy=False, or no
    kernel for the multiplication: read now."""
    if copy:
        try:
            return Held(t, _MUL(t, 1), None)
        except Exception:  # noqa: BLE001 - no kernel for this dtype: read now instead
            pass
    return Held(t, None, _read(t))


def _held_values(h):
    if h.copy is None:
        return h.array
    dtype = h.orig.dtype
    if h.copy.dtype == dtype:
        return _read(h.copy)
    if dtype == ms.bool_:  # bool * 1 is int64 0/1: exactly the mask back
        arr = _read(h.copy)
        return None if arr is None else arr.astype(np.bool_)
    # Another type promoted by the multiplication (none seen in MindSpore 2.10): the original.
    return _read(h.orig)


def to_numpy(t):
    # None as requires_grad: no requires_grad member. msprobe's MindSpore leaves have type, dtype,
    # shape and the statistics only (its torch leaves have requires_grad).
    if isinstance(t, Held):
        arr = _held_values(t)
        t = t.orig
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
