"""Capture (numprobe.PrecisionDebugger) on real models: levels, observer effect, values, config."""
import contextlib
import json
import math
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from conftest import PYDIR, ROOT, rank_dir

sys.path.insert(0, str(PYDIR))
sys.path.insert(0, str(ROOT / "examples" / "python"))
torch = pytest.importorskip("torch")
import numprobe  # noqa: E402
import tiny_models as cm  # noqa: E402

torch.set_num_threads(1)


def load(rank_dir, name="dump.json"):
    with open(rank_dir / name) as f:
        return json.load(f)


def run(tmp_path, level, make=cm.make_gpt, batch=cm.gpt_batch, step=cm.gpt_step, steps=1,
        task="statistics", setup=None, **kw):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "dump", level=level, task=task, **kw)
    if setup:
        setup(dbg)
    losses = []
    for i in range(steps):
        dbg.start(model)
        losses.append(step(model, opt, batch(i)))
        opt.zero_grad()
        dbg.stop()
        dbg.step()
    dbg.close()
    return model, losses, tmp_path / "dump"


def reference(make, batch, step):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = step(model, opt, batch(0))
    return model, loss


@pytest.mark.parametrize("level", ["L0", "L1", "mix", "L2"])
def test_levels_dump_forward_and_backward(tmp_path, level):
    _, _, root = run(tmp_path, level)
    d = load(rank_dir(root / "step0"))
    assert d["level"] == level and d["task"] == "statistics" and d["framework"] == "pytorch"
    names = list(d["data"])
    fwd = [n for n in names if ".forward" in n]
    bwd = [n for n in names if ".backward" in n]
    assert fwd and bwd
    # Execution order: every backward comes after the forward it belongs to.
    for n in bwd:
        f = n.replace(".backward", ".forward")
        if f in d["data"]:
            assert names.index(f) < names.index(n), n
    prefixes = {n.split(".")[0] for n in names}
    if level == "L0":
        assert prefixes == {"Module"}
        assert any(".parameters_grad." in n for n in names)
    if level == "L1":
        assert {"Functional", "Tensor", "Torch"} <= prefixes and "Module" not in prefixes
        assert "Torch.relu.0.forward" in names  # `from torch import relu`
    if level == "mix":
        assert {"Module", "Functional"} <= prefixes
    if level == "L2":
        assert prefixes == {"Aten"}
        assert "Aten.gelu.default.0.forward" in names


def test_mix_construct_parents(tmp_path):
    _, _, root = run(tmp_path, "mix")
    c = load(rank_dir(root / "step0"), "construct.json")
    d = load(rank_dir(root / "step0"))["data"]
    assert c["Module.blocks.0.Block.forward.0"] is None
    assert c["Module.blocks.0.fc1.Linear.forward.0"] == "Module.blocks.0.Block.forward.0"
    gelu = "Functional.gelu.0.forward"
    assert c[gelu] == "Module.blocks.0.Block.forward.0"
    assert c["Functional.linear.0.forward"] == "Module.blocks.0.qkv.Linear.forward.0"
    assert c["Functional.gelu.0.backward"] == "Module.blocks.0.Block.backward.0"
    # Module entries carry their own parameters.
    params = d["Module.blocks.0.fc1.Linear.forward.0"]["parameters"]
    assert set(params) == {"weight", "bias"} and params["weight"]["shape"] == [128, 32]
    stack = load(rank_dir(root / "step0"), "stack.json")
    lines = [line for names, frames in stack.values() for line in frames]
    assert any("tiny_models.py" in line and "F.gelu" in line for line in lines)
    assert not any("numprobe/debugger.py" in line for line in lines)


@pytest.mark.parametrize("model", ["gpt", "resnet18"])
@pytest.mark.parametrize("level", ["L1", "mix", "L2"])
def test_observer_effect_is_zero(tmp_path, model, level):
    make, batch, step = {"gpt": (cm.make_gpt, cm.gpt_batch, cm.gpt_step),
                         "resnet18": (cm.make_resnet18, cm.resnet_batch, cm.resnet_step)}[model]
    ref_model, ref_loss = reference(make, batch, step)
    ref_grads = {n: p.detach().clone() for n, p in ref_model.named_parameters()}
    m = make()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level=level)
    dbg.start(m)
    loss = step(m, opt, batch(0))
    dbg.stop()
    dbg.close()
    assert torch.equal(loss, ref_loss)
    for n, p in m.named_parameters():
        assert torch.equal(p.detach(), ref_grads[n]), n  # weights after the SGD step
    assert len(load(rank_dir(tmp_path / "d" / "step0"))["data"]) > 20


