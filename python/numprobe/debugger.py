"""PrecisionDebugger: msprobe's capture API over numprobe's C++ engine.

Names and meaning follow msprobe so that scripts port by changing the import. Differences, on
purpose: APIs are seen through a TorchFunctionMode (nothing in torch is replaced, APIs imported by
value are seen); call counters of every kind reset each step; files are crash-safe (a journal).
"""
import atexit
import collections
import functools
import inspect
import json
import os
import random
import types

import torch
from torch.overrides import TorchFunctionMode

from . import _C
from .api_names import (build_api_table, keyword_defaults, resolve_api, site_targets,
                        transparent_bodies)
from .capture_args import config_from_arguments, warn_other_framework_fields

NumprobeError = _C.NumprobeError


class _ApiMode(TorchFunctionMode):
    # A C function bound as a method (torch 2.x checks that the mode is its __self__): torch calls
    # it with (func, types, args[, kwargs]) and no Python frame runs.
    __torch_function__ = _C.torch_function_method


class _DirectMode:
    """torch 1.13 runs every TorchFunctionMode through a Python dispatcher
    (torch.overrides._TorchFunctionStackMode: a frame and a context manager per call, 2x the step
    time of a small model). This object is installed as the C++-level mode itself, so C++ calls
    numprobe's C function directly; it also stands in for _TorchFunctionStackMode while capture
    runs, so torch's Python-side dispatch (F.gelu and other Python functions) reaches the same
    function and re-installs it afterwards. A mode entered after start() sits above it on the
    stack and gets each call first (the C function hands it to torch's stack dispatch). Used only
    when no other mode is active at start(); NUMPROBE_DIRECT_MODE=0 turns it off."""
    __torch_function__ = staticmethod(_C.torch_function)


def _direct_mode_usable():
    if os.environ.get("NUMPROBE_DIRECT_MODE", "1") == "0":
        return False
    if int(torch.__version__.split(".")[0]) >= 2:
        return False  # 2.x keeps its mode stack in C++; the standard path is already direct
    c = torch._C
    needed = ("_set_torch_function_mode", "_is_torch_function_mode_enabled",
              "_push_on_torch_function_stack", "_pop_torch_function_stack",
              "_len_torch_function_stack")
    if not all(hasattr(c, n) for n in needed) or not hasattr(torch.overrides, "_TorchFunctionStackMode"):
        return False
    return c._len_torch_function_stack() == 0 and not c._is_torch_function_mode_enabled()


def _take_off_mode_stack(entry):
    """Removes numprobe's `entry` from torch's mode stack. Modes the user entered after start()
    and has not left (stop() inside them) stay active, in their order; returns how many."""
    c = torch._C
    above = []
    while c._len_torch_function_stack() > 0:
        mode = c._pop_torch_function_stack()
        if mode is entry:
            break
        above.append(mode)
    for mode in reversed(above):
        c._push_on_torch_function_stack(mode)
    return len(above)


_SHORTCUTS = None


def _hook_machinery_codes():
    """Frames of torch's module-hook machinery whose API calls numprobe does not record: torch 2.x's
    BackwardHook._apply_on_tensors applies BackwardHookFunction, whose returned inputs autograd turns
    into views (a Tensor.view_as per tensor, routed through the mode). They exist only because of the
    module backward hooks numprobe registers at mix and L0, and msprobe's dumps have none of them."""
    hook = getattr(getattr(torch.utils, "hooks", None), "BackwardHook", None)
    fn = getattr(hook, "_apply_on_tensors", None)
    return [fn.__code__] if fn is not None and hasattr(fn, "__code__") else []


def _install_property_shortcuts():
    """Tensor properties (p.grad, .grad_fn, .is_sparse: 1,800 reads per step of a 100-layer
    optimizer step) skip torch's mode dispatch while numprobe's mode is the only mode; numprobe
    records no property (see python/src/direct_mode.h). NUMPROBE_PROPERTY_SHORTCUT=0 turns this
    off."""
    global _SHORTCUTS
    if os.environ.get("NUMPROBE_PROPERTY_SHORTCUT", "1") == "0":
        return
    if _SHORTCUTS is None:
        base = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
        _SHORTCUTS = {name: _C.property_shortcut(d) for name, d in vars(base).items()
                      if type(d) is types.GetSetDescriptorType and name not in vars(torch.Tensor)
                      and not name.startswith("__")}
    for name, shortcut in _SHORTCUTS.items():
        setattr(torch.Tensor, name, shortcut)


