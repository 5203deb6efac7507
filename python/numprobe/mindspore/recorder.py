"""Entries of one MindSpore capture: names, counters, the cell stack, backward hooks.

Forward entries are recorded after the call returns (msprobe's ``input_args``, ``input_kwargs``,
``output``). Backward entries come from MindSpore's own per-call gradient hook op,
``CellBackwardHook`` (what ``Cell.register_backward_hook`` is built on in PyNative mode): one
instance per call is put on the call's tensor inputs and on its outputs, so its callback gets the
gradients of the outputs (msprobe's backward ``input``) and of the inputs (``output``) of exactly
that call, with the call's name bound. The op is an identity: losses and gradients stay bitwise
equal (tests/python/mindspore/test_ms_capture.py checks it).
"""
import collections
import os
import sys
import threading

from mindspore.ops.operations import _inner_ops

from . import values

_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Recorder:
    def __init__(self, session):
        self.session = session
        self.level = session.level()
        self.task = session.task()
        dm = session.data_mode()
        self.forward = dm["forward"]
        self.backward = dm["backward"]
        self.inputs = dm["input"]
        self.outputs = dm["output"]
        self.with_cells = self.level in ("L0", "mix")
        self._local = threading.local()
        # CellBackwardHook holds its hook table by weak reference: the tables live here until the
        # step ends (their backward has run by then).
        self._tables = []

    # ---- state ---------------------------------------------------------------------------------
    @property
    def busy(self):
        """True inside numprobe's own work or inside a recorded API: nested calls are the API's
        implementation, not the user's calls (msprobe records the outermost)."""
        return getattr(self._local, "busy", 0) > 0

    def enter(self):
        self._local.busy = getattr(self._local, "busy", 0) + 1

    def leave(self):
        self._local.busy -= 1

    def cell_stack(self):
        st = getattr(self._local, "cells", None)
        if st is None:
            st = self._local.cells = []
        return st

    def parent(self):
        st = self.cell_stack()
        return st[-1] if st else None

    def new_step(self):
        self._tables = []
        self._local = threading.local()

    # ---- decisions -----------------------------------------------------------------------------
    def selected(self, forward_name):
        if self.session.selects_everything():
            return True
        return self.session.wants_forward(forward_name, self.parent() or "")

    # ---- backward hooks ------------------------------------------------------------------------
    def grad_hook(self, backward_name, parent_backward):
        """A per-call hook op whose callback records `backward_name`; None when no backward
        entry is wanted."""
        if not self.backward:
            return None
        table = collections.OrderedDict()

        def on_grads(_cell, grad_input, grad_output):
            self.enter()
            try:
                self.record_backward(backward_name, grad_output, grad_input, parent_backward)
            finally:
                self.leave()
            return None  # the gradients go on unchanged

        table[0] = on_grads
        self._tables.append(table)
        hook = _inner_ops.CellBackwardHook(backward_name, None, table)
        hook.register_backward_hook()
        return hook

    # ---- entries -------------------------------------------------------------------------------
    def record_forward(self, name, args, kwargs, output, parent):
        if not self.forward:
            return
        parts = []
        if self.inputs:
            parts.append(("input_args", list(args), name + ".input", False))
            parts.append(("input_kwargs", dict(kwargs), name + ".input", False))
        if self.outputs:
            out = list(output) if isinstance(output, (tuple, list)) else [output]
            parts.append(("output", out, name + ".output", True))
        self.session.submit(name, parts, self.frames(), parent)

    def snapshot_inputs(self, args, kwargs):
        """(args, kwargs) with every tensor held as it is now (before a call that changes its
        arguments in place); None when no forward input is recorded."""
        if not (self.forward and self.inputs):
            return None
        return [_held(a) for a in args], {k: _held(v) for k, v in kwargs.items()}

    def record_collective(self, name, before, after, parent):
        """msprobe's entry of a collective: input_args/input_kwargs as they were before it ran,
        output the arguments after it."""
        if not self.forward:
            return
        parts = []
        if before is not None:
            parts.append(("input_args", before[0], name + ".input", False))
            parts.append(("input_kwargs", before[1], name + ".input", False))
        if self.outputs:
            parts.append(("output", after, name + ".output", True))
        self.session.submit(name, parts, self.frames(), parent)

    def record_backward(self, name, grad_output, grad_input, parent):
        parts = []
        if self.inputs:
            parts.append(("input", _as_list(grad_output), name + ".input", False))
        if self.outputs:
            parts.append(("output", _as_list(grad_input), name + ".output", True))
        self.session.submit(name, parts, self.frames(), parent)

    def record_parameters_grad(self, name, grads):
        """{"weight": grad, ...} of one cell's own parameters (no stack: msprobe writes none)."""
        parts = [(pname, grad, f"{name}.{pname}", True) for pname, grad in grads.items()]
        self.session.submit(name, parts, None, None)

    def frames(self):
        """The Python stack, innermost first, without numprobe's own frames (stack.json)."""
        out = []
        f = sys._getframe(1)
        while f is not None:
            path = f.f_code.co_filename
            if not path.startswith(_OWN_DIR):
                out.append((path, f.f_lineno, f.f_code.co_name))
            f = f.f_back
        return out


def _held(value):
    """value with its tensors read now (values.Held), lists and dicts walked."""
    if isinstance(value, values.TENSOR_TYPES) and not isinstance(value, values.Held):
        return values.hold(value)
    if isinstance(value, (list, tuple)):
        return [_held(v) for v in value]
    if isinstance(value, dict):
        return {k: _held(v) for k, v in value.items()}
    return value


def _as_list(grads):
    if grads is None:
        return []
    return list(grads) if isinstance(grads, (tuple, list)) else [grads]


def backward_name_of(forward_name):
    """"Cell.a.B.forward.3" -> "Cell.a.B.backward.3"; "Functional.relu.0.forward" ->
    "Functional.relu.0.backward"."""
    if forward_name is None:
        return None
    head, sep, tail = forward_name.rpartition(".forward")
    return head + ".backward" + tail if sep else forward_name