def iter_leaves(v):
    if isinstance(v, dict):
        if v.get("type") == "torch.Tensor":
            yield v
        else:
            for x in v.values():
                yield from iter_leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from iter_leaves(x)


def test_statistics_equal_numpy_fp64(tmp_path):
    _, _, root = run(tmp_path, "L1", task="tensor")
    rank = rank_dir(root / "step0")
    d = load(rank)
    assert d["dump_data_dir"] == str(rank / "dump_tensor_data")
    assert statistics_match_saved_tensors(rank, rel=1e-9, abs_mean=1e-12) > 100


def statistics_match_saved_tensors(rank, rel, abs_mean):
    """Every leaf of a tensor-task dump against numpy's float64 statistics of its .npy file;
    returns how many leaves were checked."""
    checked = 0
    for entry in load(rank)["data"].values():
        for leaf in iter_leaves(entry):
            if "data_name" not in leaf or leaf["Max"] is None:
                continue
            a = np.load(rank / "dump_tensor_data" / leaf["data_name"])
            assert list(a.shape) == leaf["shape"]
            if a.dtype == np.bool_:
                continue
            x = a.astype(np.float64)
            assert leaf["Max"] == x.max() and leaf["Min"] == x.min()
            assert leaf["Mean"] == pytest.approx(x.mean(), rel=rel, abs=abs_mean)
            assert leaf["Norm"] == pytest.approx(np.sqrt((x * x).sum()), rel=rel)
            checked += 1
    return checked


