"""Levels L0 and mix: every cell of the model but the root, named as msprobe names it,
``Cell.<path>.<Class>.forward.<n>`` and ``.backward.<n>``.

Public Cell hooks only: a forward pre-hook counts the call, pushes it on the cell stack (the parent
of what runs inside, for construct.json) and puts the call's gradient hook on its inputs; the
forward hook records the entry and puts the same hook on the outputs. Calls of one cell are told
apart by a per-cell list of open calls (a cell running inside itself is rare, but handled).

Parameter gradients: a hook on each of a cell's own trainable parameters (``Parameter.register_hook``)
collects them; once every one has arrived, ``Cell.<path>.<Class>.parameters_grad.<k>`` is written,
``{"weight": ..., "bias": ...}``, as msprobe does. MindSpore keeps a parameter hook inside a
``value_and_grad`` function made while it was registered even after its handle is removed, so the
hook checks that capture is on before anything else.
"""
import inspect

from mindspore import nn

from .recorder import backward_name_of

# MindSpore >= 2.5 hands forward hooks the keyword arguments when asked (with_kwargs): the cell's
# entry then has them in input_kwargs, as msprobe's on such versions; older ones give {}.
_WITH_KWARGS = "with_kwargs" in inspect.signature(nn.Cell.register_forward_pre_hook).parameters


class CellHooks:
    def __init__(self, recorder):
        self.recorder = recorder
        self._handles = []
        self._hooked = set()

    def install(self, model):
        for path, cell in model.cells_and_names():
            if not path or id(cell) in self._hooked:  # the root is not dumped (msprobe)
                continue
            self._hooked.add(id(cell))
            prefix = f"Cell.{path}.{cell.__class__.__name__}."
            kw = {"with_kwargs": True} if _WITH_KWARGS else {}
            self._handles.append(cell.register_forward_pre_hook(self._pre_hook(prefix), **kw))
            self._handles.append(cell.register_forward_hook(self._post_hook(), **kw))
            if self.recorder.backward:
                self._hook_parameters(f"Cell.{path}.{cell.__class__.__name__}", cell)

    def uninstall(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        self._hooked = set()

    def _hook_parameters(self, name, cell):
        params = [(n, p) for n, p in cell._params.items() if p is not None and p.requires_grad]
        if not params:
            return
        rec = self.recorder
        arrived = {}

        def on_grad(pname, grad):
            if rec.busy or not rec.session.active():
                arrived.clear()  # a step's leftovers never complete the next step's set
                return None
            arrived[pname] = grad
            if len(arrived) == len(params):
                grads = {n: arrived[n] for n, _ in params}
                arrived.clear()
                if rec.session.selects_everything() or rec.session.list_matches(
                        name + ".parameters_grad"):
                    entry = f"{name}.parameters_grad.{rec.session.next_count(name + '.parameters_grad')}"
                    rec.enter()
                    try:
                        rec.record_parameters_grad(entry, grads)
                    finally:
                        rec.leave()
            return None

        for pname, p in params:
            self._handles.append(p.register_hook(lambda g, pname=pname: on_grad(pname, g)))

    def _pre_hook(self, prefix):
        rec = self.recorder

        def pre(cell, args, kwargs=None):
            calls = cell.__dict__.setdefault("_numprobe_calls", [])
            if rec.busy or not rec.session.active():
                calls.append(None)
                return None
            index = rec.session.next_count(prefix)
            forward_name = f"{prefix}forward.{index}"
            parent = rec.parent()
            selected = rec.selected(forward_name)
            hook = None
            if selected:
                hook = rec.grad_hook(f"{prefix}backward.{index}", backward_name_of(parent))
            calls.append((forward_name, parent, selected, hook))
            rec.cell_stack().append(forward_name)
            if hook is None:
                return None
            rec.enter()
            try:
                hooked = hook(tuple(args))
            finally:
                rec.leave()
            return (hooked, kwargs) if _WITH_KWARGS else hooked

        return pre

    def _post_hook(self):
        rec = self.recorder

        def post(cell, args, *rest):
            kwargs, output = rest if _WITH_KWARGS else ({}, rest[0])
            calls = cell.__dict__.get("_numprobe_calls")
            call = calls.pop() if calls else None
            if call is None:
                return None
            forward_name, parent, selected, hook = call
            stack = rec.cell_stack()
            if stack and stack[-1] == forward_name:
                stack.pop()
            if not selected:
                return None
            rec.enter()
            try:
                rec.record_forward(forward_name, args, kwargs or {}, output, parent)
                if hook is not None and output is not None:
                    return hook(output)
            finally:
                rec.leave()
            return None

        return post
