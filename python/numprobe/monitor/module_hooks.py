"""Activation hooks of TrainerMon: module inputs/outputs and their gradients (xy_distribution),
the module structure (print_struct) and the modules' call stacks (stack_info)."""
import csv
import inspect
import json
import logging
import os
import sys
import traceback

import torch

from .groups import G
from .names import chunk_prefix, slot_names, squash_param_name
from .schedule import target_module_name

log = logging.getLogger("numprobe.monitor")

_FORWARD_TAKES_KWARGS = "with_kwargs" in inspect.signature(torch.nn.Module.register_forward_hook).parameters


def _tensors(value):
    """The slots of a module's result or gradients as msprobe's build_tbtag_tensor_map names them:
    a tensor is one slot; every element of a tuple or list is one (a non-tensor, such as an LSTM's
    (h, c) or a missing gradient, gives None: a row of nan); anything else (a dict, None) none."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, torch.Tensor) else None for v in value]
    return []


_graph_task_id = getattr(torch._C, "_current_graph_task_id", None)


def _recomputing():
    """Whether a forward runs again inside backward (activation checkpointing): msprobe skips
    those. torch >= 2 says whether autograd is running; torch 1.x: checkpoint's frames."""
    if _graph_task_id is not None:
        return _graph_task_id() != -1
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        # checkpoint's first forward runs in its forward; the recompute in its backward (reentrant)
        # or its saved-tensor unpack hook (non-reentrant)
        if code.co_filename.endswith(_CHECKPOINT_FILE) and (
                code.co_name in ("backward", "recompute_fn") or "unpack" in code.co_name):
            return True
        frame = frame.f_back
    return False


_CHECKPOINT_FILE = os.path.join("torch", "utils", "checkpoint.py")


class _CloningBackwardHooks:
    """msprobe's wrap of BackwardHook.setup_input_hook/setup_output_hook: the tensors a full
    backward hook hands on are cloned, so an in-place op after a hooked module (ResNet's
    ReLU(inplace=True) after a BatchNorm) does not modify a hook's view, which autograd refuses.
    Values are unchanged. Installed while module backward hooks are, undone after."""
    users = 0
    originals = None

    @classmethod
    def acquire(cls):
        cls.users += 1
        if cls.users > 1:
            return
        hooks = torch.utils.hooks.BackwardHook
        cls.originals = (hooks.setup_input_hook, hooks.setup_output_hook)

        def cloning(setup):
            def wrapped(*args, **kwargs):
                # The clones stay in the graph (clone is differentiable): gradients flow as before.
                out = setup(*args, **kwargs)
                if isinstance(out, torch.Tensor):
                    return out.clone()
                if isinstance(out, tuple):
                    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in out)
                return out
            return wrapped

        hooks.setup_input_hook = cloning(cls.originals[0])
        hooks.setup_output_hook = cloning(cls.originals[1])

    @classmethod
    def release(cls):
        cls.users -= 1
        if cls.users == 0 and cls.originals is not None:
            hooks = torch.utils.hooks.BackwardHook
            hooks.setup_input_hook, hooks.setup_output_hook = cls.originals
            cls.originals = None


def _struct(values):
    """msprobe's get_param_struct: the shapes and dtypes of one slot."""
    if isinstance(values, (tuple, list)):
        out = {"config": f"{type(values).__name__}[{len(values)}]"}
        for i, x in enumerate(values):
            out[i] = (f"size={tuple(x.shape)}, dtype={x.dtype}" if torch.is_tensor(x)
                      else f"{type(x)}")
        return out
    if torch.is_tensor(values):
        return {"config": "tensor", "tensor": f"size={tuple(values.shape)}, dtype={values.dtype}"}
    return {"config": f"{type(values)}"}


class _Context:
    __slots__ = ("name", "micro_step")

    def __init__(self, name):
        self.name = name
        self.micro_step = 0