def _remove_property_shortcuts():
    for name, shortcut in (_SHORTCUTS or {}).items():
        if vars(torch.Tensor).get(name) is shortcut:
            delattr(torch.Tensor, name)


_MISSING = object()


def _install_api_sites():
    """API sites (python/src/api_site.cc) over msprobe-listed attributes, from the first start() to
    close(), so that calls are recorded under the names and with the arguments the user wrote:
    `a += b` is Tensor.__iadd__, F.layer_norm(x, s, w, b, eps) keeps its five positional arguments.
    Returns what to restore. NUMPROBE_API_SITES=0 turns them off (the mode alone then records the calls, as
    torch dispatches them)."""
    if os.environ.get("NUMPROBE_API_SITES", "1") == "0":
        return []
    installed = []
    for owner, name, api in site_targets():
        current = getattr(owner, name)
        if type(current) is _C.ApiSiteType:
            continue  # already a site (another debugger's, not yet removed)
        saved = vars(owner).get(name, _MISSING)
        try:
            setattr(owner, name, _C.api_site(api, current))
        except (TypeError, AttributeError):
            continue
        installed.append((owner, name, saved))
    return installed


def _remove_api_sites(installed):
    for owner, name, saved in reversed(installed):
        if saved is _MISSING:
            try:
                delattr(owner, name)
            except AttributeError:
                pass
        else:
            setattr(owner, name, saved)


def _environment_extra():
    """The members numprobe_env.json gets from Python (the C++ side writes torch's own)."""
    import sys
    members = {"python_version": sys.version.split()[0]}
    try:
        import numpy as np
        members["numpy_version"] = np.__version__
    except ImportError:
        pass
    return ",\n ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members.items())


