"""The torch front of grad_probe. What msprobe's GradientMonitor does, and how numprobe differs:

- The step is the optimizer's: a pre-hook on every optimizer's ``step()`` counts calls from 0
  (all optimizers share the counter, as in msprobe) and, for a selected step, hands the monitored
  parameters' gradients (``main_grad`` where a parameter has one) to the engine, which computes the
  line of grad_summary_{step}.csv and the direction bits from the gradient's memory and writes the
  files before the optimizer runs.
- torch 2.x: ``torch.optim.optimizer.register_optimizer_step_pre_hook``. torch 1.13 has no global
  optimizer hook (msprobe records nothing there); numprobe wraps ``step`` of every Optimizer class
  defined when ``monitor()`` is called (close() puts them back).
- Gradients are read, never written: training is bitwise unchanged. The engine computes on the
  training thread and writes the files on its own thread: ``flush()``/``close()`` (and the end of
  the process) wait for them.
"""
import atexit
import functools
import importlib
import json

import torch

from .. import _C

NumprobeError = _C.NumprobeError


def _optimizer_classes():
    seen, todo = [], [torch.optim.Optimizer]
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in seen:
                seen.append(s)
                todo.append(s)
    return seen


class GradProbeDebugger:
    """``PrecisionDebugger`` for task ``grad_probe`` (numprobe.debugger.PrecisionDebugger returns
    one). ``monitor(model)`` starts recording; ``start``/``stop``/``step`` do nothing (the optimizer
    decides the step); ``close()`` removes the hooks."""

    def __init__(self, cfg, source, model=None):
        self.task = "grad_probe"
        self._cfg_text = json.dumps(cfg)
        self._source = source
        _C.check_config(self._cfg_text, source)
        self.level = cfg.get("grad_probe", {}).get("grad_level", "L1")
        self._model = model
        self._writer = None
        self._params = []  # (name, parameter) recorded, in named_parameters order
        self._step = -1
        self._hook = None
        self._wrapped = []  # (class, original step) on torch 1.x

    @property
    def dump_path(self):
        return self._writer.dump_path() if self._writer is not None else None

    @property
    def current_step(self):
        return self._step

    def monitor(self, model):
        if not isinstance(model, torch.nn.Module):
            raise NumprobeError(f"grad_probe: monitor() expects a torch.nn.Module, got {type(model).__name__}")
        dist = torch.distributed
        distributed = dist.is_available() and dist.is_initialized()
        rank = dist.get_rank() if distributed else 0
        if self._writer is None:
            self._writer = _C.GradProbe(self._cfg_text, self._source, rank)
            atexit.register(self.flush)
        known = {name for name, _ in self._params}
        self._params += [(n, p) for n, p in model.named_parameters()
                         if n not in known and self._writer.param_selected(n)]
        if distributed and not self._writer.rank_selected(rank):
            return
        self._install()

    def _install(self):
        if self._hook is not None or self._wrapped:
            return
        optimizer_module = importlib.import_module("torch.optim.optimizer")
        register = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
        if register is not None:
            self._hook = register(lambda optimizer, args, kwargs: self._pre_step())
            return
        for cls in _optimizer_classes():
            orig = cls.__dict__.get("step")
            if orig is None:
                continue
            # functools.wraps copies the function's __dict__, torch 1.13's profiler "hooked" flag
            # included, so torch does not wrap the class again.
            @functools.wraps(orig)
            def step(opt, *args, _orig=orig, **kwargs):
                self._pre_step()
                return _orig(opt, *args, **kwargs)

            cls.step = step
            self._wrapped.append((cls, orig))

    def _pre_step(self):
        self._step += 1
        if not self._writer.step_selected(self._step):
            return
        names, grads = [], []
        for name, p in self._params:
            g = p.main_grad if hasattr(p, "main_grad") else p.grad
            if g is None:
                continue
            names.append(name)
            grads.append(g)
        self._writer.record_step(self._step, names, grads)

    # msprobe's other PrecisionDebugger methods: nothing to do for grad_probe.
    def start(self, model=None, token_range=None, rank_id=None):
        pass

    def stop(self):
        pass

    def step(self):
        pass

    def flush(self):
        """Waits until every recorded step's files are on disk."""
        if self._writer is not None:
            self._writer.flush()

    def close(self):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        for cls, orig in reversed(self._wrapped):
            cls.step = orig
        self._wrapped = []
        self.flush()