def relu_in_md5_mode(tmp_path, x):
    """The Functional.relu entry of relu(x) captured with summary_mode md5 (from a config.json),
    and relu's result."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"task": "statistics", "dump_path": str(tmp_path / "d"),
                               "level": "L1", "statistics": {"summary_mode": "md5"}}))
    dbg = numprobe.PrecisionDebugger(config_path=str(cfg))
    dbg.start()
    y = torch.nn.functional.relu(x)
    dbg.stop()
    dbg.close()
    return load(rank_dir(tmp_path / "d" / "step0"))["data"]["Functional.relu.0.forward"], y


def test_md5_is_crc32_of_tensor_bytes(tmp_path):
    x = torch.randn(5, 7)
    e, y = relu_in_md5_mode(tmp_path, x)
    assert e["input_args"][0]["md5"] == "%08x" % zlib.crc32(x.numpy().tobytes())
    assert e["output"][0]["md5"] == "%08x" % zlib.crc32(y.numpy().tobytes())


def test_steps_counters_reset_and_selection(tmp_path):
    _, _, root = run(tmp_path, "mix", steps=3, step=cm.gpt_step)
    a = list(load(rank_dir(root / "step0"))["data"])
    b = list(load(rank_dir(root / "step1"))["data"])
    assert a == b  # every counter (parameters_grad too) restarts each step
    _, _, root2 = run(tmp_path / "sel", "L1", steps=3, step=cm.gpt_step, **{})
    assert sorted(p.name for p in root2.iterdir()) == ["step0", "step1", "step2"]
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"task": "statistics", "dump_path": str(tmp_path / "s"),
                               "level": "L1", "step": [1]}))
    model = cm.make_gpt()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(config_path=str(cfg))
    for i in range(3):
        dbg.start()
        cm.gpt_step(model, opt, cm.gpt_batch(i))
        dbg.stop()
        dbg.step()
    dbg.close()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["step1"]


def test_overflow_check_keeps_only_nonfinite_outputs(tmp_path):
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1", task="overflow_check")
    dbg.start()
    x = torch.tensor([1.0, 0.0, -1.0])
    torch.exp(x)
    torch.log(x)  # -inf and nan
    dbg.stop()
    dbg.close()
    data = load(rank_dir(tmp_path / "d" / "step0"))["data"]
    assert list(data) == ["Torch.log.0.forward"]
    out = data["Torch.log.0.forward"]["output"][0]
    assert out["nan_count"] == 1 and out["neg_inf_count"] == 1


def test_config_errors_name_the_field(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"task": "statistics", "dump_path": "x", "level": "L3"}))
    with pytest.raises(numprobe.debugger.NumprobeError, match=r"config.json.*level"):
        numprobe.PrecisionDebugger(config_path=str(bad))
    with pytest.raises(numprobe.debugger.NumprobeError, match="nope.json"):
        numprobe.PrecisionDebugger(config_path=str(tmp_path / "nope.json"))
    with pytest.raises(numprobe.debugger.NumprobeError, match="level"):
        numprobe.PrecisionDebugger(dump_path=tmp_path, level="L9")


def test_a_mindspore_only_field_is_named(tmp_path):
    from numprobe.capture_args import OtherFrameworkFieldWarning
    cfg = tmp_path / "ms.json"
    cfg.write_text(json.dumps({"task": "tensor", "dump_path": str(tmp_path / "d"), "level": "L1",
                               "tensor": {"file_format": "bin"}}))
    with pytest.warns(OtherFrameworkFieldWarning, match=r"ms\.json.*tensor\.file_format.*MindSpore"):
        dbg = numprobe.PrecisionDebugger(config_path=str(cfg))
    dbg.close()


@contextlib.contextmanager
def gelu_fault(scale=1.05, approximate="none"):
    """The injected fault: F.gelu computes scale * gelu(x, approximate). Registered with
    register_custom_api, so the faulty function is what capture dumps as Functional.gelu."""
    import torch.nn.functional as F
    orig = F.gelu
    F.gelu = lambda x, approximate_=approximate: orig(x, approximate=approximate_) * scale
    try:
        yield
    finally:
        F.gelu = orig


def test_compare_names_injected_fault(tmp_path, cli):
    _, _, good = run(tmp_path / "a", "mix")
    _, _, same = run(tmp_path / "b", "mix")
    import torch.nn.functional as F
    with gelu_fault():
        _, _, bad = run(tmp_path / "c", "mix",
                        setup=lambda d: d.register_custom_api(F, "gelu", "Functional"))
    assert not hasattr(F.gelu, "_numprobe_original")
    cli("compare", "-t", same, "-g", good, "-o", tmp_path / "same")
    s = json.loads((tmp_path / "same" / "summary.json").read_text())
    assert s["pairs"][0]["error"] == 0 and s["pairs"][0]["first_divergence"] is None
    assert s["pairs"][0]["matched"] == s["pairs"][0]["rows"]
    cli("compare", "-t", bad, "-g", good, "-o", tmp_path / "bad")
    s = json.loads((tmp_path / "bad" / "summary.json").read_text())
    fd = s["pairs"][0]["first_divergence"]
    assert fd is not None and fd["entry"] == "Functional.gelu.0.forward", fd


def test_stats_follow_in_place_writes_of_large_tensors(tmp_path):
    # Large tensors' statistics are cached per version: writes through the tensor or through a
    # view of it must be seen.
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    x = torch.rand(400, 400) + 1
    dbg.start()
    torch.relu(x)
    torch.relu(x)
    with torch.no_grad():
        x.mul_(2)
    torch.relu(x)
    x[0].add_(100)
    torch.relu(x)
    dbg.stop()
    dbg.close()
    data = load(rank_dir(tmp_path / "d" / "step0"))["data"]
    inputs = [data[f"Torch.relu.{i}.forward"]["input_args"][0] for i in range(4)]
    assert inputs[0] == inputs[1]
    assert inputs[2]["Max"] == 2 * inputs[0]["Max"]
    assert inputs[3]["Max"] == x.max().item() and inputs[3]["Max"] > inputs[2]["Max"] + 99
    assert data["Tensor.mul_.0.forward"]["output"][0]["Max"] == inputs[2]["Max"]


def test_views_share_cached_stats_and_see_writes_through_each_other(tmp_path):
    # Dense views of the same memory (a transpose) are summarised once, read in place; strided
    # slices with gaps, lazily negated views and writes through any view are still right.
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    x = torch.rand(512, 256) - 0.25
    dbg.start()
    before = dbg.stats()
    y = torch.relu(x)            # Torch.relu.0: output y
    yt = y.t()                   # Tensor.t.0: input y (cached), output a transposed view
    torch.neg(yt)                # Torch.neg.0: input the view (cached)
    with torch.no_grad():
        yt.mul_(3)               # Tensor.mul_.0: writes y through the view
    torch.neg(y)                 # Torch.neg.1: must see the write
    torch.neg(y[:, ::2])         # Torch.neg.2: a slice with gaps
    torch.neg(torch._neg_view(y))  # Torch.neg.3 input: -y without a copy
    after = dbg.stats()
    dbg.stop()
    dbg.close()
    assert after["stats_cached"] - before["stats_cached"] >= 2
    data = load(rank_dir(tmp_path / "d" / "step0"))["data"]

    def leaf(name, side="input_args"):
        return data[name][side][0]

    def same_values(a, ref):
        r = ref.double()
        assert a["Max"] == r.max().item() and a["Min"] == r.min().item()
        assert a["Mean"] == pytest.approx(r.mean().item(), rel=1e-12, abs=1e-15)
        assert a["Norm"] == pytest.approx(r.norm().item(), rel=1e-12)

    y0 = torch.relu(x)
    same_values(leaf("Torch.relu.0.forward", "output"), y0)
    same_values(leaf("Tensor.t.0.forward", "output"), y0)
    same_values(leaf("Torch.neg.0.forward"), y0)
    same_values(leaf("Torch.neg.1.forward"), 3 * y0)
    same_values(leaf("Torch.neg.2.forward"), (3 * y0)[:, ::2])
    same_values(leaf("Torch.neg.3.forward"), -3 * y0)
    assert leaf("Torch.neg.3.forward")["shape"] == [512, 256]


def test_thread_count_noise_is_not_a_divergence(tmp_path, cli):
    # Same model, seed and data; only torch's thread count differs, which reorders the
    # reductions inside the matmuls. The dumps differ in low bits; compare must name nothing.
    roots = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        try:
            torch.manual_seed(0)
            layer = torch.nn.TransformerEncoderLayer(128, 4, 512, batch_first=True, dropout=0.0)
            x = torch.randn(8, 64, 128)
            opt = torch.optim.SGD(layer.parameters(), lr=0.1)
            dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / f"t{threads}", level="mix")
            dbg.start(layer)
            layer(x).pow(2).mean().backward()
            opt.step()
            dbg.stop()
            dbg.close()
            roots.append(tmp_path / f"t{threads}")
        finally:
            torch.set_num_threads(1)
    a, b = (load(rank_dir(r / "step0"))["data"] for r in roots)
    assert a.keys() == b.keys()
    assert a != b, "thread count changed no bit: the test would not exercise the noise rule"
    cli("compare", "-t", roots[1], "-g", roots[0], "-o", tmp_path / "cmp")
    (pair,) = json.loads((tmp_path / "cmp" / "summary.json").read_text())["pairs"]
    assert pair["error"] == 0 and pair["first_divergence"] is None, pair["first_divergence"]


def test_four_rank_gloo_run_writes_four_rank_dirs_with_collectives(tmp_path):
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = ROOT / "tests" / "python" / "dist_capture_script.py"
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "d"), str(port)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    for step in (0, 1):
        ranks = sorted(d.name for d in (tmp_path / "d" / f"step{step}").iterdir())
        assert ranks == ["rank0", "rank1", "rank2", "rank3"]
    d0 = load(tmp_path / "d" / "step0" / "rank0")["data"]
    d1 = load(tmp_path / "d" / "step0" / "rank1")["data"]
    ar = d0["Distributed.all_reduce.0.forward"]
    assert ar["input_args"][0]["shape"] == [8, 8]
    # In place: the output is the argument after the reduction, equal on every rank.
    assert ar["output"][0] == d1["Distributed.all_reduce.0.forward"]["output"][0]
    assert ar["input_args"][0] != d1["Distributed.all_reduce.0.forward"]["input_args"][0]
    bc = d0["Distributed.broadcast.0.forward"]["input_kwargs"]["group"]
    assert bc["type"] == "torch.ProcessGroup" and bc["group_ranks"] == [0, 2]
    assert "Distributed.broadcast.0.forward" not in d1
    # Counters restart every step on every rank.
    assert "Distributed.all_reduce.3.forward" in load(tmp_path / "d" / "step1" / "rank3")["data"]


def test_direct_mode_dumps_what_the_standard_mode_dumps(tmp_path, monkeypatch):
    # torch 1.13 fast path (debugger._DirectMode) against torch's own TorchFunctionMode path.
    _, _, fast = run(tmp_path / "fast", "mix")
    monkeypatch.setenv("NUMPROBE_DIRECT_MODE", "0")
    _, _, std = run(tmp_path / "std", "mix")
    a = load(rank_dir(fast / "step0"))["data"]
    b = load(rank_dir(std / "step0"))["data"]
    assert list(a) == list(b) and a == b
    # Nothing of numprobe is left installed in torch after close().
    if hasattr(torch.overrides, "_TorchFunctionStackMode"):  # torch 1.13: the direct path ran
        assert not torch._C._is_torch_function_mode_enabled()
        assert torch.overrides._TorchFunctionStackMode.__module__ == "torch.overrides"
        assert "grad" not in vars(torch.Tensor)  # the property shortcuts are gone too
    else:  # torch 2.x: one C++ mode stack, no direct path
        assert torch._C._len_torch_function_stack() == 0


class SpyMode(torch.overrides.TorchFunctionMode):
    """A user's TorchFunctionMode: notes the name of every call it sees in `seen`."""

    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_user_torch_function_mode_keeps_working(tmp_path):
    seen = []
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    with SpyMode(seen):
        dbg.start()  # another mode is active: numprobe stacks its own above it
        torch.nn.functional.relu(torch.ones(2))
        dbg.stop()
        torch.exp(torch.ones(2))
    dbg.close()
    assert "exp" in seen
    assert "Functional.relu.0.forward" in load(rank_dir(tmp_path / "d" / "step0"))["data"]


