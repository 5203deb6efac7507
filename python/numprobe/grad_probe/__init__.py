"""msprobe's grad_probe task for torch: per-parameter gradient statistics and direction files at
every optimizer step (``PrecisionDebugger(task="grad_probe").monitor(model)``), written by the
engine (src/grad_probe); ``numprobe grad-compare`` compares two runs (docs/capture.md)."""
from .debugger import GradProbeDebugger

__all__ = ["GradProbeDebugger"]