class ModuleHooks:
    def __init__(self, mon):
        self.mon = mon
        self.handles = []
        self.structs = {}  # print_struct: module name -> slot structures
        self.stacks = {}   # stack_info: module name -> call stack of its first forward
        self.stack_written = False
        self.cloning = False  # this instance holds _CloningBackwardHooks

    # ---- which modules -------------------------------------------------------------------
    def _target_name(self, module_name, prefix):
        return target_module_name(module_name, prefix, self.mon.config, squash_param_name)

    def install(self):
        c = self.mon.config
        for vpp, chunk in enumerate(self.mon.model):
            prefix = chunk_prefix(vpp)
            for module_name, module in chunk.named_modules():
                if c["stack_info"]:
                    self._hook(module.register_forward_hook(
                        self._stack_hook(prefix + squash_param_name(module_name, c["squash_name"]))))
                name = self._target_name(module_name, prefix)
                if not name or not (c["xy_distribution"] or c["print_struct"]):
                    continue
                if not c["backward_only"]:
                    self._register_forward(module, _Context(name))
                if not c["forward_only"]:
                    self._register_backward(module, _Context(name))

    def _hook(self, handle):
        self.handles.append(handle)

    def _register_backward(self, module, ctx):
        # A module with a legacy register_backward_hook cannot take a full one (torch refuses
        # both): msprobe skips it, and so does numprobe, saying so.
        try:
            self._hook(module.register_full_backward_hook(self._backward_hook(ctx)))
        except RuntimeError as e:
            log.warning("numprobe monitor: %s: gradients not monitored: %s", ctx.name, e)
            return
        if not self.cloning:
            _CloningBackwardHooks.acquire()
            self.cloning = True

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles.clear()
        if self.cloning:
            _CloningBackwardHooks.release()
            self.cloning = False

    # ---- hooks ---------------------------------------------------------------------------
    def _register_forward(self, module, ctx):
        hook = self._forward_hook(ctx)
        if _FORWARD_TAKES_KWARGS:
            self._hook(module.register_forward_hook(hook, with_kwargs=True))
        else:  # torch 1.x: positional arguments only
            self._hook(module.register_forward_hook(lambda m, a, o: hook(m, a, {}, o)))

    def _forward_hook(self, ctx):
        mon = self.mon
        group = G["actv"]

        def hook(module, args, kwargs, output):
            if not module.training or not mon.collecting() or _recomputing():
                return
            inputs = [a for a in args if torch.is_tensor(a)]
            inputs += [v for v in kwargs.values() if torch.is_tensor(v)]
            outputs = _tensors(output)
            if mon.config["print_struct"]:
                self.structs.setdefault(ctx.name, {}).update(
                    {"input": _struct(inputs), "output": _struct(output)})
                return
            self._record(group, ctx, (("input", inputs), ("output", outputs)))

        return hook

    def _backward_hook(self, ctx):
        mon = self.mon
        group = G["actv_grad"]

        def hook(module, grad_input, grad_output):
            if not mon.collecting():
                return
            if mon.config["print_struct"]:
                self.structs.setdefault(ctx.name, {}).update(
                    {"input_grad": _struct(grad_input), "output_grad": _struct(grad_output)})
                return
            self._record(group, ctx, (("input", _tensors(grad_input)),
                                      ("output", _tensors(grad_output))))

        return hook

    def _record(self, group, ctx, slots):
        """One micro-batch of a module: a row per tensor of each (slot, tensors), then the next
        micro step. A None (an input gradient nobody needs, attention weights not asked for) is a
        row of nan as msprobe writes it, never an anomaly."""
        mon = self.mon
        add = mon.collector.add
        with torch.no_grad():
            for slot, tensors in slots:
                for row, t in zip(slot_names(ctx.name, slot, len(tensors)), tensors):
                    add(group, row, ctx.micro_step, t)
        ctx.micro_step = (ctx.micro_step + 1) % mon.micro_batch_number

    def _stack_hook(self, name):
        mon = self.mon

        def hook(module, args, output):
            if self.stack_written or name in self.stacks or not mon.collecting():
                return
            frames = [f for f in traceback.extract_stack()[:-1]
                      if "/torch/" not in f.filename and "/numprobe/monitor/" not in f.filename]
            self.stacks[name] = ";".join(f"{f.filename}[{f.lineno}] {f.name}" for f in frames)

        return hook

    # ---- step boundaries -------------------------------------------------------------------
    def before_step(self):
        """print_struct: after the first step's forward and backward, the structure is written
        and training stops (msprobe raises there too)."""
        mon = self.mon
        if mon.config["print_struct"] and self.structs:
            out_dir = os.path.join(mon.output_base, "module_struct", f"rank{mon.rank}")
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "module_struct.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.structs, f, indent=1, default=str)
            raise RuntimeError(f"numprobe monitor: print_struct: module structure written to {path}; "
                               "exit after the first monitored step (as msprobe)")

    def after_written(self):
        """stack_info: the modules' stacks of the first written step, once."""
        mon = self.mon
        if not mon.config["stack_info"] or self.stack_written or mon.collector is None:
            return
        self.stack_written = True
        path = os.path.join(mon.collector.run_dir(), "stack_info.csv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["module_name", "stack_info"])
            for name, stack in self.stacks.items():
                w.writerow([name, stack])

