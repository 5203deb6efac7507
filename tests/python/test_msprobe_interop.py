"""Drop-in for msprobe users (issue 16): one computation dumped by msprobe and by numprobe pairs row
for row, and capture records what really happened.

The goldens are unmodified msprobe v8.3.3 dumps made on Debian 12's torch 1.13 (CPU, OpenBLAS) by the
shared script shared/fixtures/msprobe/interop_torch113/train.py, read in place; its `np` mode dumps
the same computation with numprobe. They pair only with a numprobe dump of the same torch, so the
pairing tests run in the torch 1.13 lane (the torch 2.x lane pairs numprobe with the live msprobe in
test_msprobe_live.py). The capture tests below them run in both lanes.

What numprobe records beyond msprobe, and why (docs/capture.md, "Differences from msprobe"):
- Module.*.backward entries: msprobe on torch 1.13 writes none;
- parameters_grad of modules whose forward never runs (nn.MultiheadAttention's out_proj, whose
  weights the attention function uses directly): msprobe registers none for them.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from conftest import (FIXTURES, NUMPROBE_ONLY_ROWS_TORCH1, PYDIR, assert_pairs_row_for_row,
                      numprobe_compare, rank_dir)

INTEROP = FIXTURES / "interop_torch113"
TRAIN = INTEROP / "train.py"
ON_FIXTURE_TORCH = torch.__version__.startswith("1.13")  # Debian 12: "1.13.0a0" (package 1.13.1)


def train(out, model, tool, level, env_extra=None):
    """Runs the shared script; returns its RESULT fields (loss, weight sum)."""
    env = dict(os.environ, PYTHONPATH=str(PYDIR), **(env_extra or {}))
    p = subprocess.run([sys.executable, str(TRAIN), model, tool, level, str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"train.py {model} {tool} {level}:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    (line,) = [x for x in p.stdout.splitlines() if x.startswith("RESULT")]
    return line.split()[4:]


@pytest.fixture(scope="module")
def numprobe_dumps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("interop")
    return tmp, {}


# An older x86-64 CPU generation, emulated on this one: scalar ATen kernels, SSE4.1 oneDNN, OpenBLAS's
# Prescott kernels (it replaces an OPENBLAS_CORETYPE the machine sets). Initial weights, random data,
# GEMMs and the LSTM then round their last bits otherwise than the machine the goldens were made on.
OLD_CPU = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
           "OPENBLAS_CORETYPE": "Prescott"}


def numprobe_dump(numprobe_dumps, model, level, cpu="native"):
    tmp, cache = numprobe_dumps
    if (model, level, cpu) not in cache:
        out = tmp / f"np_{model}_{level}_{cpu}"
        train(out, model, "np", level, OLD_CPU if cpu == "old" else None)
        cache[(model, level, cpu)] = out
    return cache[(model, level, cpu)]


CASES = [(m, lv, "native") for lv in ("mix", "L1")
         for m in ("resnet18", "mobilenet", "transformer", "lstm")]
# The goldens were dumped on one machine: the pairing and the judgement must hold on any CPU. The
# LSTM's weight gradients and input gradient come from kernels no entry records (issue 30).
CASES += [("lstm", lv, "old") for lv in ("mix", "L1")]


@pytest.mark.skipif(not ON_FIXTURE_TORCH, reason="the msprobe goldens were dumped with torch 1.13")
@pytest.mark.parametrize("model,level,cpu", CASES, ids=[f"{m}-{lv}-{c}" for m, lv, c in CASES])
def test_numprobe_and_msprobe_dumps_pair_row_for_row(numprobe_dumps, tmp_path, model, level, cpu):
    """Every row of msprobe's dump pairs with numprobe's, in both directions; no row is an error and
    there is no first divergence. numprobe's extra rows are only the documented kinds."""
    np_dump = numprobe_dump(numprobe_dumps, model, level, cpu)
    assert assert_pairs_row_for_row(np_dump, INTEROP / f"{model}_{level}", tmp_path,
                                    NUMPROBE_ONLY_ROWS_TORCH1) >= 100


