"""numprobe.TrainerMon for MindSpore (PyNative): msprobe's monitor config on a ``nn.Cell`` trained
with a MindSpore optimizer, written by the same engine sink as the torch TrainerMon
(numprobe._engine.MonitorCollector: CSV or TensorBoard files, anomaly.json). docs/monitor.md,
"MindSpore".

Where each metric comes from (nothing here changes a value the training computes):
  - actv / actv_grad: ``Cell.register_forward_hook`` and ``Cell.register_backward_hook`` on the
    target cells (the gradients of a cell's inputs and outputs, None where MindSpore computes
    none: a row of nan, as msprobe);
  - grad_unreduced (acc_grad): ``Parameter.register_hook``, the gradient as autodiff produced it;
  - grad_reduced, exp_avg/exp_avg_sq, param_origin/param_updated, mg_direction, update ratios:
    forward pre- and post-hooks on the optimizer Cell. Its call (``optimizer(grads)``) ends a
    training step, as ``optimizer.step()`` does for torch; the gradients are the call's argument,
    aligned with ``optimizer.parameters``; the moments are nn.Adam's ``moment1``/``moment2`` or
    AdamWeightDecay's (and Lamb's) ``moments1``/``moments2``.
Each tensor reaches the engine as a numpy array over its values (asnumpy: a view of a host
tensor), summarised by the engine (float64). PyNative runs ops asynchronously: asnumpy waits for
the tensor, so a read inside a hook would stall the forward or backward at every hooked cell and
parameter. The hooks therefore only keep the tensors; the optimizer's pre-hook (backward done)
reads them all, in call order, with one wait. Graph mode (GRAPH_MODE, a jitted train step) runs no Python hooks: nothing would be
recorded, so set_monitor refuses it.
"""
import logging
import warnings

import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

from .. import _engine
from ..monitor.names import chunk_prefix, slot_names
from ..monitor.schedule import (MonitorSchedule, check_set_monitor_args, target_module_name,
                                target_params)
from .values import host_array

log = logging.getLogger("numprobe.monitor")

G = _engine.MONITOR_GROUPS
NumprobeError = _engine.NumprobeError

# The Adam moments by the attribute names MindSpore's optimizers keep them under: (m, v).
_MOMENTS = (("moment1", "moment2"), ("moments1", "moments2"))


def _rank():
    try:
        from mindspore.communication import GlobalComm, get_rank
        return get_rank() if GlobalComm.INITED else 0
    except Exception:  # no communication package, or not initialised: one process
        return 0


def _array(t):
    return None if t is None else host_array(t)


def _squash(name, enable):
    return _engine.monitor_squash_name(name, enable)


