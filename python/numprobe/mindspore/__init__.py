"""numprobe's MindSpore capture (PyNative mode), as ``msprobe.mindspore``:
``from numprobe.mindspore import PrecisionDebugger, seed_all``. Needs MindSpore, not torch; the
engine is ``numprobe._engine``. docs/capture.md, "MindSpore".
"""
from .debugger import NumprobeError, PrecisionDebugger, seed_all

__all__ = ["PrecisionDebugger", "seed_all", "NumprobeError"]
