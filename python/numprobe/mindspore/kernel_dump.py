"""Level L2 for MindSpore: MindSpore's own kernel dump, converted to msprobe's layout.

Compiled graphs (``GRAPH_MODE``, ``@jit``) run no Python hooks, so kernels are dumped by MindSpore
itself: the debugger writes a dump config (``common_dump_settings`` + ``e2e_dump_settings``,
``saved_data: "tensor"``, the only kind the CPU backend stores) into ``dump_path`` and points
``MINDSPORE_DUMP_CONFIG`` at it. MindSpore reads that variable once per process, when it first
builds a kernel graph, so the debugger must be constructed before the first graph-mode step; what
MindSpore writes lands in ``<dump_path>/mindspore_kernel_dump`` and ``close()`` converts it
(``numprobe._engine.convert_mindspore_dump``, the engine of ``numprobe convert``) into
``<dump_path>/step<N>/rank<R>/`` (docs/capture.md, "MindSpore graph mode").
"""
import atexit
import json
import os
import sys

from .. import _engine
from ..capture_args import config_from_arguments
from .debugger import NumprobeError, PrecisionDebugger

DUMP_CONFIG_VARIABLE = "MINDSPORE_DUMP_CONFIG"
RAW_DIR = "mindspore_kernel_dump"
CONFIG_NAME = "mindspore_dump_config.json"


def resolve_level(config_path, task, dump_path, level, step):
    """(level, engine session over the resolved config) for PrecisionDebugger's arguments."""
    cfg, source = config_from_arguments(config_path, task, dump_path, level, step,
                                        _engine.check_config, NumprobeError)
    session = _engine.Session(json.dumps(cfg), source, "mindspore")
    return session.level(), session


def _has_kernel_data(raw):
    """True when some rank_<N>/<net>/<graph>/<iteration>/ under raw holds a file."""
    for rank in _subdirs(raw):
        for net in _subdirs(rank):
            if os.path.basename(net) in ("execution_order", "graphs"):
                continue
            for graph in _subdirs(net):
                for it in _subdirs(graph):
                    if os.listdir(it):
                        return True
    return False


def _subdirs(d):
    try:
        return [os.path.join(d, n) for n in sorted(os.listdir(d)) if os.path.isdir(os.path.join(d, n))]
    except OSError:
        return []


class KernelDumpDebugger(PrecisionDebugger):
    """``PrecisionDebugger(level="L2")`` for MindSpore. ``start``/``stop``/``step`` are accepted
    for msprobe's loop shape; MindSpore dumps every graph iteration it runs while the process
    lives, and ``close()`` (also at exit) converts them all: step N of the result is MindSpore's
    iteration N (each graph launch of a training step; an optimizer graph is counted in the
    iteration after its gradient graph)."""

    def __init__(self, config_path=None, task=None, dump_path=None, level=None, step=None,
                 model=None):
        self.level, session = resolve_level(config_path, task, dump_path, level, step)
        self.task = session.task()
        if self.task not in ("statistics", "tensor"):
            raise NumprobeError(f"level L2 for MindSpore: task {self.task} is not available "
                                "(statistics or tensor)")
        root = os.path.abspath(session.dump_path())
        self._root = root
        self._raw = os.path.join(root, RAW_DIR)
        self._model = model
        self._closed = False
        self.report = None
        if os.path.exists(self._raw) and os.listdir(self._raw):
            raise NumprobeError(f"{self._raw}: already holds a MindSpore dump; numprobe never "
                                "writes over one (choose another dump_path, or convert it with "
                                "`numprobe convert`)")
        config_file = os.path.join(root, CONFIG_NAME)
        current = os.environ.get(DUMP_CONFIG_VARIABLE)
        if current and os.path.abspath(current) != config_file:
            raise NumprobeError(
                f"{DUMP_CONFIG_VARIABLE} already points at {current}: MindSpore reads it once per "
                "process, so a second kernel dump config cannot take effect here (unset it, or "
                "use one L2 debugger per process)")
        os.makedirs(self._raw, exist_ok=True)
        settings = {
            "common_dump_settings": {
                "dump_mode": 0, "path": self._raw, "net_name": "Net", "iteration": "all",
                # The CPU backend refuses "statistic" ("only supported on GPU and Ascend"): the
                # tensors are stored and numprobe computes the statistics when converting.
                "saved_data": "tensor", "input_output": 0, "kernels": [],
                "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
            },
            "e2e_dump_settings": {"enable": True, "trans_flag": True},
        }
        with open(config_file, "w", encoding="utf-8") as f:
            json.dump(settings, f, indent=4)
        os.environ[DUMP_CONFIG_VARIABLE] = config_file
        self._config_file = config_file
        PrecisionDebugger._instance = self
        atexit.register(self._close_at_exit)

    # msprobe's loop shape; MindSpore's dump follows its own iterations.
    def start(self, model=None, token_range=None, rank_id=None):
        if self._closed:
            raise NumprobeError("this L2 debugger was closed: MindSpore's dump config is read "
                                "once per process")

    def stop(self):
        pass

    def step(self):
        pass

    def set_init_step(self, step):
        pass

    @property
    def dump_path(self):
        return self._root

    @property
    def current_step(self):
        return 0

    def flush(self):
        pass

    def stats(self):
        return dict(self.report or {})

    def close(self):
        """Converts what MindSpore dumped into <dump_path>/step<N>/rank<R>/; returns the
        conversion's report (ranks, steps, entries, tensor_files, rank_dirs, problems)."""
        if self._closed:
            return self.report
        self._closed = True
        if PrecisionDebugger._instance is self:
            PrecisionDebugger._instance = None
        if not _has_kernel_data(self._raw):
            raise NumprobeError(
                f"{self._raw}: MindSpore wrote no kernel data. MindSpore reads "
                f"{DUMP_CONFIG_VARIABLE} once, when this process first runs a compiled graph: "
                "construct PrecisionDebugger(level='L2') before the first graph-mode step (or "
                f"export {DUMP_CONFIG_VARIABLE}={self._config_file} before starting Python)")
        self.report = _engine.convert_mindspore_dump(self._raw, self._root,
                                                     tensors=self.task == "tensor")
        for path, what in self.report["problems"]:
            print(f"numprobe: MindSpore dump: {path}: {what}", file=sys.stderr)
        return self.report

    def _close_at_exit(self):
        try:
            self.close()
        except NumprobeError as e:
            print(f"numprobe: {e}", file=sys.stderr)
