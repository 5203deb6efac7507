"""Idle means idle (issue 33): a step the config does not select, and code after stop(), run the
model as if numprobe were not there: nothing written, no hook left on a module or parameter, no
torch function mode, and not one more Python frame than an uncaptured step (counted with
sys.setprofile, so the test says nothing about time)."""
import collections
import json
import sys

import pytest

from conftest import PYDIR, rank_dir

sys.path.insert(0, str(PYDIR))
torch = pytest.importorskip("torch")
import numprobe  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class _Block(torch.nn.Module):
    """A Linear, a GELU module and a Python-level functional (F.layer_norm is Python code in
    torch, so an API site stands over it during capture)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.act = torch.nn.GELU()

    def forward(self, x):
        return F.layer_norm(self.act(self.fc(x)), (8,)) + x


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(_Block(), _Block(), torch.nn.Linear(8, 2))


def _train_step(model, opt, x):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()


def _python_frames(fn):
    """Python frames entered while fn runs, by code object (what a hook written in Python, torch's
    BackwardHook machinery or a Python-level function mode would add)."""
    frames = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            frames[frame.f_code] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return frames


def _hooks_left(model):
    left = []
    for name, m in model.named_modules():
        for kind in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks"):
            if getattr(m, kind, None):
                left.append(f"{name or '<root>'}.{kind}")
    for name, p in model.named_parameters():
        # an empty dict counts: it keeps a C++ pre-hook that walks it in every backward
        if getattr(p, "_backward_hooks", None) is not None:
            left.append(f"{name}._backward_hooks")
    return left


def _mode_active():
    c = torch._C
    if hasattr(c, "_len_torch_function_stack") and c._len_torch_function_stack() > 0:
        return True
    return bool(getattr(c, "_is_torch_function_mode_enabled", lambda: False)())


@pytest.mark.parametrize("level", ["L0", "L1", "mix", "L2"])
def test_unselected_steps_and_code_after_stop_run_as_uncaptured(tmp_path, level):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(3, 8)
    train = lambda: _train_step(model, opt, x)  # noqa: E731
    for _ in range(2):
        train()  # lazy imports and first-call paths happen before anything is counted
    uncaptured = _python_frames(train)
    assert uncaptured, "the profiler saw no Python frame: the comparison below would prove nothing"

    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "dump", level=level, step=[0])
    try:
        # step 0 is selected: hooks and mode are on while it captures
        dbg.start(model)
        if level in ("L0", "mix"):
            assert _hooks_left(model), "a selected step at L0/mix hooks the modules"
        if level in ("L1", "mix"):
            assert _mode_active(), "a selected step at L1/mix enters the API mode"
        train()
        dbg.stop()
        assert _hooks_left(model) == [] and not _mode_active()
        assert _python_frames(train) == uncaptured, "code after stop() runs extra Python"
        dbg.step()
        for _ in range(2):  # steps 1 and 2: not selected
            dbg.start(model)
            assert _hooks_left(model) == [] and not _mode_active()
            assert _python_frames(train) == uncaptured, "an unselected step runs extra Python"
            dbg.stop()
            dbg.step()
        dbg.flush()
    finally:
        dbg.close()
    root = tmp_path / "dump"
    assert sorted(p.name for p in root.iterdir()) == ["step0"]
    with open(rank_dir(root / "step0") / "dump.json") as f:
        names = list(json.load(f)["data"])
    prefix = {"L0": "Module.", "L1": "Functional.", "mix": "Module.", "L2": "Aten."}[level]
    assert any(n.startswith(prefix) for n in names), names[:5]
    # the hooks that step 0 registered and removed again still recorded its backward
    if level in ("L0", "mix"):
        assert "Module.0.fc.Linear.backward.0" in names
        assert "Module.0.fc.Linear.parameters_grad.0" in names


def test_start_without_stop_follows_the_selection(tmp_path):
    """start() once, step() every iteration (no stop()): the hooks are on exactly in the selected
    steps, and the selected step's module entries are the same as with start()/stop()."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(3, 8)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="mix", step=[1])
    try:
        dbg.start(model)
        on = []
        for _ in range(3):
            on.append(bool(_hooks_left(model)))
            _train_step(model, opt, x)
            dbg.step()
        dbg.stop()
        assert on == [False, True, False]
        assert _hooks_left(model) == []
        dbg.flush()
    finally:
        dbg.close()
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["step1"]
    with open(rank_dir(tmp_path / "d" / "step1") / "dump.json") as f:
        names = set(json.load(f)["data"])
    assert {"Module.1.act.GELU.forward.0", "Module.1.act.GELU.backward.0",
            "Module.2.Linear.parameters_grad.0"} <= names


def test_stop_inside_a_forward_leaves_no_stale_parent(tmp_path):
    """stop() inside a module's forward takes its forward hook off before it runs, so that module
    never leaves the stack of enclosing modules; the next dumped step's modules must not be
    parented by it (construct.json)."""
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="mix", step=[0, 1])

    class Stopper(torch.nn.Module):
        def forward(self, x):
            if dbg.current_step == 0:
                dbg.stop()
            return x * 2

    model = torch.nn.Sequential(Stopper(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 8)
    try:
        for _ in range(2):
            dbg.start(model)
            model(x).sum().backward()
            dbg.stop()
            dbg.step()
        dbg.flush()
    finally:
        dbg.close()
    with open(rank_dir(tmp_path / "d" / "step1") / "construct.json") as f:
        construct = json.load(f)
    assert construct["Module.1.Linear.forward.0"] is None, construct
    assert construct["Module.0.Stopper.forward.0"] is None, construct
