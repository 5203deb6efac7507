"""PrecisionDebugger for MindSpore (PyNative mode): msprobe's capture API over numprobe's engine.

``numprobe.PrecisionDebugger`` hands a ``mindspore.nn.Cell`` (or a script that imported MindSpore
and not torch) to this class; ``numprobe.mindspore.PrecisionDebugger`` names it directly, as
``msprobe.mindspore.PrecisionDebugger`` does. No torch is imported: the engine is
``numprobe._engine``, which links no libtorch.
"""
import atexit
import json
import os
import random

import numpy as np
import mindspore as ms

from .. import _engine
from ..capture_args import config_from_arguments, warn_other_framework_fields
from . import values
from .api_wrap import ApiWrapper, warn_unhooked_list_items
from .cell_hooks import CellHooks
from .recorder import Recorder

NumprobeError = _engine.NumprobeError


def _check_pynative(model):
    if ms.get_context("mode") != ms.PYNATIVE_MODE:
        # No cell hook reaches a compiled graph on the CPU: forward hooks are skipped silently and
        # msprobe's way (TensorDump ops inserted into the cells, MindSpore >= 2.7) has no CPU
        # kernel ("Unsupported op [TensorDump] on CPU").
        raise NumprobeError("numprobe's MindSpore capture of cells and APIs (L0, L1, mix) runs in "
                            "PyNative mode; the context is in GRAPH_MODE, where MindSpore 2.10 "
                            "runs no cell hook and its CPU backend has no TensorDump kernel (what "
                            "msprobe's graph-mode L0 inserts). Use level L2 (MindSpore's kernel "
                            "dump, converted to msprobe's layout) for the compiled graph, or "
                            "ms.set_context(mode=ms.PYNATIVE_MODE) for L0/L1/mix")
    if model is not None and not isinstance(model, ms.nn.Cell):
        raise NumprobeError(f"start(model): a mindspore.nn.Cell is needed, got {type(model).__name__}")
    if model is not None:
        for path, cell in model.cells_and_names():
            if getattr(cell.construct, "__wrapped_by_jit__", False):
                # Seen on MindSpore 2.10: the hooks of the cells inside reach the graph compiler,
                # which stops the user's step with a TypeError about augmented assignment.
                name = f"Cell.{path}.{type(cell).__name__}" if path else type(cell).__name__
                raise NumprobeError(
                    f"start(model): {name}'s construct is compiled by @mindspore.jit (a graph "
                    "inside PyNative): MindSpore runs no cell hook or API wrapper inside a "
                    "compiled graph, and the hooks make its compilation fail. Remove @jit from "
                    "it while dumping L0/L1/mix, or dump the compiled graph with level L2")


class PrecisionDebugger:
    """msprobe's ``PrecisionDebugger(config_path, task, dump_path, level, step)`` for MindSpore.

    Levels L0 (cells, forward and backward), L1 (APIs of ``ops``, ``mint``,
    ``mint.nn.functional``, ``Tensor`` and the model's primitives) and mix (both); tasks statistics
    (summary_mode md5 too), tensor and overflow_check; list/scope/step/rank filters and data_mode
    as the torch capture.
    """

    _instance = None

    def __new__(cls, config_path=None, task=None, dump_path=None, level=None, step=None,
                model=None):
        # Level L2 is MindSpore's own kernel dump (kernel_dump.py): another class, same call.
        if cls is PrecisionDebugger:
            from .kernel_dump import KernelDumpDebugger, resolve_level
            if resolve_level(config_path, task, dump_path, level, step)[0] == "L2":
                return super().__new__(KernelDumpDebugger)
        return super().__new__(cls)

    def __init__(self, config_path=None, task=None, dump_path=None, level=None, step=None,
                 model=None):
        cfg, source = config_from_arguments(config_path, task, dump_path, level, step,
                                            _engine.check_config, NumprobeError)
        warn_other_framework_fields(cfg, source, "mindspore")
        section = cfg.get(cfg.get("task") or "statistics")
        self._list = section.get("list") if isinstance(section, dict) else None
        self._source = source
        if PrecisionDebugger._instance is not None:
            PrecisionDebugger._instance.close()
        self._session = _engine.Session(json.dumps(cfg), source, "mindspore")
        self._session.set_adapter(values.TENSOR_TYPES, values.to_numpy, values.describe,
                                  "mindspore.Tensor")
        self.level = self._session.level()
        self.task = self._session.task()
        if self.level not in ("L0", "L1", "mix"):
            raise NumprobeError(f"{source}: level {self.level} is not available for MindSpore "
                                "(numprobe captures L0, L1 and mix in PyNative mode, and L2 "
                                "through MindSpore's kernel dump)")
        self._recorder = Recorder(self._session)
        self._cells = CellHooks(self._recorder)
        self._apis = None
        self._model = model
        self._rank_set = False
        self._closed = False
        PrecisionDebugger._instance = self
        atexit.register(self.close)

    # ---- msprobe API ---------------------------------------------------------------------------
    def start(self, model=None, token_range=None, rank_id=None):
        model = model if model is not None else self._model
        _check_pynative(model)
        if not self._rank_set:
            self._session.set_rank(self._detect_rank(rank_id))
            self._rank_set = True
        if self.level in ("L0", "mix"):
            if model is None:
                raise NumprobeError(f"level {self.level} dumps cells: pass the model to "
                                    "PrecisionDebugger(model=...) or start(model)")
            self._cells.install(model)
        if self.level in ("L1", "mix") and self._apis is None:
            self._apis = ApiWrapper(self._recorder)
            self._apis.install(model)
            # the hooked set is known once installed (primitives come from the model)
            warn_unhooked_list_items(self._list, self._apis.hooked, self._source)
        self._model = model
        self._session.start()

    def stop(self):
        self._session.stop()

    def step(self):
        self._session.advance_step()
        self._recorder.new_step()

    def set_init_step(self, step):
        self._session.set_step(int(step))

    @property
    def dump_path(self):
        return self._session.dump_path()

    @property
    def current_step(self):
        return self._session.step()

    def flush(self):
        self._session.flush()
        err = self._session.writer_error()
        if err:
            raise NumprobeError(err)

    def stats(self):
        return self._session.stats()

    def close(self):
        """Stops, writes what is queued, and takes every hook and wrapper off."""
        if self._closed:
            return
        self._closed = True
        if self._apis is not None:
            self._apis.uninstall()
            self._apis = None
        self._cells.uninstall()
        self._session.stop()
        self._session.flush()
        if PrecisionDebugger._instance is self:
            PrecisionDebugger._instance = None

    @staticmethod
    def _detect_rank(rank_id):
        if rank_id is not None:
            return int(rank_id)
        for var in ("RANK_ID", "RANK"):
            if os.environ.get(var, "").isdigit():
                return int(os.environ[var])
        return -1


def seed_all(seed=1234, mode=False, rm_dropout=False):
    """msprobe's seed_all for MindSpore: Python, numpy and MindSpore seeds; mode=True asks for
    deterministic kernels. rm_dropout is accepted and ignored (numprobe does not patch dropout
    for MindSpore yet)."""
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    ms.set_seed(seed)
    if mode:
        ms.set_context(deterministic="ON")