@pytest.mark.skipif(not ON_FIXTURE_TORCH, reason="the msprobe goldens were dumped with torch 1.13")
def test_inplace_module_input_is_excused_not_hidden(numprobe_dumps, tmp_path):
    """msprobe records ReLU(inplace=True)'s input after the op (minimum 0): those rows pair, are marked
    inplace_input_after_op and judged pass, and nothing else is excused."""
    rows, _ = numprobe_compare(numprobe_dump(numprobe_dumps, "resnet18", "mix"),
                               INTEROP / "resnet18_mix", tmp_path)
    excused = [r for r in rows if r["Reason"] == "inplace_input_after_op"]
    assert excused and all(".ReLU.forward." in r["NPU Name"] and ".input." in r["NPU Name"] for r in excused)
    assert all(r["Status"] == "pass" for r in excused)


def entries(rank):
    return json.loads((rank / "dump.json").read_text())["data"]


def test_inplace_backward_equals_an_L1_capture(numprobe_dumps):
    """At mix, module backward hooks make a module's input a view; an in-place API on it (ReLU's
    relu_, BasicBlock's `out += identity`) is then recorded by autograd in a CopySlices node. Its
    backward entry must hold the op's gradients, exactly as at L1 (no module hooks)."""
    mix = entries(rank_dir(numprobe_dump(numprobe_dumps, "resnet18", "mix") / "step0"))
    l1 = entries(rank_dir(numprobe_dump(numprobe_dumps, "resnet18", "L1") / "step0"))
    api_backward = [k for k in l1 if k.endswith(".backward") and not k.startswith("Module.")]
    assert any(k.startswith("Functional.relu.") for k in api_backward)
    assert any(k.startswith("Tensor.__iadd__.") for k in api_backward)
    for k in api_backward:
        assert k in mix, f"{k} recorded at L1 but not at mix"
        assert mix[k] == l1[k], f"{k}: mix and L1 backward statistics differ"


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_capture_is_bitwise_on_the_transformer(numprobe_dumps, level):
    """nn.MultiheadAttention checks `query is key`: module backward hooks must keep one tensor passed
    three times one tensor, or the attention takes another branch (other ops, other rounding)."""
    tmp, _ = numprobe_dumps
    plain = train(tmp / "none", "transformer", "none", level)
    captured = train(tmp / f"bitwise_{level}", "transformer", "np", level)
    assert captured == plain


def test_every_resnet18_stack_is_its_own(numprobe_dumps):
    """Each forward entry's stack shows the call path that made it: an API inside layer3 carries the
    frame `x = self.layer3(x)` and no other layer's. (A cache keyed on the innermost frames once gave
    layer3's calls layer2's outer frames.)"""
    rank = rank_dir(numprobe_dump(numprobe_dumps, "resnet18", "mix") / "step0")
    construct = json.loads((rank / "construct.json").read_text())
    stacks = {}
    for names, frames in json.loads((rank / "stack.json").read_text()).values():
        for n in names:
            stacks[n] = frames
    checked = 0
    for name, frames in stacks.items():
        if not name.endswith(".forward"):
            continue
        layer = None
        parent = construct.get(name)
        while parent:
            m = re.match(r"Module\.(layer\d)\.Sequential\.forward\.0$", parent)
            layer = m.group(1) if m else layer
            parent = construct.get(parent)
        calls = {m.group(1) for f in frames for m in [re.search(r"x = self\.(layer\d)\(x\)", f)] if m}
        assert calls == ({layer} if layer else set()), (name, layer, calls)
        checked += 1
    assert checked > 100


def test_names_and_arguments_as_msprobe_writes_them(tmp_path):
    """Operators by their dunder names, arguments as passed, is_recompute, ones_like of backward,
    no backward entry for a dropout with p = 0."""
    code = f"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
a = torch.ones(4, requires_grad=True); b = torch.full((4,), 2.0)
w = torch.ones(4); bias = torch.zeros(4)
d.start()
c = a + b; c = c * 3; c = 2 * c; c = c.add(b); c += b
y = F.layer_norm(c, (4,), w, bias, 1e-5)
y = F.dropout(y, 0.0, True, False)
y.sum().backward()
d.stop(); d.step(); d.close()
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = entries(rank_dir(tmp_path / "d" / "step0"))
    for name in ("Tensor.__add__.0.forward", "Tensor.__mul__.0.forward", "Tensor.__rmul__.0.forward",
                 "Tensor.add.0.forward", "Tensor.__iadd__.0.forward", "Torch.ones_like.0.forward"):
        assert name in data, (name, sorted(data))
    ln = data["Functional.layer_norm.0.forward"]
    assert len(ln["input_args"]) == 5 and ln["input_kwargs"] == {}
    assert list(ln) == ["input_args", "input_kwargs", "is_recompute", "output"]
    assert ln["is_recompute"] is False
    assert "Functional.dropout.0.forward" in data and "Functional.dropout.0.backward" not in data
    assert "Functional.layer_norm.0.backward" in data


