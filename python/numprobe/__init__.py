"""numprobe: find the first op where two training runs diverge.

Capture (this module) writes msprobe-format dumps: ``dump.json``, ``stack.json``,
``construct.json`` per step and rank. The work happens in C++ (``numprobe._C``); this layer only
wires hooks into PyTorch.
"""
from .debugger import PrecisionDebugger, seed_all
from . import _C  # noqa: F401

__all__ = ["PrecisionDebugger", "seed_all"]
__version__ = "0.1.0"