def test_structure_task_has_names_and_shapes_but_no_values(tmp_path):
    _, _, root = run(tmp_path, "mix", task="structure")
    d = load(rank_dir(root / "step0"))
    leaf = d["data"]["Functional.linear.0.forward"]["output"][0]
    assert leaf["shape"] == [2, 16, 96] and leaf["Max"] is None and leaf["Norm"] is None
    assert load(rank_dir(root / "step0"), "construct.json")


def test_seed_all_reproduces_and_removes_dropout():
    numprobe.seed_all(7, mode=True, rm_dropout=True)
    a = torch.randn(3)
    x = torch.ones(1000)
    assert torch.equal(torch.nn.functional.dropout(x, 0.5, training=True), x)
    numprobe.seed_all(7)
    assert torch.equal(torch.randn(3), a)
    torch.use_deterministic_algorithms(False)


def test_killed_capture_leaves_a_recoverable_journal(tmp_path, cli):
    import subprocess
    code = f"""
import os, sys, torch
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
torch.set_num_threads(1)
d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'd')!r}, level='L1')
d.start()
x = torch.ones(4)
for i in range(300):
    x = torch.nn.functional.relu(x + 1)
d._engine.flush()
os._exit(3)   # dies mid-step: no stop(), no atexit
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 3, p.stderr
    rank = rank_dir(tmp_path / "d" / "step0")
    assert (rank / "dump.journal").exists() and not (rank / "dump.json").exists()
    cli("recover", tmp_path / "d")
    data = load(rank)["data"]
    # 300 x (Tensor.__add__, Functional.relu): every entry reached the journal (torch.ones is not in
    # msprobe's API set).
    assert "Functional.relu.299.forward" in data and "Tensor.__add__.299.forward" in data
    assert len(data) == 600


class _GeluWrongGrad(torch.autograd.Function):
    """gelu whose backward is 5 % too large: a backward-only fault."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch._C._nn.gelu(x)  # not F.gelu: the test replaces that

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.ops.aten.gelu_backward(g, x) * 1.05


