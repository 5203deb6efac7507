"""What both TrainerMons (torch: numprobe.monitor.trainer_mon, MindSpore:
numprobe.mindspore.trainer_mon) share and what needs no framework: reading the config through the
engine binding, the collection schedule (start_step, step_interval, collect_times, module_ranks),
the end of a step (write, count anomalies, stop), and dynamic mode (DYNAMIC_MONITOR=True)."""
import json
import logging
import os
import tempfile

from .names import chunk_prefix

log = logging.getLogger("numprobe.monitor")

MAX_KEPT_ANOMALIES = 10000


def read_config(path, binding):
    """(text, canonical config dict) of the monitor config at path; binding.NumprobeError names
    the file and field of anything wrong."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise binding.NumprobeError(f"{path}: cannot read the monitor config: {e.strerror}") from None
    return text, json.loads(binding.monitor_config_json(text, str(path)))


class MonitorSchedule:
    """The framework-free half of a TrainerMon. A front sets ``_binding`` (the engine binding
    with MonitorCollector: numprobe._C or numprobe._engine) and ``rank``, and implements
    ``_start()`` (collector and hooks) and ``_stop()`` (hooks removed)."""

    def _init_schedule(self, binding, rank, config_file_path, process_group=None,
                       params_have_main_grad=True, opt_ty=None):
        """msprobe's TrainerMon arguments, the config read, nothing monitored yet."""
        self._binding = binding
        self.process_group = process_group
        self.params_have_main_grad = params_have_main_grad
        self.opt_ty = opt_ty
        self.config_file_path = str(config_file_path)
        self._config_text, self.config = read_config(self.config_file_path, binding)
        self.rank = rank
        self.output_base = os.environ.get("MONITOR_OUTPUT_DIR", "./monitor_output")
        self.dynamic_enable = os.getenv("DYNAMIC_MONITOR", "False").lower() == "true"
        self._config_mtime = 0.0  # dynamic mode: the first check reads the file
        self.collector = None
        self.step = 0  # the optimizer's step count (msprobe's OptimizerContext.step)
        self.start_step = self.config["start_step"]
        self.collected = 0
        self.monitoring = not self.dynamic_enable and self.config["collect_times"] > 0
        self.anomalies = []  # the first MAX_KEPT_ANOMALIES anomalies reported (dicts)
        self.anomaly_count = 0  # all of them
        self._module_hooks = None
        self._last_rows = []

    def _tag(self, name, task):
        return f"{name}/rank{self.rank}/{task}"

    def _rows_of(self, group, task):
        return {self._tag(r["name"], task): r["ops"] for r in self._last_rows
                if r["group"] == group}

    def generate_xy_metrics(self):
        """Activation and activation-gradient metrics of the last written step: (actv, actv_grad),
        each {tag: {op: value}}."""
        return self._rows_of("actv", "actv"), self._rows_of("actv_grad", "actv_grad")

    def collecting(self, step=None):
        """Whether ``step`` (default: the current one) is written: the schedule of the config
        (start_step, step_interval, collect_times)."""
        step = self.step if step is None else step
        c = self.config
        if not self.monitoring or step < self.start_step:
            return False
        if (step - self.start_step) % c["step_interval"]:
            return False
        return self.collected < c["collect_times"]

    def _rank_monitored(self):
        ranks = self.config["module_ranks"]
        return not ranks or self.rank in ranks

    def _end_step(self):
        """msprobe's step_final_hook: write the step, count it, stop after collect_times."""
        if self.collecting() and self.collector is not None:
            found = self.collector.finish_step(self.step)
            self._last_rows = self.collector.last_rows()
            # After a divergence every row of every step may be one: the list keeps the first
            # MAX_KEPT_ANOMALIES (anomaly.json and the counts keep the rest).
            self.anomaly_count += len(found)
            self.anomalies.extend(found[:max(0, MAX_KEPT_ANOMALIES - len(self.anomalies))])
            for a in found[:5]:
                log.warning("numprobe monitor: %s", a["message"])
            if len(found) > 5:
                log.warning("numprobe monitor: ... and %d more anomalies at step %d (anomaly.json)",
                            len(found) - 5, self.step)
            if self._module_hooks is not None:
                self._module_hooks.after_written()
            self.collected += 1
            if self.collected >= self.config["collect_times"]:
                self._stop()
                self.monitoring = False
                if self.dynamic_enable:
                    if self.rank == _lowest_rank(self.config["module_ranks"]):
                        _switch_dynamic_off(self.config_file_path)
                    try:  # our own write is not a new config
                        self._config_mtime = os.path.getmtime(self.config_file_path)
                    except OSError:
                        pass
        elif self.collector is not None and self.collector.pending_rows():
            self.collector.discard_step()
        self.step += 1
        if self.dynamic_enable:
            self._dynamic_reload()

    def _dynamic_reload(self):
        """DYNAMIC_MONITOR=True: the config is read again when the file changed; dynamic_on
        starts monitoring at the next step (whatever start_step says)."""
        try:
            mtime = os.path.getmtime(self.config_file_path)
        except OSError as e:
            log.error("numprobe monitor: cannot stat %s: %s", self.config_file_path, e)
            return
        if mtime == self._config_mtime:
            return
        self._config_mtime = mtime
        try:
            text, config = read_config(self.config_file_path, self._binding)
        except (ValueError, self._binding.NumprobeError) as e:
            log.error("numprobe monitor: config not updated: %s", e)
            return
        if not config["dynamic_on"]:
            return
        self._stop()
        if self.collector is not None:
            self.collector.close()
            self.collector = None
        self._config_text, self.config = text, config
        self.start_step = self.step
        self.collected = 0
        self.monitoring = config["collect_times"] > 0
        if self.monitoring:
            self._start()


