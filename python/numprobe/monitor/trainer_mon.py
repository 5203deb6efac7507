"""numprobe.TrainerMon: msprobe's TrainerMon API over numprobe's collector (docs/monitor.md).

The Python side only decides *what* to summarise and *when*: module forward/backward hooks,
per-parameter gradient-accumulation hooks, and a wrapper around ``optimizer.step``. Each tensor
goes to the C++ collector, which summarises it in one pass and writes the step's rows when the
optimizer step ends (msprobe's step_final_hook).
"""
import logging
import types

import torch

from . import collectives, module_hooks
from .groups import G, _C
from .names import squash_param_name
from .schedule import MonitorSchedule, check_set_monitor_args, target_params

log = logging.getLogger("numprobe.monitor")


def _rank():
    dist = torch.distributed
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


class TrainerMon(MonitorSchedule):
    """msprobe's ``TrainerMon(config_file_path, process_group=None, params_have_main_grad=True,
    opt_ty=None)``. ``opt_ty`` is accepted for scripts written for msprobe and not needed: any
    torch optimizer is read through its ``state`` (``exp_avg``, ``exp_avg_sq`` where it keeps
    them). ``params_have_main_grad`` reads ``param.main_grad`` where a parameter has one (Megatron),
    ``param.grad`` otherwise."""

    def __init__(self, config_file_path, process_group=None, params_have_main_grad=True,
                 opt_ty=None):
        self._init_schedule(_C, _rank(), config_file_path, process_group,
                            params_have_main_grad, opt_ty)
        self.model = []
        self.optimizer = None
        self.micro_batch_number = 1
        self._handles = []
        self._cc = None
        self._param_names = {}  # param -> row name ("0:fc1.weight")
        self._grad_accs = []

    # ---- msprobe's API -------------------------------------------------------------------
    def set_monitor(self, model, grad_acc_steps=1, optimizer=None, dp_group=None, tp_group=None,
                    start_iteration=0):
        """Hooks ``model`` (a module or a list of virtual pipeline chunks) and ``optimizer``.
        msprobe's releases differ in the order of ``grad_acc_steps`` and ``optimizer``; either
        order works positionally. ``dp_group``/``tp_group`` are accepted and not needed: the
        reduced gradients are read where the optimizer reads them."""
        if _is_optimizer(grad_acc_steps) and not _is_optimizer(optimizer):
            grad_acc_steps, optimizer = (optimizer if optimizer is not None else 1), grad_acc_steps
        if optimizer is None or not _is_optimizer(optimizer):
            raise TypeError("numprobe TrainerMon.set_monitor: optimizer is required (its step() "
                            "ends a monitored training step)")
        check_set_monitor_args(grad_acc_steps, start_iteration)
        if self.optimizer is not None:  # set_monitor again: the old hooks and wrapper go first
            self._stop()
            _unwrap_step(self.optimizer)
        self.model = list(model) if isinstance(model, (list, tuple)) else [model]
        self.optimizer = optimizer
        self.micro_batch_number = grad_acc_steps
        self.step = start_iteration
        self.dp_group, self.tp_group = dp_group, tp_group
        self._wrap_step(optimizer)
        if self.monitoring:
            self._start()

    def generate_wgrad_metrics(self):
        """The reduced and unreduced weight-gradient metrics: (reduced, unreduced), each
        {tag: {op: value}}. Reduced ones are read now from the parameters; unreduced ones are
        those of the last written step."""
        reduced = {}
        for param, name in self._param_names.items():
            grad = self._grad_of(param)
            if grad is not None:
                reduced[self._tag(name, "post_grad")] = self._summary_ops(grad)
        return reduced, self._rows_of("grad_unreduced", "acc_grad")

    # ---- state ---------------------------------------------------------------------------
    def _summary_ops(self, tensor):
        summary = _C.monitor_tensor_summary(tensor, float(self.config["eps"]))
        return {op: summary[op] for op in self.config["ops"]}

    def _grad_of(self, param):
        if self.params_have_main_grad:
            main = getattr(param, "main_grad", None)
            if main is not None:
                return main
        return param.grad

    def _start(self):
        """Creates the writer and the hooks (at set_monitor, or when dynamic mode turns on)."""
        if not self._rank_monitored():
            return
        if self.collector is None:
            self.collector = _C.MonitorCollector(self._config_text, self.config_file_path,
                                                 self.output_base, self.rank)
            self.collector.set_group(*_group_of(self.process_group, self.rank))
        self._register_params()
        c = self.config
        if c["wg_distribution"]:
            self._hook_weight_grads()
        if c["xy_distribution"] or c["print_struct"] or c["stack_info"]:
            self._module_hooks = module_hooks.ModuleHooks(self)
            self._module_hooks.install()
        if c["cc_distribution"]["enable"]:
            self._cc = collectives.CollectiveHooks(self)
            self._cc.install()

    def _stop(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._grad_accs.clear()
        if self._module_hooks is not None:
            self._module_hooks.remove()
            self._module_hooks = None
        if self._cc is not None:
            self._cc.remove()
            self._cc = None

    def _register_params(self):
        self._param_names = dict(target_params((chunk.named_parameters() for chunk in self.model),
                                               self.config, squash_param_name))

    def _hook_weight_grads(self):
        """Unreduced weight gradients: a post-hook on each parameter's AccumulateGrad node (the
        gradient as accumulated, before any data-parallel reduce), read at the last micro-batch
        or at every one with monitor_mbs_grad."""
        mbs = self.config["monitor_mbs_grad"]
        collector = self.collector
        group = G["grad_unreduced"]
        for param, name in self._param_names.items():
            param._numprobe_micro_step = 0
            with torch.enable_grad():  # set_monitor may run under no_grad (so may a dynamic start)
                acc = param.expand_as(param).grad_fn.next_functions[0][0]

            def hook(*_unused, param=param, name=name):
                micro = param._numprobe_micro_step
                param._numprobe_micro_step = (micro + 1) % self.micro_batch_number
                if not self.collecting():
                    return
                if mbs or micro + 1 == self.micro_batch_number:
                    with torch.no_grad():
                        collector.add(group, name, micro if mbs else -1, self._grad_of(param))

            self._handles.append(acc.register_hook(hook))
            self._grad_accs.append(acc)  # the node must outlive the hook

    def _wrap_step(self, optimizer):
        """optimizer.step, wrapped (msprobe's patch_step) as a bound method: LR schedulers made
        afterwards read ``optimizer.step.__func__``."""
        _unwrap_step(optimizer)
        original = optimizer.step
        mon = self

        def step(_optimizer, *args, **kwargs):
            collecting = mon.collecting()
            if collecting:
                mon._before_step(optimizer)
            out = original(*args, **kwargs)
            if collecting:
                mon._after_step()
            mon._end_step()
            return out

        step._numprobe_original = original
        optimizer.step = types.MethodType(step, optimizer)

    # ---- the optimizer step ----------------------------------------------------------------
    def _before_step(self, optimizer):
        c = self.config
        if self._module_hooks is not None:
            self._module_hooks.before_step()  # print_struct: writes the structure and stops
        if self._cc is not None:
            self._cc.before_step()
        if self.collector is None:
            return
        add_many = self.collector.add_many
        params, names = list(self._param_names), list(self._param_names.values())
        with torch.no_grad():
            if c["wg_distribution"]:  # None (no gradient) is skipped
                add_many(G["grad_reduced"], names, [self._grad_of(p) for p in params])
            states = optimizer.state
            if c["mv_distribution"]:
                for key in ("exp_avg", "exp_avg_sq"):
                    add_many(G[key], names, [states.get(p, {}).get(key) for p in params])
            if c["param_distribution"]:
                add_many(G["param_origin"], names, params)
            if c["mg_direction"]:
                self._mg_direction(states)
            if c["ur_distribution"]:
                self._update_ratio(optimizer)

    def _mg_direction(self, states):
        """Share of gradient elements whose sign agrees with the momentum's (msprobe:
        ((sign(g)·sign(m)).sum()/N + 1)/2; 1.0 at step 0, before any momentum)."""
        for param, name in self._param_names.items():
            grad = self._grad_of(param)
            if grad is None:
                continue
            m = states.get(param, {}).get("exp_avg")
            if self.step == 0 or m is None or m.numel() == 0:
                self.collector.add_value(G["other"], name, 1.0)
            else:
                ratio = ((grad.sign() * m.sign()).sum() / m.numel() + 1) / 2
                self.collector.add(G["other"], name, -1, ratio)

    def _update_ratio(self, optimizer):
        """Adam's update m̂/(√v̂+eps) and ratio m̂/√v̂ (msprobe's ur_distribution), as rows
        "<name>.adam_update" and "<name>.adam_ratio" of the group other."""
        for group in optimizer.param_groups:
            betas = group.get("betas")
            eps = group.get("eps", 1e-8)
            if betas is None:
                continue
            for param in group["params"]:
                name = self._param_names.get(param)
                state = optimizer.state.get(param, {})
                if name is None or "exp_avg" not in state or "exp_avg_sq" not in state:
                    continue
                step = float(state.get("step", 0))
                if step <= 0:
                    continue
                m_hat = state["exp_avg"] / (1 - betas[0] ** step)
                v_hat = state["exp_avg_sq"] / (1 - betas[1] ** step)
                root = v_hat.sqrt()
                self.collector.add(G["other"], name + ".adam_update", -1, m_hat / (root + eps))
                self.collector.add(G["other"], name + ".adam_ratio", -1, m_hat / root)

    def _after_step(self):
        if self.collector is not None and self.config["param_distribution"]:
            # An optimizer writing through p.data leaves p's version as it was: statistics cached
            # before the update must not be reused for it.
            self.collector.forget_cached_stats()
            with torch.no_grad():
                self.collector.add_many(G["param_updated"], list(self._param_names.values()),
                                        list(self._param_names))


def _group_of(process_group, rank):
    """msprobe's pp_stage (this rank's rank in process_group) and group_mates (its ranks) for the
    anomaly records; (0, [0]) without torch.distributed."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return 0, [rank]
    group = process_group if process_group is not None else dist.group.WORLD
    try:
        mates = list(dist.get_process_group_ranks(group))
    except (AttributeError, RuntimeError):  # torch 1.x: the world
        mates = list(range(dist.get_world_size(group)))
    return (mates.index(rank) if rank in mates else 0), mates


def _unwrap_step(optimizer):
    """Restores optimizer.step where numprobe wrapped it."""
    # a bound method reads its function's attributes
    original = getattr(getattr(optimizer, "step", None), "_numprobe_original", None)
    if original is not None:
        optimizer.step = original


def _is_optimizer(obj):
    return isinstance(obj, torch.optim.Optimizer) or (
        hasattr(obj, "step") and hasattr(obj, "param_groups") and hasattr(obj, "state"))