class PrecisionDebugger:
    """msprobe's ``PrecisionDebugger(config_path, task, dump_path, level, step)``.

    Constructor arguments override config.json. ``NUMPROBE_CONFIG=<config.json>`` in the
    environment (set by ``numprobe locate``, docs/locate.md) overrides both: that file alone
    decides what is dumped, so a driver changes it without editing the script.
    ``start(model)`` hooks the model's submodules for levels L0 and mix (the root module itself is
    not dumped, as in msprobe).
    """

    _instance = None

    def __new__(cls, config_path=None, task=None, dump_path=None, level=None, step=None,
                model=None):
        # task grad_probe records gradients at optimizer steps, not calls: its own object
        # (numprobe.grad_probe), returned instead of a capture debugger.
        cfg, source = config_from_arguments(config_path, task, dump_path, level, step,
                                            _C.check_config, NumprobeError)
        if cfg.get("task") == "grad_probe":
            from .grad_probe import GradProbeDebugger
            return GradProbeDebugger(cfg, source, model)
        return super().__new__(cls)

    def __init__(self, config_path=None, task=None, dump_path=None, level=None, step=None,
                 model=None):
        cfg, source = config_from_arguments(config_path, task, dump_path, level, step,
                                            _C.check_config, NumprobeError)
        warn_other_framework_fields(cfg, source, "pytorch")
        if PrecisionDebugger._instance is not None:
            PrecisionDebugger._instance.close()
        self._free = None
        if cfg.get("task") == "free_benchmark":
            self._init_free_benchmark(cfg, source)
            return
        self._engine = _C.Engine(json.dumps(cfg), source)
        self._engine.set_environment_info("python", _environment_extra())
        PrecisionDebugger._instance = self
        self.level = self._engine.level()
        self.task = self._engine.task()
        self._model = model
        self._hooked = set()
        self._module_hooks = []  # _ModuleHooks: on only while a selected step captures
        self._hooks_on = False
        self._recorders = []
        self._recorders_used = False
        self._mode = None
        self._direct_entry = None
        self._started = False
        self._rank_set = False
        self._custom = []
        self._dist_wrapped = False
        self._api_table = build_api_table()
        self._publish_api_table()
        _C.set_api_resolver(resolve_api)
        _C.set_transparent({torch.Tensor.backward: self._backward_seeded, **transparent_bodies(_C.call_api)})
        self._sites = []
        _C.set_own_package_dir(os.path.dirname(os.path.abspath(__file__)) + os.sep)
        _C.set_internal_callers(_hook_machinery_codes(), ["Tensor.view_as"])
        atexit.register(self._at_exit)

    def _init_free_benchmark(self, cfg, source):
        """task free_benchmark: no dump, no engine session; numprobe/free_benchmark.py re-runs
        the APIs with perturbed inputs and writes free_benchmark.csv."""
        from .free_benchmark import FreeBenchmark
        self._free = FreeBenchmark(json.dumps(cfg), source)
        self._engine = None
        self.level, self.task = "L1", "free_benchmark"
        PrecisionDebugger._instance = self
        atexit.register(self._at_exit)

    # ---- msprobe API ---------------------------------------------------------------------------
    def start(self, model=None, token_range=None, rank_id=None):
        if self._free is not None:
            return self._free.start(rank_id)
        if self.level in ("L1", "mix") and not self._dist_wrapped:
            self._wrap_distributed()
        if not self._rank_set:
            self._engine.set_rank(self._detect_rank(rank_id))
            self._rank_set = True
        model = model if model is not None else self._model
        if self.level in ("L0", "mix"):
            if model is None and not self._hooked:
                raise NumprobeError(f"level {self.level} dumps modules: pass the model to "
                                    "PrecisionDebugger(model=...) or start(model)")
            if model is not None:
                self._hook_model(model)
        self._engine.start()
        self._started = True
        self._attach_hooks()
        self._push_mode()

    def stop(self):
        """Stops capturing. The step's files are assembled by the writer thread while training
        goes on: they are complete after flush(), close() or the end of the process (a crash
        leaves the journal, which `numprobe recover` and every numprobe reader assemble).
        The module hooks come off here: code after stop() runs the model without them."""
        if self._free is not None:
            return self._free.stop()
        self._pop_mode()
        self._detach_hooks()
        self._started = False
        self._engine.stop()

    def step(self):
        if self._free is not None:
            return self._free.step()
        was_started = self._started
        self._pop_mode()
        self._engine.step()
        if self._recorders_used:  # recorders that never ran since the last reset hold nothing
            for r in self._recorders:
                r.reset()
            self._recorders_used = self._hooks_on
        if was_started:
            # start() without stop(): the next step may or may not be selected
            if self._engine.dumping():
                self._attach_hooks()
            else:
                self._detach_hooks()
            self._push_mode()

    def forward_backward_dump_end(self):
        self.stop()

    def set_init_step(self, step):
        if self._free is not None:
            return self._free.set_init_step(step)
        self._engine.set_init_step(int(step))

    def save(self, variable, name, save_backward=True):
        """Level ``debug``: dump ``variable`` (tensor or nested structure) as ``<name>.<n>``."""
        _C.save(name, variable)
        if save_backward and isinstance(variable, torch.Tensor) and variable.requires_grad:
            variable.register_hook(lambda g: _C.save(name + "_grad", g))

    def register_custom_api(self, module, api, api_prefix):
        """Dumps calls of ``module.api`` as ``{api_prefix}.{api}``. Callables torch dispatches
        (torch functions) are recognised in place; plain Python functions are replaced by a
        wrapper (restore_custom_api puts the original back)."""
        orig = getattr(module, api)
        name = f"{api_prefix}.{api}"
        try:
            self._api_table[orig] = name
            self._publish_api_table()
        except TypeError:
            pass
        if not isinstance(orig, types.FunctionType):
            return

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            return _C.call_api(name, orig, args, kwargs)

        wrapper._numprobe_original = orig
        setattr(module, api, wrapper)
        self._custom.append((module, api))

    def restore_custom_api(self, module, api):
        current = getattr(module, api)
        orig = getattr(current, "_numprobe_original", current)
        setattr(module, api, orig)
        self._api_table.pop(orig, None)
        self._publish_api_table()

    def _wrap_distributed(self):
        """torch.distributed functions are plain Python: torch never dispatches them to a mode, so
        the collectives are wrapped (and unwrapped by close()) as custom APIs."""
        self._dist_wrapped = True
        dist = torch.distributed
        if not dist.is_available():
            return
        from torch.distributed import distributed_c10d as c10d

        def group_ranks(pg):
            if hasattr(dist, "get_process_group_ranks"):
                return list(dist.get_process_group_ranks(pg))
            return sorted(getattr(c10d, "_pg_group_ranks", {}).get(pg, {}).keys())

        _C.set_group_ranks_fn(group_ranks)
        for name in _COLLECTIVES:
            for module in (dist, c10d):
                if isinstance(getattr(module, name, None), types.FunctionType):
                    self.register_custom_api(module, name, "Distributed")

    # ---- numprobe additions --------------------------------------------------------------------
    @property
    def dump_path(self):
        return self._free.dump_path if self._free is not None else self._engine.dump_path()

    @property
    def current_step(self):
        return self._free.current_step if self._free is not None else self._engine.current_step()

    @property
    def free_benchmark(self):
        """task free_benchmark: the runner (csv_path, rows_written, calls_perturbed); else None."""
        return self._free

    def flush(self):
        """Waits until every captured entry and completed step is on disk."""
        if self._free is not None:
            return  # free_benchmark.csv rows are written as they are found
        self._engine.flush()

    def stats(self):
        """Counters of what was written: entries, tensor_files, tensor_bytes, queue_high_water."""
        return self._engine.stats()

    def close(self):
        """Finishes the files and releases the engine (a new PrecisionDebugger may start)."""
        if self._free is not None:
            self._free.close()
            if PrecisionDebugger._instance is self:
                PrecisionDebugger._instance = None
            return
        if self._engine is None:
            return
        self._pop_mode()
        _remove_api_sites(self._sites)
        self._sites = []
        for module, api in reversed(self._custom):
            if hasattr(getattr(module, api), "_numprobe_original"):
                self.restore_custom_api(module, api)
        self._custom.clear()
        self._detach_hooks()
        self._engine.close()
        self._engine = None
        if PrecisionDebugger._instance is self:
            PrecisionDebugger._instance = None

    # ---- internals -----------------------------------------------------------------------------
    def _publish_api_table(self):
        _C.set_api_names(self._api_table)
        _C.set_api_defaults(keyword_defaults(self._api_table))

    @staticmethod
    def _backward_seeded(tensor, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Tensor.backward, with its implicit seed gradient made as a recorded API call: torch pops
        the mode while a function it dispatched runs, so the `torch.ones_like` that backward()
        makes for a scalar loss would not be seen; msprobe records it (v8.3.3). The same call torch
        would make, made one step earlier; everything else is torch's own backward."""
        if gradient is None:
            gradient = _seed_gradient(tensor)
        torch.autograd.backward(tensor, gradient, retain_graph, create_graph, inputs=inputs)

    def _at_exit(self):
        if self._engine is not None or self._free is not None:
            self.close()

    @staticmethod
    def _detect_rank(rank_id):
        if rank_id is not None:
            return int(rank_id)
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return -1

    def _push_mode(self):
        if self.level not in ("L1", "mix") or self._mode is not None or not self._engine.dumping():
            return
        if _direct_mode_usable():
            self._mode = "direct"  # first: _pop_mode undoes whatever of the below got done
            self._saved_stack_mode = torch.overrides._TorchFunctionStackMode
            direct, self._direct_entry = _DirectMode(), _DirectMode()
            _C.set_direct_mode(self._direct_entry,
                               types.MethodType(self._saved_stack_mode.__torch_function__, direct))
            torch.overrides._TorchFunctionStackMode = _DirectMode
            torch._C._push_on_torch_function_stack(self._direct_entry)
            torch._C._set_torch_function_mode(direct)
            _install_property_shortcuts()
            self._arm_api_sites()
            return
        self._mode = _ApiMode()
        self._mode.__enter__()
        if torch._C._len_torch_function_stack() == 1:  # numprobe's mode alone (no user mode)
            _C.set_direct_mode(self._mode, None)
            _install_property_shortcuts()
        self._arm_api_sites()

    def _arm_api_sites(self):
        """Sites stay from the first start() to close(): putting ~160 attributes on and off torch at
        every start()/stop() cost 0.4 ms a step; between captures a site only calls through."""
        if not self._sites:
            self._sites = _install_api_sites()

    def _pop_mode(self):
        if self._mode == "direct":
            _remove_property_shortcuts()
            above = _take_off_mode_stack(self._direct_entry)
            torch._C._set_torch_function_mode(self._saved_stack_mode() if above else None)
            torch.overrides._TorchFunctionStackMode = self._saved_stack_mode
            _C.set_direct_mode(None, None)
            self._direct_entry = None
        elif self._mode is not None:
            _remove_property_shortcuts()
            _C.set_direct_mode(None, None)
            c = torch._C
            depth = c._len_torch_function_stack()
            if depth and c._get_function_stack_at(depth - 1) is self._mode:
                self._mode.__exit__(None, None, None)
            else:
                _take_off_mode_stack(self._mode)
        self._mode = None

    def _hook_model(self, model):
        models = list(enumerate(model)) if isinstance(model, (list, tuple)) else [(None, model)]
        added = False
        for index, m in models:
            if id(m) in self._hooked:
                continue
            self._hooked.add(id(m))
            added = True
            for name, module in m.named_modules():
                if not name:
                    continue  # msprobe skips the root module
                path = name if index is None else f"{index}.{name}"
                self._add_module_recorders(f"Module.{path}.{type(module).__name__}", module)
        if added and self._hooks_on:  # a new model while hooks are on: start() attaches all again
            self._detach_hooks()

    def _add_module_recorders(self, entry_prefix, module):
        """The recorders of one module, made once: their names and per-module call stacks live
        as long as the debugger. Their hooks go on and off with _attach_hooks/_detach_hooks."""
        rec = _C.ModuleRecorder(entry_prefix)
        self._recorders.append(rec)
        params = [(n, p) for n, p in module.named_parameters(recurse=False) if p.requires_grad]
        grad_rec = None
        if params:
            grad_rec = _C.ParamGradRecorder(entry_prefix, len(params))
            self._recorders.append(grad_rec)
        self._module_hooks.append(_ModuleHooks(module, rec, grad_rec, params))

    def _attach_hooks(self):
        """Puts the module hooks on while a selected step captures, and only then: torch runs a
        module that has any hook through its slow path (and, for a full backward hook, two
        autograd Functions and BackwardHook's Python code per call), so hooks that only checked
        "not dumping" cost 2.8x a small model's step on every step that is not dumped."""
        if self._hooks_on or not self._module_hooks or not self._engine.dumping():
            return
        for hooks in self._module_hooks:
            hooks.attach()
        self._hooks_on = True
        self._recorders_used = True

    def _detach_hooks(self):
        """Takes the module hooks off (stop(), an unselected step, close()). A forward already run
        keeps its backward hooks in the autograd graph (torch binds them at the call); they record
        nothing once capture has stopped, as before. A module left mid-forward (stop() inside a
        forward) loses its forward hook: its entry is forgotten at the next step()."""
        if not self._hooks_on:
            return
        for hooks in self._module_hooks:
            hooks.detach()
        self._hooks_on = False
        _C.clear_module_stack()


class _ModuleHooks:
    """The hooks of one module and of its parameters. Registered through torch once; afterwards
    taken out of torch's hook dicts and put back by their keys (registering them again cost ~10 us
    a module per captured step: 2.4 ms for 100 x (Linear + GELU)). Put back, they run after hooks
    the user registered meanwhile."""

    def __init__(self, module, rec, grad_rec, params):
        self._module, self._rec, self._grad_rec, self._params = module, rec, grad_rec, params
        self._entries = None  # [(hook dict, key, hook, [(extra dict, its value)])]
        self._param_entries = []  # [(parameter, key, hook)]

    def attach(self):
        if self._entries is None:
            self._register()
            return
        for hooks, key, hook, extras in self._entries:
            hooks[key] = hook
            for extra, value in extras:
                extra[key] = value
        for p, key, hook in self._param_entries:
            hooks = p._backward_hooks
            if hooks is None:  # what Tensor.register_hook does for a leaf's first hook
                p._backward_hooks = hooks = collections.OrderedDict()
            hooks[key] = hook

    def detach(self):
        for hooks, key, _, extras in self._entries or ():
            hooks.pop(key, None)
            for extra, _ in extras:
                extra.pop(key, None)
        for p, key, _ in self._param_entries:
            hooks = p._backward_hooks
            if hooks is None:
                continue
            hooks.pop(key, None)
            if not hooks:
                # A parameter's hook dict, even empty, keeps a C++ pre-hook on the tensor that
                # takes the GIL and walks the dict in every backward (~4 % of a small model's idle
                # step); None removes it. A dict that still holds the user's hooks stays.
                p._backward_hooks = None

    def _register(self):
        module, rec = self._module, self._rec
        if _PRE_HOOK_KWARGS:
            # torch >= 2 hands the call's keyword arguments to hooks: recorded, as msprobe 26 does
            # (nn.MultiheadAttention's need_weights, attn_mask, ...).
            handles = [module.register_forward_pre_hook(rec.forward_pre, with_kwargs=True)]
        else:
            handles = [module.register_forward_pre_hook(rec.forward_pre)]
        handles.append(module.register_forward_hook(rec.forward))
        # No backward hook: the forward hook observes the call's backward on the autograd nodes
        # it made (python/src/module_backward.h), which leaves the graph as it is.
        self._entries = []
        for h in handles:
            hooks = h.hooks_dict_ref()
            extras = []  # torch 2.x: with_kwargs and always_called flags, removed with the hook
            for ref in getattr(h, "extra_dict_ref", ()):
                extra = ref()
                if extra is not None and h.id in extra:
                    extras.append((extra, extra[h.id]))
            self._entries.append((hooks, h.id, hooks[h.id], extras))
        for pname, p in self._params:
            h = p.register_hook(functools.partial(_param_hook, self._grad_rec, pname))
            self._param_entries.append((p, h.id, h.hooks_dict_ref()[h.id]))


_PRE_HOOK_KWARGS = "with_kwargs" in inspect.signature(torch.nn.Module.register_forward_pre_hook).parameters

_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "reduce", "gather", "scatter",
    "all_to_all", "all_to_all_single", "barrier", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "all_gather_object", "broadcast_object_list",
)


