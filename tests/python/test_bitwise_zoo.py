"""Capture never perturbs training: over a zoo of real architectures (tests/python/zoo_models.py), one
AdamW step captured at L0, L1, mix and L2 gives a loss and every weight and buffer torch.equal to the
uncaptured step, which is first shown to repeat itself (else the model is skipped, saying so).

The module backward entries of L0/mix are also checked against torch's own full backward hooks on an
uncaptured run: the same entries, and gradients of the same norms (to rounding, since torch's hook
sums an output's gradient in another order).

Runs in both torch lanes; the transformers models need transformers (the torch 2.x lane), the
torchvision ones torchvision.
"""
import json
import math
import os
import sys

import pytest

from conftest import PYDIR, rank_dir

torch = pytest.importorskip("torch")
sys.path.insert(0, str(PYDIR))
import numprobe  # noqa: E402
import zoo_models as zoo  # noqa: E402

torch.set_num_threads(1)
LEVELS = ["L0", "L1", "mix", "L2"]


def require(name):
    pkg = zoo.missing_package(name)
    if pkg is None:
        return
    if os.environ.get("NUMPROBE_REQUIRE_LIVE"):
        pytest.fail(f"{name} needs {pkg}, which this lane promises")
    pytest.skip(f"{name} needs {pkg}, not installed for this interpreter")


@pytest.fixture(scope="module")
def references():
    """name -> the uncaptured step, computed once; None where two runs differ."""
    return {}


def reference(references, name):
    if name not in references:
        first, second = zoo.train_step(name), zoo.train_step(name)
        references[name] = (first, zoo.differences(first, second))
    ref, unstable = references[name]
    if unstable:
        pytest.skip(f"{name}: the uncaptured step does not repeat itself here ({unstable[:3]})")
    return ref


def captured(name, dump, level):
    dbg = numprobe.PrecisionDebugger(dump_path=str(dump), level=level)
    try:
        result = zoo.train_step(name, dbg)
    finally:
        dbg.close()
    data = json.loads((rank_dir(dump / "step0") / "dump.json").read_text())["data"]
    return result, data


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_capture_is_bitwise(tmp_path, references, name, level):
    require(name)
    ref = reference(references, name)
    result, data = captured(name, tmp_path / "dump", level)
    diff = zoo.differences(ref, result)
    assert not diff, f"{name} captured at {level} changed {diff[:5]}"
    # Not vacuous: backward was observed.
    backward = [n for n in data if ".backward." in n or n.endswith(".backward")]
    assert backward, f"{name} {level}: no backward entry"
    if level in ("L0", "mix"):
        module_bwd = [n for n in backward if n.startswith("Module.")]
        with_grads = [n for n in module_bwd if any(v for v in data[n].get("input", []))]
        assert with_grads, f"{name} {level}: no module backward entry with a gradient"
        assert any(".parameters_grad." in n for n in data)
    gaps = {n: data[n]["unobserved"] for n in data if "unobserved" in data[n]}
    if gaps:
        print(f"{name} {level}: named gaps {gaps}")


def _hook_norms(name):
    """Module backward entries as torch's full backward hooks see them on an uncaptured step:
    entry name -> (norms of grad_output, norms of grad_input), None for a missing gradient."""
    torch.manual_seed(0)
    model, loss_of = zoo.ZOO[name][1]()
    model.train()
    seen, calls, stacks, widths = {}, {}, {}, {}

    def norm(g):
        return None if g is None else g.detach().double().norm().item()

    for path, module in model.named_modules():
        if not path:
            continue
        prefix = f"Module.{path}.{type(module).__name__}"

        def pre(m, args, prefix=prefix):
            n = calls.get(prefix, 0)
            calls[prefix] = n + 1
            stacks.setdefault(prefix, []).append(n)

        def post(m, args, output, prefix=prefix):
            # msprobe's convention, which numprobe keeps: a non-tensor item of a tuple output
            # (nn.LSTM's (h_n, c_n)) gets one null per tensor inside it.
            items = output if isinstance(output, tuple) else (output,)
            widths[(prefix, stacks[prefix][-1])] = [
                1 if isinstance(i, torch.Tensor) else max(1, _tensors_in(i)) for i in items]

        def back(m, grad_input, grad_output, prefix=prefix):
            n = stacks[prefix].pop()
            outs = []
            for g, width in zip(grad_output, widths[(prefix, n)]):
                outs += [norm(g)] if width == 1 else [None] * width
            seen[f"{prefix}.backward.{n}"] = (outs, [norm(g) for g in grad_input])

        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
        module.register_full_backward_hook(back)
    torch.manual_seed(1)
    loss_of(model).backward()
    return seen