def check_set_monitor_args(grad_acc_steps, start_iteration):
    if not isinstance(grad_acc_steps, int) or grad_acc_steps < 1:
        raise ValueError(f"numprobe TrainerMon.set_monitor: grad_acc_steps must be a positive "
                         f"int, got {grad_acc_steps!r}")
    if not isinstance(start_iteration, int) or start_iteration < 0:
        raise ValueError(f"numprobe TrainerMon.set_monitor: start_iteration must be an int >= "
                         f"0, got {start_iteration!r}")


def target_params(named_chunks, config, squash):
    """msprobe's _register_chunk: [(parameter, row name)] of every trainable parameter a target
    names (all when targets is empty), named "<vpp>:<squashed name>" unless two squash to the same
    name. named_chunks: one iterable of (name, parameter) per virtual pipeline chunk (torch's
    named_parameters(), MindSpore's parameters_and_names()); squash(name, enable) is the engine's."""
    out = []
    targets = list(config["targets"].keys()) or [""]
    taken = set()
    for vpp, named in enumerate(named_chunks):
        prefix = chunk_prefix(vpp)
        for pname, param in named:
            if not param.requires_grad:
                continue
            squashed = prefix + squash(pname, config["squash_name"])
            full = prefix + pname
            if not any(pname.startswith(t) or squashed.startswith(t) or full.startswith(t)
                       for t in targets):
                continue
            name = full if squashed in taken else squashed
            taken.add(name)
            out.append((param, name))
    return out


def target_module_name(module_name, prefix, config, squash):
    """The row name of a module (cell) whose activations are recorded, "" when none: every module
    with all_xy, print_struct or no targets; else a target naming it with or without the
    "<vpp>:" prefix (without, it names the module in every chunk, as msprobe)."""
    squashed = prefix + squash(module_name, config["squash_name"])
    if config["all_xy"] or config["print_struct"] or not config["targets"]:
        return squashed
    for candidate in (squashed, prefix + module_name):
        if candidate in config["targets"]:
            return candidate
    if module_name in config["targets"]:
        return squashed
    return ""


def _lowest_rank(module_ranks):
    """The rank that rewrites the config when dynamic mode ends (one writer for all ranks)."""
    return min(module_ranks) if module_ranks else 0


def _switch_dynamic_off(path):
    """msprobe resets dynamic_on once collect_times steps are written, so the next change of
    the file starts a new collection."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            config = json.load(f)
        config["dynamic_on"] = False
        fd, tmp = tempfile.mkstemp(prefix=".numprobe-", dir=os.path.dirname(os.path.abspath(path)))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        log.error("numprobe monitor: cannot reset dynamic_on in %s: %s", path, e)