def _seed_gradient(tensor):
    """The gradient torch.autograd.backward creates for a scalar output, as the recorded API
    Torch.ones_like; None where torch would not create one (it then says why itself)."""
    if (isinstance(tensor, torch.Tensor) and tensor.requires_grad and tensor.numel() == 1
            and tensor.is_floating_point()):
        return _C.call_api("Torch.ones_like", torch.ones_like, (tensor,),
                           {"memory_format": torch.preserve_format})
    return None


def _param_hook(recorder, pname, grad):
    recorder.on_grad(pname, grad)


def seed_all(seed=1234, mode=False, rm_dropout=False):
    """Seeds python, numpy and torch; mode=True asks for deterministic algorithms; rm_dropout=True
    makes every dropout a no-op (p=0), as msprobe's seed_all does."""
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy as np
        np.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if mode:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    if rm_dropout:
        import torch.nn.functional as F
        for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                     "feature_alpha_dropout"):
            orig = getattr(F, name, None)
            if orig is None or getattr(orig, "_numprobe_no_dropout", False):
                continue

            def no_dropout(input, p=0.5, training=True, inplace=False, _orig=orig):
                return _orig(input, 0.0, training, inplace)

            no_dropout._numprobe_no_dropout = True
            setattr(F, name, no_dropout)
