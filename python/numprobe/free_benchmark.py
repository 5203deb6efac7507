"""msprobe's free_benchmark task for torch: checks without a benchmark run.

Each API call in scope (config list/scope, at most ``max_sample`` calls per API and step) is run a
second time with its inputs perturbed (``pert_mode``), and the two outputs are compared by
numprobe's engine (``_C.perturbation_ratio``, ``_C.benchmark_errors``). An API whose output moved
beyond its dtype's threshold gets a row in ``{dump_path}/free_benchmark.csv`` with msprobe's
columns. ``handler_type`` check only reports: the training's own tensors, graph and random
generators are left exactly as an uncaptured step leaves them (the re-run works on copies of the
inputs, without autograd, with the random state the original call saw, restored afterwards).
``fix`` returns the higher-precision (improve_precision) or CPU (to_cpu) output instead, cast back
to the original dtype and device, with its autograd graph. docs/capture.md, "free_benchmark".
"""
import collections
import os

import torch
from torch.overrides import TorchFunctionMode

from . import _C
from .api_names import build_api_table, resolve_api

CSV_NAME = "free_benchmark.csv"
# max_rel of a row whose output changed sign beyond the tolerance (msprobe's word for it)
SYMBOL_FLIPPING = "symbol_flipping"
# msprobe's UnequalRow fields, in its order (its CSV header is these names).
CSV_HEADER = ("rank", "pert_mode", "stage", "step", "api_name", "max_rel", "dtype", "shape",
              "output_index")

# msprobe's constants, from the engine's table (src/capture/free_benchmark_rules.cc, shared with
# the C++ front): the noise added per dtype, which is also the absolute tolerance of the ratio; the
# consistency threshold of the ratio; to_cpu's relative threshold (also the absolute one for values
# below 1) and error balance bound.
_RULES = _C.free_benchmark_rules()
_BY_DTYPE = {getattr(torch, name[len("torch."):]): r for name, r in _RULES["dtypes"].items()}
_NOISE = {dt: r["noise"] for dt, r in _BY_DTYPE.items()}
_ABS_TOL = {dt: r["abs_tol"] for dt, r in _BY_DTYPE.items()}
_THRESHOLD = {dt: r["threshold"] for dt, r in _BY_DTYPE.items()}
_CPU_RTOL = {dt: r["cpu_rtol"] for dt, r in _BY_DTYPE.items()}
_BIT_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32,
             torch.float64: torch.int64}
_BACKWARD_ABS_TOL = _RULES["backward_abs_tol"]
_CPU_SMALL_VALUE = _RULES["cpu_small_value"]
_CPU_ERR_BALANCE = _RULES["cpu_err_balance"]


def _is_float_tensor(x):
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.device.type != "meta"