def test_a_rebound_api_is_still_recorded(tmp_path):
    """A library that rebinds F.gelu (and torch.zeros_like's own name) before capture starts: the
    call is recorded under torch's name, never dropped."""
    code = f"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, {str(PYDIR)!r})
_gelu = F.gelu
def gelu(x, approximate="none"):
    return _gelu(x, approximate=approximate)
F.gelu = gelu
_ln = F.layer_norm
F.layer_norm = lambda *a, **k: _ln(*a, **k)
import numprobe
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
x = torch.randn(4, 8)
d.start()
y = F.gelu(x)
z = F.layer_norm(y, (8,))
d.stop(); d.step(); d.close()
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = entries(rank_dir(tmp_path / "d" / "step0"))
    assert "Functional.gelu.0.forward" in data, sorted(data)
    assert "Functional.layer_norm.0.forward" in data, sorted(data)
    assert not any(k.startswith("Torch.obj.") for k in data)


def test_the_wider_api_set_names_functions_as_they_call_themselves(tmp_path):
    """NUMPROBE_API_SET=all records every public torch callable; torch 1.13's leaked torch.obj is
    torch.zeros_like and is named so."""
    code = f"""
import sys, torch
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
d.start()
z = torch.zeros_like(torch.ones(3))
d.stop(); d.step(); d.close()
"""
    env = dict(os.environ, NUMPROBE_API_SET="all")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    data = entries(rank_dir(tmp_path / "d" / "step0"))
    assert "Torch.zeros_like.0.forward" in data and "Torch.ones.0.forward" in data, sorted(data)


def test_api_sites_stay_armed_until_close_and_record_only_dumping_steps(tmp_path):
    """Sites go on at the first start() and come off at close(), leaving torch's own attributes;
    between start/stop pairs they call through and record nothing."""
    code = f"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
add, ln = torch.Tensor.__add__, F.layer_norm
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
a = torch.ones(3)
d.start(); b = a + a; d.stop()
assert torch.Tensor.__add__ is not add and type(F.layer_norm).__name__ == "ApiSite"
c = a + a  # between captures: not recorded
d.step()
d.start(); b = a + a; d.stop(); d.step()
d.close()
assert torch.Tensor.__add__ is add and F.layer_norm is ln, (torch.Tensor.__add__, F.layer_norm)
assert "__add__" not in vars(torch.Tensor)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for step in (0, 1):
        data = entries(rank_dir(tmp_path / "d" / f"step{step}"))
        assert list(data) == ["Tensor.__add__.0.forward"], (step, list(data))


def test_operator_aliases_are_named_as_msprobe_names_them(tmp_path):
    """Issue 30. msprobe wraps the listed attributes of torch.Tensor; Python reaches torch's __rdiv__
    through __rtruediv__, neg through __neg__ and abs through __abs__, which it leaves alone. So msprobe
    records `1.0 / x` as Tensor.reciprocal then Tensor.__mul__, and nothing for `-x` and `abs(x)`
    (seen live with msprobe 26.2 in test_msprobe_live.py); numprobe must count the same calls."""
    code = f"""
import sys, torch
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
x = torch.randn(4, requires_grad=True)
d.start()
y = 1.0 / x
z = -y + abs(x)
u = x.neg() * x.abs() / x
w = x.__rdiv__(2.0)
d.stop(); d.step(); d.close()
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = entries(rank_dir(tmp_path / "d" / "step0"))
    forward = [k for k in data if k.endswith(".forward")]
    assert forward == ["Tensor.reciprocal.0.forward", "Tensor.__mul__.0.forward",
                       "Tensor.__add__.0.forward", "Tensor.neg.0.forward", "Tensor.abs.0.forward",
                       "Tensor.__mul__.1.forward", "Tensor.__truediv__.0.forward",
                       "Tensor.__rdiv__.0.forward"], forward
