"""Levels L1 and mix: MindSpore's APIs replaced by recording wrappers while capture is installed.

``mindspore.ops`` functions, ``mindspore.mint`` and ``mint.nn.functional`` functions are replaced in
their modules, ``Tensor`` methods on the class, and the primitives a model's cells hold (``nn.Dense``'s
``MatMul``) get a subclass whose ``__call__`` records (as msprobe does: ``Primitive.<attribute>.
<Class>.<n>``). Everything is put back by ``uninstall``. A wrapper costs one flag check while capture
is stopped.

Collective communication (``communication.comm_func`` as ``Distributed``, ``mint.distributed`` as
``MintDistributed``) is recorded as msprobe records it: the inputs as they were before the call
(the collectives change their tensors in place), the output as the arguments after it, and an
asynchronous call (``async_op=True``, ``isend``/``irecv``) waited for before its tensors are read.
No backward entry: the in-place tensors must stay the caller's objects.
"""
import functools
import inspect

from mindspore import Tensor, mint, ops
from mindspore.ops.primitive import Primitive

from . import api_list
from .recorder import backward_name_of


def _namespaces():
    from mindspore.mint.nn import functional as mint_functional
    spaces = [("Functional", ops, api_list.OPS), ("Mint", mint, api_list.MINT),
              ("MintFunctional", mint_functional, api_list.MINT_FUNCTIONAL)]
    try:
        from mindspore.communication import comm_func
        spaces.append(("Distributed", comm_func, api_list.COMM_FUNC))
    except ImportError:  # a MindSpore without it: nothing of it is called either
        pass
    try:
        from mindspore.mint import distributed as mint_distributed
        spaces.append(("MintDistributed", mint_distributed, api_list.MINT_DISTRIBUTED))
    except ImportError:
        pass
    return spaces


def _counted(recorder, prefix, api):
    """(name base "<prefix>.<api>.<n>", enclosing cell) of a call the user made while capture
    runs, counted; None inside numprobe's work or a recorded call, or while capture is stopped."""
    session = recorder.session
    if recorder.busy or not session.active():
        return None
    key = f"{prefix}.{api}"
    return f"{key}.{session.next_count(key)}", recorder.parent()


def _call(recorder, prefix, api, orig, args, kwargs):
    """One API call: counted, maybe recorded, with its backward hooked."""
    counted = _counted(recorder, prefix, api)
    if counted is None:
        return orig(*args, **kwargs)
    base, parent = counted
    forward_name = base + ".forward"
    if not recorder.selected(forward_name):
        recorder.enter()
        try:
            return orig(*args, **kwargs)
        finally:
            recorder.leave()
    hook = None
    if not api_list.is_in_place(api):
        hook = recorder.grad_hook(base + ".backward", backward_name_of(parent))
    recorder.enter()
    try:
        if hook is not None:
            args = hook(tuple(args))
        out = orig(*args, **kwargs)
        recorder.record_forward(forward_name, args, kwargs, out, parent)
        if hook is not None and isinstance(out, (Tensor, tuple)):
            out = hook(out)
    finally:
        recorder.leave()
    return out


class _Finished:
    """What an asynchronous collective returns in place of its handle once numprobe has waited for
    it (its tensors were read): the caller's own wait() has nothing left to wait for."""

    def wait(self):
        return None

    def is_completed(self):
        return True


def _async_op(api, orig, args, kwargs):
    if api in ("isend", "irecv", "batch_isend_irecv"):
        return True
    if "async_op" in kwargs:
        return bool(kwargs["async_op"])
    try:
        params = list(inspect.signature(orig).parameters)
    except (TypeError, ValueError):
        return False
    if "async_op" in params and params.index("async_op") < len(args):
        return bool(args[params.index("async_op")])
    return False


def _finish(out):
    """Waits for every handle in a collective's result; the result with finished handles."""
    if hasattr(out, "wait"):
        out.wait()
        return _Finished()
    if isinstance(out, (tuple, list)) and any(hasattr(o, "wait") for o in out):
        done = [_finish(o) for o in out]
        return type(out)(done) if isinstance(out, tuple) else done
    return out