def _map_tensors(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj


def _snapshot(obj):
    """Detached copies of every tensor in obj: what the re-run perturbs and consumes, so that
    nothing the training holds is read after the original call changed it (in-place APIs) or
    written by the re-run."""
    return _map_tensors(obj, lambda t: t.detach().clone())


def _valid_input_index(args):
    """msprobe's rule: the first positional argument that is a floating tensor, or a container;
    -1 when there is none (the API is not checked)."""
    for i, a in enumerate(args):
        if _is_float_tensor(a) or isinstance(a, (list, tuple, dict)):
            return i
    return -1


def _float_outputs(out):
    """[(output_index or None, tensor)] of the floating tensors an API returned."""
    if isinstance(out, tuple) and hasattr(out, "values") and hasattr(out, "indices"):
        out = out.values  # torch.return_types (max, sort, topk): msprobe compares the values
    if _is_float_tensor(out):
        return [(None, out)]
    if isinstance(out, (list, tuple)):
        return [(i, t) for i, t in enumerate(out) if _is_float_tensor(t)]
    return []


class _Perturbation:
    """Builds the perturbed arguments of one call from its snapshot; `applied` says whether
    anything was changed (an API none of whose inputs could be perturbed is not re-run)."""

    def __init__(self, mode):
        self.mode = mode
        self.applied = False

    def __call__(self, args, kwargs, index):
        m = self.mode
        if m in ("improve_precision", "to_cpu"):
            fn = self._upcast if m == "improve_precision" else self._to_cpu
            args, kwargs = _map_tensors(args, fn), _map_tensors(kwargs, fn)
            if "inplace" in kwargs:
                kwargs["inplace"] = False
            return args, kwargs
        if m == "no_change":
            self.applied = True
            return args, kwargs
        fn = {"add_noise": self._add_noise, "bit_noise": self._bit_noise,
              "change_value": self._change_value}[m]
        args = list(args)
        args[index] = _map_tensors(args[index], fn)
        return tuple(args), kwargs

    def _upcast(self, t):
        if t.dtype in (torch.float16, torch.bfloat16):
            self.applied = True
            return t.to(torch.float32)
        return t

    def _to_cpu(self, t):
        self.applied = True
        # On the CPU, half-precision kernels are missing or slow: msprobe's CPU run is fp32 too.
        dtype = torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype
        return t.to(device="cpu", dtype=dtype)

    @staticmethod
    def _large_enough(t):
        if not t.is_floating_point() or t.numel() == 0 or t.dtype not in _NOISE:
            return False
        return t.abs().max().item() >= _NOISE[t.dtype]

    def _add_noise(self, t):
        if not self._large_enough(t):
            return t
        eps = _NOISE[t.dtype]
        self.applied = True
        return torch.where(t.abs() > eps ** 0.5, t + eps, t).to(t.dtype)

    def _bit_noise(self, t):
        if not self._large_enough(t) or t.dtype not in _BIT_VIEW:
            return t
        self.applied = True
        bits = t.view(_BIT_VIEW[t.dtype])
        flipped = torch.bitwise_xor(bits, torch.ones_like(bits))
        normal = t.abs() > torch.finfo(t.dtype).tiny
        return torch.where(normal, flipped, bits).view(t.dtype)

    def _change_value(self, t):
        if not t.is_floating_point() or t.dim() == 0 or t.size(0) < 2:
            return t
        self.applied = True
        new = t.clone()
        if new.dim() == 1:
            new[0], new[-1] = t[-1].clone(), t[0].clone()
        else:  # msprobe swaps new[0][0] and new[-1][-1] (a row of a 3-D tensor, an element of 2-D)
            first, last = t[0][0].clone(), t[-1][-1].clone()
            new[0][0], new[-1][-1] = last, first
        return new


def _rng_devices(args):
    return sorted({a.device.index or 0 for a in _flat_tensors(args) if a.device.type == "cuda"})


def _flat_tensors(obj):
    out = []
    _map_tensors(obj, lambda t: out.append(t) or t)
    return out


class _RngState:
    """The CPU (and CUDA) generator states at one point, to be put back."""

    def __init__(self, devices):
        self.devices = devices
        self.cpu = torch.get_rng_state()
        self.cuda = [torch.cuda.get_rng_state(d) for d in devices]

    def restore(self):
        torch.set_rng_state(self.cpu)
        for d, s in zip(self.devices, self.cuda):
            torch.cuda.set_rng_state(s, d)


class _FuzzMode(TorchFunctionMode):
    def __init__(self, runner):
        super().__init__()
        self.runner = runner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.runner.call(func, args, kwargs or {})


class FreeBenchmark:
    """The free_benchmark task behind ``numprobe.PrecisionDebugger`` (torch, level L1)."""

    def __init__(self, config_text, source):
        self.cfg = _C.free_benchmark_config(config_text, source)
        self._filter = _C.FreeBenchmarkFilter(config_text, source)
        self._table = build_api_table()
        self.pert_mode = self.cfg["pert_mode"]
        self.fix = self.cfg["handler_type"] == "fix"
        self.stage = self.cfg["fuzz_stage"]
        self.dump_path = os.path.abspath(self.cfg["dump_path"])
        self.csv_path = os.path.join(self.dump_path, CSV_NAME)
        self.current_step = 0
        self._first_step = None  # the first step run, where preheat starts
        self._counters = collections.Counter()  # per API name: calls this step
        self._sampled = collections.Counter()  # per API name: perturbed calls this step
        self._preheat_ratio = {}  # API name -> largest ratio seen while preheating
        self._mode = None
        self._busy = False  # inside a re-run or a backward check: calls pass through
        self._rank = None
        self.rows_written = 0
        self.calls_perturbed = 0

    # ---- PrecisionDebugger's calls -------------------------------------------------------------
    def start(self, rank_id=None):
        if self._rank is None:
            self._rank = self._detect_rank(rank_id)
        if self._mode is None and self._selected():
            if self._first_step is None:
                self._first_step = self.current_step
            self._mode = _FuzzMode(self)
            self._mode.__enter__()

    def stop(self):
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)

    def step(self):
        started = self._mode is not None
        self.stop()
        self.current_step += 1
        self._counters.clear()
        self._sampled.clear()
        self._filter.reset()
        if started:
            self.start()

    def set_init_step(self, step):
        self.current_step = int(step)

    def close(self):
        self.stop()

    # ---- the check -----------------------------------------------------------------------------
    def _selected(self):
        steps, ranks = self.cfg["step"], self.cfg["rank"]
        if steps and self.current_step not in steps:
            return False
        return not ranks or self._rank in ranks or (self._rank == 0 and not self._distributed())

    @staticmethod
    def _distributed():
        d = torch.distributed
        return d.is_available() and d.is_initialized()

    def _detect_rank(self, rank_id):
        if rank_id is not None:
            return int(rank_id)
        return torch.distributed.get_rank() if self._distributed() else 0

    def _preheating(self):
        return (self.cfg["if_preheat"] and self._first_step is not None
                and self.current_step - self._first_step < self.cfg["preheat_step"])

    def call(self, func, args, kwargs):
        if self._busy:
            return func(*args, **kwargs)
        try:
            name = self._table.get(func) or resolve_api(func)
        except TypeError:  # unhashable callable
            name = None
        if name is None:
            return func(*args, **kwargs)
        n = self._counters[name]
        self._counters[name] = n + 1
        entry = f"{name}.{n}.forward"
        if not self._filter.selects_everything() and not self._filter.wants(entry):
            return func(*args, **kwargs)
        index = _valid_input_index(args)
        if index < 0 or self._sampled[name] >= self.cfg["max_sample"]:
            return func(*args, **kwargs)
        self._sampled[name] += 1
        self._busy = True
        try:
            if self.stage == "backward":
                return self._check_backward(name, entry, func, args, kwargs, index)
            return self._check_forward(name, entry, func, args, kwargs, index)
        finally:
            self._busy = False

    def _rerun(self, func, args, kwargs, index, rng, grad=False):
        """The perturbed call from the snapshot, with the random state the original call saw;
        None when the perturbation does not apply to these inputs."""
        perturb = _Perturbation(self.pert_mode)
        p_args, p_kwargs = perturb(args, kwargs, index)
        if not perturb.applied:
            return None
        self.calls_perturbed += 1
        after = _RngState(rng.devices)
        rng.restore()
        try:
            with torch.set_grad_enabled(grad):
                return func(*p_args, **p_kwargs)
        finally:
            after.restore()

    def _check_forward(self, name, entry, func, args, kwargs, index):
        rng = _RngState(_rng_devices(args))
        if self.fix:
            with torch.no_grad():
                out = func(*_snapshot(args), **_snapshot(kwargs))
            # the fix's re-run uses the training's own inputs: its graph is the one kept
            perturbed = self._rerun(func, args, kwargs, index, rng, grad=torch.is_grad_enabled())
            if perturbed is None:
                rng.restore()
                return func(*args, **kwargs)
            self._compare(name, entry, "forward", out, perturbed)
            return _like(perturbed, out)
        snap = (_snapshot(args), _snapshot(kwargs))
        out = func(*args, **kwargs)  # the training's own call, untouched
        perturbed = self._rerun(func, snap[0], snap[1], index, rng)
        if perturbed is not None:
            self._compare(name, entry, "forward", out, perturbed)
        return out

    def _check_backward(self, name, entry, func, args, kwargs, index):
        """Registers a hook on the output's gradient that compares the input gradients of the
        call and of its perturbed re-run (vector-Jacobian products with the same incoming
        gradient); the hook returns nothing, so the training's gradients are untouched."""
        rng = _RngState(_rng_devices(args))
        snap = (_snapshot(args), _snapshot(kwargs))
        out = func(*args, **kwargs)
        if not (_is_float_tensor(out) and out.requires_grad):
            return out
        backward_entry = entry[: -len("forward")] + "backward"

        def hook(grad):
            self._busy = True
            try:
                self._compare_grads(name, backward_entry, func, snap, index, rng, grad)
            finally:
                self._busy = False

        out.register_hook(hook)
        return out

    def _compare_grads(self, name, entry, func, snap, index, rng, grad):
        def leaves(obj):
            return _map_tensors(obj, lambda t: t.detach().clone().requires_grad_(True)
                                if t.is_floating_point() else t)

        args, kwargs = leaves(snap[0]), leaves(snap[1])
        inputs = [t for t in _flat_tensors((args, kwargs)) if t.requires_grad]
        after = _RngState(rng.devices)
        rng.restore()
        # backward runs with grad mode off; both vector-Jacobian products need it on, the
        # perturbation too (it is differentiable: gradients reach the leaves through it)
        with torch.enable_grad():
            out = func(*args, **kwargs)
            original = torch.autograd.grad(out, inputs, grad, allow_unused=True)
            p_args, p_kwargs = leaves(snap[0]), leaves(snap[1])
            p_inputs = [t for t in _flat_tensors((p_args, p_kwargs)) if t.requires_grad]
            p_out = self._rerun(func, p_args, p_kwargs, index, rng, grad=True)
            after.restore()
            if p_out is None or not _is_float_tensor(p_out) or not p_out.requires_grad:
                return
            perturbed = torch.autograd.grad(p_out, p_inputs,
                                            grad.to(p_out.dtype).to(p_out.device),
                                            allow_unused=True)
        pairs = [(o, p) for o, p in zip(original, perturbed) if o is not None and p is not None]
        self._compare(name, entry, "backward", tuple(o for o, _ in pairs),
                      tuple(p for _, p in pairs), single=len(pairs) == 1)

    # ---- comparison and rows -------------------------------------------------------------------
    def _compare(self, name, entry, stage, out, perturbed, single=None):
        outs, perts = _float_outputs(out), dict(_float_outputs(perturbed))
        if single:
            outs = [(None, t) for _, t in outs]
            perts = {None: t for t in perts.values()}
        for index, o in outs:
            p = perts.get(index)
            if p is None or p.numel() != o.numel():
                continue
            consistent, max_rel = self._judge(name, stage, o, p)
            if not consistent:
                self._write_row(stage, entry, max_rel, o, index)

    def _judge(self, name, stage, o, p):
        if self.pert_mode == "to_cpu":
            e = _C.benchmark_errors(o, p, _CPU_SMALL_VALUE)
            if not e["golden_finite"]:
                return True, None
            rtol = _CPU_RTOL.get(o.dtype, _CPU_RTOL[torch.float32])
            ok = (e["max_abs_small"] <= rtol and e["max_rel"] <= rtol
                  and e["err_balance"] <= _CPU_ERR_BALANCE)
            return ok, max(e["max_rel"], e["max_abs_small"])
        abs_tol = _BACKWARD_ABS_TOL if stage == "backward" else \
            _ABS_TOL.get(p.dtype, _ABS_TOL[torch.float32])
        ratio, sign_flipped = _C.perturbation_ratio(o, p, abs_tol)
        if self.pert_mode == "no_change":
            threshold = 1.0
        else:
            threshold = _THRESHOLD.get(o.dtype, _THRESHOLD[torch.float32])
        if self._preheating():
            self._preheat_ratio[name] = max(self._preheat_ratio.get(name, 1.0), ratio)
            return True, ratio - 1
        if sign_flipped:  # msprobe's row for it names the rule instead of a number
            return False, SYMBOL_FLIPPING
        threshold = max(threshold, self._preheat_ratio.get(name, 1.0))
        return 1.0 / threshold <= ratio <= threshold, ratio - 1

    def _write_row(self, stage, entry, max_rel, tensor, index):
        # The engine appends it (as csv.writer would write it) under a file lock, the header by
        # whoever creates the file: ranks share it.
        _C.append_free_benchmark_row(self.dump_path, self._rank, self.pert_mode, stage,
                                     self.current_step, entry, max_rel, str(tensor.dtype),
                                     str(tensor.shape), index)
        self.rows_written += 1


def _like(perturbed, original):
    """fix: the perturbed outputs in the original outputs' dtypes and devices."""
    if isinstance(perturbed, torch.Tensor) and isinstance(original, torch.Tensor):
        return perturbed.to(dtype=original.dtype, device=original.device)
    if isinstance(perturbed, (list, tuple)) and isinstance(original, (list, tuple)):
        items = [_like(p, o) for p, o in zip(perturbed, original)]
        if hasattr(original, "_fields"):  # a namedtuple
            return type(original)(*items)
        return type(original)(items)  # tuple, list, torch.return_types
    return perturbed
