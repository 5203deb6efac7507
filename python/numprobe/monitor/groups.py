"""The collector's group ids (numprobe._C.MONITOR_GROUPS), importable without a cycle."""
import importlib

_C = importlib.import_module("numprobe._C")
G = _C.MONITOR_GROUPS
OTHER = G["other"]