def _tensors(value):
    """The slots of a cell's result or gradients (as the torch TrainerMon names them): a tensor is
    one slot, every element of a tuple or list one (a non-tensor gives None: a row of nan)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, Tensor) else None for v in value]
    return []


class TrainerMon(MonitorSchedule):
    """msprobe's ``TrainerMon(config_file_path, process_group=None, params_have_main_grad=True)``
    for MindSpore. ``process_group`` and ``params_have_main_grad`` are accepted for msprobe's
    scripts (MindSpore parameters keep no gradient: the optimizer's argument is read)."""

    def __init__(self, config_file_path, process_group=None, params_have_main_grad=True,
                 opt_ty=None):
        self._init_schedule(_engine, _rank(), config_file_path, process_group,
                            params_have_main_grad, opt_ty)
        _refuse_unsupported(self.config, self.config_file_path)
        self.model = []
        self.optimizer = None
        self.micro_batch_number = 1
        self._handles = []       # hooks of the model (removed when monitoring stops)
        self._opt_handles = []   # the optimizer's pre/post hooks (kept: they count the steps)
        self._params = []        # [(parameter, row name)] in the model's order
        self._opt_index = {}     # id(parameter) -> its index in optimizer.parameters
        self._micro = {}         # row name -> micro step of its gradient hook
        self._collecting_now = False
        self._deferred = []      # [(group, row name, micro step, tensor)] read at the pre-hook
        self._warned = set()

    # ---- msprobe's API -------------------------------------------------------------------
    def set_monitor(self, model, optimizer=None, grad_acc_steps=1, tp_group=None, dp_group=None,
                    start_iteration=0):
        """Hooks ``model`` (a Cell or a list of Cells, one per virtual pipeline stage) and
        ``optimizer`` (a ``mindspore.nn.Optimizer``). msprobe's MindSpore order is (model,
        optimizer, grad_acc_steps); the torch order (model, grad_acc_steps, optimizer) works too."""
        if isinstance(grad_acc_steps, nn.Optimizer) and not isinstance(optimizer, nn.Optimizer):
            grad_acc_steps, optimizer = (optimizer if optimizer is not None else 1), grad_acc_steps
        if not isinstance(optimizer, nn.Optimizer):
            raise TypeError("numprobe TrainerMon.set_monitor: a mindspore.nn.Optimizer is required "
                            f"(its call ends a monitored training step), got "
                            f"{type(optimizer).__name__}")
        chunks = list(model) if isinstance(model, (list, tuple)) else [model]
        for chunk in chunks:
            if not isinstance(chunk, nn.Cell):
                raise TypeError(f"numprobe TrainerMon.set_monitor: a mindspore.nn.Cell is needed, "
                                f"got {type(chunk).__name__}")
        check_set_monitor_args(grad_acc_steps, start_iteration)
        if ms.get_context("mode") != ms.PYNATIVE_MODE:
            raise NumprobeError("numprobe TrainerMon (MindSpore): the context is GRAPH_MODE, where "
                                "MindSpore runs no Python hooks, so nothing would be monitored; "
                                "train in PYNATIVE_MODE (ms.set_context(mode=ms.PYNATIVE_MODE))")
        if self.optimizer is not None:  # set_monitor again: the old hooks go first
            self._stop()
            self._remove(self._opt_handles)
        self.model = chunks
        self.optimizer = optimizer
        self.micro_batch_number = grad_acc_steps
        self.step = start_iteration
        self._opt_index = {id(p): i for i, p in enumerate(optimizer.parameters)}
        self._opt_handles = [optimizer.register_forward_pre_hook(self._optimizer_pre_hook),
                             optimizer.register_forward_hook(self._optimizer_post_hook)]
        if self.monitoring:
            self._start()

    def generate_wgrad_metrics(self):
        """The weight-gradient metrics of the last written step: (reduced, unreduced), each
        {tag: {op: value}} (MindSpore parameters keep no gradient to read now)."""
        return self._rows_of("grad_reduced", "post_grad"), self._rows_of("grad_unreduced",
                                                                           "acc_grad")

    # ---- hooks in and out ----------------------------------------------------------------
    def _start(self):
        if not self._rank_monitored():
            return
        if self.collector is None:
            self.collector = _engine.MonitorCollector(self._config_text, self.config_file_path,
                                                      self.output_base, self.rank)
            self.collector.set_group(0, [self.rank])
        self._register_params()
        cells = self._target_cells()
        self._check_targets(cells)
        c = self.config
        if c["wg_distribution"]:
            self._hook_weight_grads()
        if c["xy_distribution"]:
            for name, cell in cells:
                self._hook_cell(name, cell)

    def _stop(self):
        self._remove(self._handles)
        self._deferred.clear()

    @staticmethod
    def _remove(handles):
        for h in handles:
            h.remove()
        handles.clear()

    def _register_params(self):
        self._params = target_params((chunk.parameters_and_names() for chunk in self.model),
                                     self.config, _squash)

    def _target_cells(self):
        """[(row name, cell)] of the cells whose activations are recorded, picked as the torch
        TrainerMon picks modules."""
        out = []
        for vpp, chunk in enumerate(self.model):
            for cell_name, cell in chunk.cells_and_names():
                name = target_module_name(cell_name, chunk_prefix(vpp), self.config, _squash)
                if name:
                    out.append((name, cell))
        return out

    def _check_targets(self, cells):
        """A target that names no cell and no parameter is a named warning; when no target names
        anything, nothing would be written: an error naming the file."""
        targets = list(self.config["targets"].keys())
        if not targets:
            return
        names = [n for _, n in self._params] + [n for n, _ in cells]
        cell_names = {cell_name for chunk in self.model for cell_name, _ in chunk.cells_and_names()}
        param_names = {p for chunk in self.model for p, _ in chunk.parameters_and_names()}
        unmatched = [t for t in targets
                     if t not in cell_names and not any(p.startswith(t) for p in param_names)
                     and not any(n == t or n.startswith(t) or n.split(":", 1)[-1] == t
                                 for n in names)]
        if len(unmatched) == len(targets):
            raise NumprobeError(f"{self.config_file_path}: targets: none of {unmatched} names a "
                                "cell or a parameter of the model: nothing would be monitored "
                                "(names as model.cells_and_names() and parameters_and_names() "
                                "give them, optionally prefixed \"0:\")")
        for t in unmatched:
            warnings.warn(f"numprobe monitor: {self.config_file_path}: target {t!r} names no cell "
                          "or parameter of the model: nothing is monitored for it",
                          stacklevel=3)

    def _hook_weight_grads(self):
        """Unreduced weight gradients: a hook on each parameter (the gradient as computed, before
        any reduce), read at the last micro-batch or at every one with monitor_mbs_grad."""
        mbs = self.config["monitor_mbs_grad"]
        group = G["grad_unreduced"]
        for param, name in self._params:
            self._micro[name] = 0

            def hook(grad, name=name):
                micro = self._micro[name]
                self._micro[name] = (micro + 1) % self.micro_batch_number
                if self.collecting() and (mbs or micro + 1 == self.micro_batch_number):
                    self._deferred.append((group, name, micro if mbs else -1, grad))
                # None: the gradient goes on unchanged

            self._handles.append(param.register_hook(hook))

    def _hook_cell(self, name, cell):
        c = self.config
        micro = {"forward": 0, "backward": 0}

        def next_micro(kind):
            m = micro[kind]
            micro[kind] = (m + 1) % self.micro_batch_number
            return m

        def forward(cell_, args, kwargs, output):
            if not self.collecting():
                return
            if not cell_.training:  # msprobe records cells in training mode only
                self._warn_once(name, f"numprobe monitor: cell {name!r} is not in training mode "
                                      "(cell.set_train()): its activations are not monitored")
                return
            inputs = [a for a in args if isinstance(a, Tensor)]
            inputs += [v for v in (kwargs or {}).values() if isinstance(v, Tensor)]
            self._record(G["actv"], name, next_micro("forward"),
                         (("input", inputs), ("output", _tensors(output))))

        def backward(cell_, grad_input, grad_output):
            if not self.collecting():
                return
            self._record(G["actv_grad"], name, next_micro("backward"),
                         (("input", _tensors(grad_input)), ("output", _tensors(grad_output))))

        if not c["backward_only"]:
            self._handles.append(cell.register_forward_hook(forward, with_kwargs=True))
        if not c["forward_only"]:
            self._handles.append(cell.register_backward_hook(backward))

    def _record(self, group, name, micro_step, slots):
        for slot, tensors in slots:
            for row, t in zip(slot_names(name, slot, len(tensors)), tensors):
                self._deferred.append((group, row, micro_step, t))

    def _read_deferred(self):
        """The hooks' tensors, summarised in the order the hooks ran. A tensor changed in place
        between its hook and the optimizer's call is read with its later values (MindSpore's
        cells and autodiff make new tensors; an in-place op on a monitored output would)."""
        add = self.collector.add
        for group, name, micro_step, t in self._deferred:
            add(group, name, micro_step, _array(t))
        self._deferred.clear()

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    # ---- the optimizer step ----------------------------------------------------------------
    def _optimizer_pre_hook(self, optimizer, args):
        self._collecting_now = self.collecting()
        if self._collecting_now and self.collector is not None:
            self._read_deferred()
            grads = args[0] if args and isinstance(args[0], (tuple, list)) else None
            self._before_step(optimizer, grads)
        else:
            self._deferred.clear()

    def _optimizer_post_hook(self, optimizer, args, output):
        if self._collecting_now and self.collector is not None and self.config["param_distribution"]:
            self.collector.add_many(G["param_updated"], [n for _, n in self._params],
                                    [_array(p) for p, _ in self._params])
        self._end_step()

    def _of_optimizer(self, values):
        """values (aligned with optimizer.parameters) for the monitored parameters: None where a
        parameter is not the optimizer's."""
        out = []
        for param, _ in self._params:
            i = self._opt_index.get(id(param))
            out.append(None if values is None or i is None or i >= len(values) else values[i])
        return out

    def _moments(self, optimizer):
        for m_attr, v_attr in _MOMENTS:
            m, v = getattr(optimizer, m_attr, None), getattr(optimizer, v_attr, None)
            if m is not None and v is not None:
                return m, v
        return None, None

    def _before_step(self, optimizer, grads):
        c = self.config
        add_many = self.collector.add_many
        names = [n for _, n in self._params]
        grad_of = self._of_optimizer(grads)
        if c["wg_distribution"]:
            add_many(G["grad_reduced"], names, [_array(g) for g in grad_of])
        m, v = self._moments(optimizer)
        if (c["mv_distribution"] or c["ur_distribution"] or c["mg_direction"]) and m is None:
            self._warn_once("moments", f"numprobe monitor: {type(optimizer).__name__} keeps no "
                                       "Adam moments (moment1/moment2, moments1/moments2): "
                                       "exp_avg, exp_avg_sq, mg_direction and update ratios are "
                                       "not written")
        has_moments = m is not None
        # Before the first update the moments are zeros: no rows, as torch's empty Adam state.
        stepped = has_moments and _has_stepped(optimizer)
        m_of = self._of_optimizer(m if stepped else None)
        v_of = self._of_optimizer(v if stepped else None)
        if c["mv_distribution"] and stepped:
            add_many(G["exp_avg"], names, [_array(x) for x in m_of])
            add_many(G["exp_avg_sq"], names, [_array(x) for x in v_of])
        if c["param_distribution"]:
            add_many(G["param_origin"], names, [_array(p) for p, _ in self._params])
        if c["mg_direction"] and has_moments:
            for name, g, mm in zip(names, grad_of, m_of):
                if g is None:
                    continue
                ma = _array(mm)
                if self.step == 0 or ma is None or ma.size == 0:
                    self.collector.add_value(G["other"], name, 1.0)
                else:  # msprobe: ((sign(g)·sign(m)).sum()/N + 1)/2
                    agree = np.sum(np.sign(_array(g)) * np.sign(ma), dtype=np.float64)
                    self.collector.add_value(G["other"], name, (agree / ma.size + 1) / 2)
        if c["ur_distribution"] and stepped:
            self._update_ratio(optimizer, names, m_of, v_of)

    def _update_ratio(self, optimizer, names, m_of, v_of):
        """Adam's update m̂/(√v̂+eps) and ratio m̂/√v̂ (msprobe's ur_distribution), as rows
        "<name>.adam_update" and "<name>.adam_ratio" of the group other; only where the optimizer
        keeps Adam's bias-correction powers (nn.Adam's beta1_power/beta2_power) and a step was
        taken."""
        b1p, b2p = getattr(optimizer, "beta1_power", None), getattr(optimizer, "beta2_power", None)
        if b1p is None or b2p is None:
            return
        b1p, b2p = float(b1p.asnumpy()), float(b2p.asnumpy())
        if b1p >= 1.0 or b2p >= 1.0:  # no step yet
            return
        eps = float(getattr(optimizer, "eps", 1e-8))
        for name, mm, vv in zip(names, m_of, v_of):
            if mm is None or vv is None:
                continue
            m_hat = _array(mm).astype(np.float64) / (1 - b1p)
            root = np.sqrt(_array(vv).astype(np.float64) / (1 - b2p))
            with np.errstate(divide="ignore", invalid="ignore"):
                self.collector.add(G["other"], name + ".adam_update", -1, m_hat / (root + eps))
                self.collector.add(G["other"], name + ".adam_ratio", -1, m_hat / root)


def _has_stepped(optimizer):
    step = getattr(optimizer, "global_step", None)
    return step is None or int(step.asnumpy().reshape(-1)[0]) > 0


def _refuse_unsupported(config, path):
    """Fields the torch TrainerMon honours that this one does not: an error naming the field,
    never a run that silently writes less than asked."""
    unsupported = [key for key in ("print_struct", "stack_info") if config[key]]
    if config["cc_distribution"]["enable"]:
        unsupported.append("cc_distribution.enable")
    if unsupported:
        raise NumprobeError(f"{path}: {', '.join(unsupported)}: not supported by numprobe's "
                            "MindSpore TrainerMon (the torch TrainerMon supports them)")