def _call_distributed(recorder, prefix, api, orig, args, kwargs):
    """One collective: inputs held before it runs, outputs (its arguments) read after it."""
    counted = _counted(recorder, prefix, api)
    if counted is None:
        return orig(*args, **kwargs)
    forward_name, parent = counted[0] + ".forward", counted[1]
    recorder.enter()
    try:
        if not recorder.selected(forward_name):
            return orig(*args, **kwargs)
        before = recorder.snapshot_inputs(args, kwargs)
        out = orig(*args, **kwargs)
        if _async_op(api, orig, args, kwargs):
            out = _finish(out)
        recorder.record_collective(forward_name, before, list(args) + list(kwargs.values()),
                                   parent)
    finally:
        recorder.leave()
    return out


def _wrapper(recorder, prefix, api, orig):
    call = _call_distributed if prefix in api_list.DISTRIBUTED_PREFIXES else _call

    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        return call(recorder, prefix, api, orig, args, kwargs)
    wrapped.__numprobe_original__ = orig
    return wrapped


class UnhookedApiWarning(UserWarning):
    """A config `list` item names an API numprobe does not hook in this MindSpore: it can never be
    dumped (a name numprobe's API list lacks, or one this MindSpore version does not have)."""


# The first parts of an API entry name that say which API it is: "Mint.add" of "Mint.add.0.forward";
# primitives are named by the cell attribute and class, "Primitive.layer_norm.LayerNorm".
_API_KEY_PARTS = {"Functional": 2, "Mint": 2, "MintFunctional": 2, "Tensor": 2, "Distributed": 2,
                  "MintDistributed": 2, "Primitive": 3}


def warn_unhooked_list_items(items, hooked, source):
    """Warns (UnhookedApiWarning) once for each `list` item that names an API entry (it starts with
    an API prefix) whose API is not among `hooked`; cell names and plain substrings are left to the
    filter. Returns the items warned about."""
    import warnings
    named = []
    for item in items or []:
        parts = str(item).split(".")
        n = _API_KEY_PARTS.get(parts[0])
        if n is None or len(parts) < n:
            continue
        key = ".".join(parts[:n])
        if key not in hooked:
            named.append(item)
            warnings.warn(f"{source}: list item \"{item}\": numprobe does not hook {key} in this "
                          "MindSpore (not in its API list, or not in this version), so it will "
                          "never be dumped", UnhookedApiWarning, stacklevel=3)
    return named


class ApiWrapper:
    def __init__(self, recorder):
        self.recorder = recorder
        self._restore = []  # (owner, name, original)
        self._primitives = []  # (instance, original class)
        self.hooked = set()  # "<prefix>.<api>" of every API wrapped

    def install(self, model=None):
        for prefix, module, names in _namespaces():
            for name in names:
                orig = getattr(module, name, None)
                if callable(orig):
                    self._replace(module, name, _wrapper(self.recorder, prefix, name, orig))
                    self.hooked.add(f"{prefix}.{name}")
        for name in api_list.TENSOR:
            orig = getattr(Tensor, name, None)
            if callable(orig):
                self._replace(Tensor, name, _wrapper(self.recorder, "Tensor", name, orig))
                self.hooked.add(f"Tensor.{name}")
        if model is not None:
            self._wrap_primitives(model)

    def _replace(self, owner, name, new):
        # Only what the owner itself defines is restored by assignment; an inherited method
        # (Tensor's from its C++ base) is restored by deleting the override.
        had_own = name in vars(owner)
        self._restore.append((owner, name, vars(owner)[name] if had_own else None, had_own))
        setattr(owner, name, new)

    def _wrap_primitives(self, model):
        seen = set()
        for _, cell in model.cells_and_names():
            for attr, value in vars(cell).items():
                if isinstance(value, Primitive) and id(value) not in seen:
                    seen.add(id(value))
                    self._wrap_primitive(attr, value)

    def _wrap_primitive(self, attr, prim):
        cls = prim.__class__
        recorder = self.recorder
        api = f"{attr}.{cls.__name__}"
        self.hooked.add(f"Primitive.{api}")
        orig_call = cls.__call__

        def __call__(self_, *args, **kwargs):
            return _call(recorder, "Primitive", api,
                         lambda *a, **k: orig_call(self_, *a, **k), args, kwargs)

        prim.__class__ = type(cls.__name__, (cls,), {"__call__": __call__,
                                                     "__module__": cls.__module__})
        self._primitives.append((prim, cls))

    def uninstall(self):
        for owner, name, orig, had_own in reversed(self._restore):
            if had_own:
                setattr(owner, name, orig)
            else:
                delattr(owner, name)
        self._restore = []
        for prim, cls in self._primitives:
            prim.__class__ = cls
        self._primitives = []