def test_compare_names_a_backward_only_fault(tmp_path, cli):
    import torch.nn.functional as F
    _, _, good = run(tmp_path / "a", "mix")
    orig = F.gelu
    F.gelu = lambda x, approximate="none": _GeluWrongGrad.apply(x)
    try:
        _, _, bad = run(tmp_path / "b", "mix",
                        setup=lambda d: d.register_custom_api(F, "gelu", "Functional"))
    finally:
        F.gelu = orig
    cli("compare", "-t", bad, "-g", good, "-o", tmp_path / "cmp")
    (pair,) = json.loads((tmp_path / "cmp" / "summary.json").read_text())["pairs"]
    fd = pair["first_divergence"]
    # Forward agrees everywhere; the last gelu's backward (the first to run) is the origin. Its
    # custom backward's `* 1.05` is recorded where it runs (as msprobe records it): an op only the
    # target has, which makes the wrong gradient, named first; then the gelu backward entry.
    suspects = [(s["entry"], s["reason"]) for s in pair["suspects"]]
    assert (fd["entry"], fd["reason"]) in (("Functional.gelu.1.backward", "outputs_diverge"),
                                           ("Tensor.__mul__.0.forward", "structure_differs")), fd
    assert ("Functional.gelu.1.backward", "outputs_diverge") in suspects[:2], suspects


