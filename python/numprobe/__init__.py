"""numprobe: find the first op where two training runs diverge.

Capture (``PrecisionDebugger``) writes msprobe-format dumps: ``dump.json``, ``stack.json``,
``construct.json`` per step and rank. The work happens in C++ (``numprobe._C``); this layer only
wires hooks into PyTorch.

``ConfigChecker`` (numprobe.config_check) packs a run's setup (environment, packages,
hyper-parameters, weights, data, random calls) and is pure Python: it imports neither ``_C`` nor
torch until a model is given, so it works beside any torch build. Capture and ``_C`` load on first
use (PEP 562). ``PrecisionDebugger`` and ``seed_all`` pick the torch capture or the MindSpore one
(numprobe.frontend); the MindSpore capture and ``_engine`` (the engine without libtorch) never
import torch.
"""
import importlib

from .config_check import ConfigChecker

__all__ = ["PrecisionDebugger", "seed_all", "ConfigChecker", "TrainerMon"]
__version__ = "0.1.0"

_LAZY = {"PrecisionDebugger": ".frontend", "seed_all": ".frontend", "TrainerMon": ".frontend",
         "_C": "._C", "_engine": "._engine"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'numprobe' has no attribute {name!r}")
    mod = importlib.import_module(module, __name__)
    value = mod if name in ("_C", "_engine") else getattr(mod, name)
    globals()[name] = value
    return value