def _tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        return 1
    return sum(_tensors_in(o) for o in obj) if isinstance(obj, (tuple, list)) else 0


def _entry_norms(leaves):
    return [None if leaf is None else leaf["Norm"] for leaf in leaves]


@pytest.mark.parametrize("name", ["reused_module", "tied_weights", "lstm_lm", "hf_gpt2", "hf_llama"])
def test_module_gradients_are_torchs(tmp_path, name):
    """The entries torch's full backward hooks would give, each gradient's norm within rounding.
    (Models whose module outputs are modified in place cannot run under torch's own hooks.)"""
    require(name)
    expected = _hook_norms(name)
    _, data = captured(name, tmp_path / "dump", "L0")
    got = {n: (_entry_norms(e["input"]), _entry_norms(e["output"]))
           for n, e in data.items() if n.startswith("Module.") and ".backward." in n}
    assert sorted(got) == sorted(expected)
    for entry, (outs, ins) in expected.items():
        for side, want, have in (("input", outs, got[entry][0]), ("output", ins, got[entry][1])):
            assert len(want) == len(have), f"{entry} {side}: {have} != {want}"
            for i, (w, h) in enumerate(zip(want, have)):
                assert (w is None) == (h is None), f"{entry}.{side}.{i}: {h} != {w}"
                if w is not None:
                    assert math.isclose(w, h, rel_tol=1e-5, abs_tol=1e-12), f"{entry}.{side}.{i}"


class _ScalesItsInput(torch.nn.Module):
    def forward(self, x):
        x.mul_(2.0)  # x is a view: autograd replaces its edge, the old one is no longer fed
        return x * 3.0


class _Gaps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.scale = _ScalesItsInput()
        self.same = torch.nn.Identity()

    def forward(self, x):
        h = self.fc(x)
        return self.same(self.scale(h[:, :4])).sum() + h.sum()


def _gap_step(dump=None):
    torch.manual_seed(0)
    model = _Gaps()
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    dbg = numprobe.PrecisionDebugger(dump_path=str(dump), level="L0") if dump else None
    if dbg:
        dbg.start(model)
    model(x).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    if dbg:
        dbg.stop()
        dbg.step()
        dbg.close()
    return grads


def test_named_gap_and_pass_through(tmp_path):
    """A module that modifies its input (a view) in place: the gradient of that input cannot be seen
    without a node of numprobe's, so it is null and named in "unobserved"; nn.Identity returns its
    input, whose gradient is then its output's. Training stays bitwise either way."""
    ref = _gap_step()
    got = _gap_step(tmp_path / "dump")
    assert all(torch.equal(a, b) for a, b in zip(ref, got))
    data = json.loads((rank_dir(tmp_path / "dump" / "step0") / "dump.json").read_text())["data"]
    scale = data["Module.scale._ScalesItsInput.backward.0"]
    assert scale["output"] == [None] and scale["unobserved"] == ["output.0"]
    assert scale["input"][0] is not None
    same = data["Module.same.Identity.backward.0"]
    assert "unobserved" not in same and same["output"] == same["input"]
    assert "unobserved" not in data["Module.fc.Linear.backward.0"]


class _ReturnsWhatItUses(torch.nn.Module):
    """Eager attention's shape: it returns the weights it also multiplies with its values."""

    def forward(self, x):
        w = torch.softmax(x @ x.transpose(-1, -2), dim=-1)
        return w @ x, w


def test_an_output_the_call_also_uses_is_a_named_gap(tmp_path):
    """The weights' node gradient sums the call's own use (w @ x) with the caller's (none here):
    torch's hook reports the caller's part only (None), which no hook on the call's nodes can see.
    Null and named, not the internal gradient. Regression: eager attention's weights got a
    gradient, and compare called eager against sdpa attention structure_differs."""
    torch.manual_seed(0)
    model = torch.nn.Sequential()
    model.add_module("att", _ReturnsWhatItUses())
    x = torch.randn(2, 4, 8, requires_grad=True)
    dbg = numprobe.PrecisionDebugger(dump_path=str(tmp_path / "dump"), level="L0")
    dbg.start(model)
    out, _ = model.att(x)
    out.pow(2).sum().backward()
    dbg.stop()
    dbg.step()
    dbg.close()
    data = json.loads((rank_dir(tmp_path / "dump" / "step0") / "dump.json").read_text())["data"]
    entry = data["Module.att._ReturnsWhatItUses.backward.0"]
    assert entry["input"][0] is not None and entry["input"][1] is None, entry["input"]
    assert entry["unobserved"] == ["input.1"], entry
    assert entry["output"][0] is not None