def test_compare_says_when_inputs_changed_where_nothing_was_captured(tmp_path, cli):
    # Batches made before capture starts; the target run got another batch.
    _, _, good = run(tmp_path / "a", "L1", batch=lambda i, b=cm.gpt_batch(seed=0): b)
    _, _, bad = run(tmp_path / "b", "L1", batch=lambda i, b=cm.gpt_batch(seed=100): b)
    cli("compare", "-t", bad, "-g", good, "-o", tmp_path / "cmp")
    (pair,) = json.loads((tmp_path / "cmp" / "summary.json").read_text())["pairs"]
    fd = pair["first_divergence"]
    assert fd["reason"] == "inputs_already_differ"
    assert fd["entry"] == "Functional.embedding.0.forward", fd


def test_deferred_device_statistics_equal_the_host_kernel(tmp_path):
    # CUDA tensors' statistics are enqueued on the device and read on the writer thread (small
    # tensors copied and summarised by the host kernel, large ones reduced by ATen ops).
    # NUMPROBE_DEFER_CPU_STATS=1 sends CPU tensors down that path, so it is checked here too.
    script = tmp_path / "s.py"
    script.write_text(f"""
import sys, torch
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
g = torch.Generator().manual_seed(3)
big = torch.randn(300, 400, generator=g)
big[0, :5] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])
small = torch.randn(40, 30, generator=g)
small[1, 1] = float("nan")
tensors = [big, big.t(), small, small.to(torch.bfloat16), small.half(), big.double(),
           (big * 10).to(torch.int32), big > 0, torch.full((70000,), float("nan")), small[:, ::2]]
d = numprobe.PrecisionDebugger(dump_path=sys.argv[1], level="L1")
d.start()
for t in tensors:
    torch.neg(t) if t.dtype != torch.bool else torch.logical_not(t)
d.stop()
d.close()
""")
    for mode, env in (("host", {}), ("deferred", {"NUMPROBE_DEFER_CPU_STATS": "1"})):
        subprocess.run([sys.executable, str(script), str(tmp_path / mode)], check=True,
                       env={**os.environ, **env})
    host = load(rank_dir(tmp_path / "host" / "step0"))["data"]
    deferred = load(rank_dir(tmp_path / "deferred" / "step0"))["data"]
    assert list(host) == list(deferred) and len(host) == 10
    for name in host:
        for a, b in zip(iter_leaves(host[name]), iter_leaves(deferred[name])):
            assert a.keys() == b.keys(), name
            for k, v in a.items():
                if k in ("Mean", "Norm") and isinstance(v, float) and not math.isnan(v):
                    assert b[k] == pytest.approx(v, rel=1e-12), (name, k)
                elif isinstance(v, float) and math.isnan(v):
                    assert math.isnan(b[k]), (name, k)
                else:
                    assert b[k] == v, (name, k, a, b)


@pytest.mark.parametrize("shape", [(5, 7), (300, 300)], ids=["small", "large"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_tensors_are_summarised_by_their_magnitudes(tmp_path, dtype, shape):
    # msprobe's statistics of a complex tensor are those of numpy's abs(); Norm too, here.
    g = torch.Generator().manual_seed(5)
    x = torch.randn(shape, dtype=dtype, generator=g)
    d = numprobe.PrecisionDebugger(dump_path=tmp_path, level="L1")
    d.start()
    y = torch.mul(x.conj(), 2)  # a lazily conjugated input: same magnitudes
    d.stop()
    d.close()
    e = load(rank_dir(tmp_path / "step0"))["data"]["Torch.mul.0.forward"]
    for leaf, t in ((e["input_args"][0], x), (e["output"][0], y)):
        assert leaf["dtype"] == str(dtype)
        m = np.abs(t.resolve_conj().numpy()).astype(np.float64)
        assert leaf["Max"] == pytest.approx(m.max(), rel=1e-6)
        assert leaf["Min"] == pytest.approx(m.min(), rel=1e-6)
        assert leaf["Mean"] == pytest.approx(m.mean(), rel=1e-6)
        assert leaf["Norm"] == pytest.approx(np.sqrt((m * m).sum()), rel=1e-6)
        assert leaf.get("nan_count", 0) == 0 and leaf.get("zero_count", 0) == 0


ASYNC_SCRIPT = """
import json, sys, torch
sys.path.insert(0, {python!r})
import numprobe
root, device, async_dump = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
cfg = {{"task": "tensor", "dump_path": root, "level": "L1", "async_dump": async_dump}}
open(root + ".json", "w").write(json.dumps(cfg))
g = torch.Generator().manual_seed(11)
x = torch.randn(300, 400, generator=g).to(device)
d = numprobe.PrecisionDebugger(config_path=root + ".json")
d.start()
y = torch.neg(x)
x.add_(1)  # after the call: the dump keeps x as neg saw it
z = torch.mul(y.t(), 2)
y.mul_(3)
torch.abs(torch._neg_view(z))  # a lazily negated input: saved negated

d.stop()
d.close()
"""


def run_async_dump_script(tmp_path, device, env=None):
    """Dumps of the same ops with async_dump off and on; returns {name: array} for each."""
    script = tmp_path / "async.py"
    script.write_text(ASYNC_SCRIPT.format(python=str(PYDIR)))
    out = {}
    for flag in ("0", "1"):
        root = tmp_path / f"async{flag}"
        subprocess.run([sys.executable, str(script), str(root), device, flag], check=True,
                       env={**os.environ, **(env or {})})
        data = rank_dir(root / "step0") / "dump_tensor_data"
        out[flag] = {p.name: np.load(p) for p in sorted(data.glob("*.npy"))}
        assert statistics_match_saved_tensors(rank_dir(root / "step0"), rel=1e-9,
                                              abs_mean=1e-12) == 12
    return out


def test_async_dump_saves_the_same_tensors(tmp_path):
    # On CUDA async_dump enqueues the device -> host copy and the writer waits for it;
    # NUMPROBE_DEFER_CPU_STATS=1 sends CPU tensors down that path so it is checked here too.
    out = run_async_dump_script(tmp_path, "cpu", {"NUMPROBE_DEFER_CPU_STATS": "1"})
    assert list(out["0"]) == list(out["1"]) and len(out["0"]) == 12
    for name, a in out["0"].items():
        assert np.array_equal(a, out["1"][name]), name


def test_user_mode_entered_during_capture_sees_calls_first(tmp_path):
    # Regression: on torch 1.13 the direct mode answered every call itself, so a mode the user
    # entered after start() saw nothing (neither APIs nor property reads).
    seen = []
    lin = torch.nn.Linear(2, 2)
    lin(torch.ones(1, 2)).sum().backward()
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    x = torch.ones(3)
    dbg.start()
    torch.sigmoid(x)
    with SpyMode(seen):
        torch.relu(x)
        grad = lin.weight.grad
    torch.exp(x)
    dbg.stop()
    dbg.close()
    assert seen == ["relu", "__get__"] and grad is not None
    assert list(load(rank_dir(tmp_path / "d" / "step0"))["data"]) == [
        "Torch.sigmoid.0.forward", "Torch.relu.0.forward", "Torch.exp.0.forward"]


def test_tensor_properties_read_and_write_the_same_during_capture(tmp_path):
    # Property reads skip torch's mode dispatch while numprobe's mode is the only one
    # (python/src/direct_mode.h), on torch 1.13 and 2.x; reads, writes, deletes and subclasses
    # behave as without it.
    seen = []

    class Sub(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    lin = torch.nn.Linear(2, 2)
    lin(torch.ones(1, 2)).sum().backward()
    grad = lin.weight.grad
    sub = torch.ones(2).as_subclass(Sub)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    dbg.start()
    shortcut = os.environ.get("NUMPROBE_PROPERTY_SHORTCUT", "1") != "0"
    if shortcut:
        assert type(vars(torch.Tensor)["grad"]).__name__ == "PropertyShortcut"
        with pytest.raises(TypeError):
            type(vars(torch.Tensor)["grad"])()  # only numprobe makes them
        # Regression: the shortcut stopped after the first API that torch dispatches from Python
        # (Tensor.backward), which replaces the C++ mode object.
        lin(torch.ones(1, 2)).sum().backward()
        before = numprobe._C.property_shortcut_reads()
        _ = lin.weight.grad
        assert numprobe._C.property_shortcut_reads() == before + 1
    assert lin.weight.grad is grad and lin.bias.grad_fn is None and lin.weight.is_leaf
    assert lin.weight.shape == (2, 2) and lin.weight.dtype == torch.float32
    base = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
    assert torch.Tensor.grad is base.grad  # class access: torch's descriptor
    lin.weight.grad = None
    assert lin.weight.grad is None
    lin.weight.grad = grad
    del lin.bias.grad
    assert lin.bias.grad is None and lin.weight.grad is grad
    with pytest.raises(RuntimeError):
        lin.weight.grad = torch.ones(3)  # torch's own setter checks still run
    _ = sub.is_leaf  # a subclass's __torch_function__ still sees its own property reads
    torch.exp(grad)  # the mode is back after the reads: still dumped
    dbg.stop()
    dbg.close()
    assert "__get__" in seen
    assert "grad" not in vars(torch.Tensor)
    assert "Torch.exp.0.forward" in load(rank_dir(tmp_path / "d" / "step0"))["data"]


def test_user_mode_on_another_thread_during_capture(tmp_path):
    # The direct mode stands in for torch's stack dispatch in every thread: a mode entered on a
    # thread that does not capture sees its calls and property reads, and nothing is dumped.
    import threading
    seen = []
    lin = torch.nn.Linear(2, 2)
    lin(torch.ones(1, 2)).sum().backward()

    ones = torch.ones(2)

    def work():
        with SpyMode(seen):
            torch.relu(ones)
            _ = lin.weight.grad

    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    dbg.start()
    t = threading.Thread(target=work)
    t.start()
    t.join()
    torch.exp(ones)
    dbg.stop()
    dbg.close()
    assert seen == ["relu", "__get__"]
    assert list(load(rank_dir(tmp_path / "d" / "step0"))["data"]) == ["Torch.exp.0.forward"]


def test_stop_inside_a_user_mode_entered_after_start(tmp_path):
    # stop() and step() inside a mode entered after start() leave that mode active and the next
    # step captured (stop() used to pop the user's mode instead of numprobe's).
    seen = []
    x = torch.ones(2)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level="L1")
    dbg.start()
    with SpyMode(seen):
        torch.relu(x)
        dbg.stop()
        dbg.step()
        torch.tanh(x)  # between steps: the user's mode only
        dbg.start()  # above the user's mode now: modes are left in the order entered
        torch.sigmoid(x)
        dbg.stop()
    torch.exp(x)
    dbg.close()
    assert seen == ["relu", "tanh", "sigmoid"]
    assert torch._C._len_torch_function_stack() == 0
    assert list(load(rank_dir(tmp_path / "d" / "step0"))["data"]) == ["Torch.relu.0.forward"]
    assert list(load(rank_dir(tmp_path / "d" / "step1"))["data"]) == ["Torch.sigmoid.0.forward"]


class _ViewAsNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)).view_as(x)  # the model's own view_as: recorded


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_module_hook_machinery_is_not_recorded(tmp_path, level):
    """torch 2.x's module backward hooks (registered by numprobe at mix and L0) wrap each module's
    inputs and outputs in an autograd Function whose outputs autograd turns into views: a
    Tensor.view_as per tensor, seen by the mode from torch/utils/hooks.py. They are not the model's
    computation and msprobe records none: only the model's own view_as is dumped."""
    model = _ViewAsNet()
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / "d", level=level)
    dbg.start(model)
    model(torch.randn(2, 4, requires_grad=True)).sum().backward()
    dbg.stop()
    dbg.step()
    dbg.close()
    data = load(rank_dir(tmp_path / "d" / "step0"))["data"]
    view_as = [n for n in data if n.startswith("Tensor.view_as.")]
    if level == "mix":
        assert view_as == ["Tensor.view_as.0.forward", "Tensor.view_as.0.backward"], view_as
    else:
        assert view_as == [], view_as
