"""task "grad_probe" and `numprobe grad-compare` end to end (issue 35): the files msprobe's
grad_probe writes (grad_summary_{step}.csv, rank{r}/step{s}/{param}.npy), their values checked
against torch, training bitwise unchanged, two runs compared (identical runs agree; a data or
learning-rate change is named at its step), bad input; and, where msprobe's own grad_probe code can
be loaded, msprobe's GradComparator reading numprobe's files and numprobe reading msprobe's."""
import csv
import importlib.util
import json
import math
import os
import pathlib
import sys
import types
import zlib

import numpy as np
import pytest
import torch

from conftest import PYDIR, live

sys.path.insert(0, str(PYDIR))
import numprobe  # noqa: E402

STEPS = 5


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.act = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def batch(step, data_change_at=None):
    g = torch.Generator().manual_seed(100 + step + (1000 if data_change_at is not None and step >= data_change_at else 0))
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


def train(dump=None, level="L1", steps=STEPS, lr_change_at=None, data_change_at=None, extra=None,
          grads=None, before_monitor=None):
    """Trains Net with SGD; with `dump`, under PrecisionDebugger(task=grad_probe). Returns the losses
    and the final parameters; `grads` (a list) receives each step's gradients as the optimizer sees
    them."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    dbg = None
    if before_monitor is not None:
        before_monitor(model)
    if dump is not None:
        cfg = {"task": "grad_probe", "dump_path": str(dump), "grad_probe": {"grad_level": level}}
        cfg["grad_probe"].update(extra or {})
        path = pathlib.Path(str(dump) + ".json")
        path.write_text(json.dumps(cfg))
        dbg = numprobe.PrecisionDebugger(str(path))
        dbg.monitor(model)
    losses = []
    for s in range(steps):
        if lr_change_at is not None and s == lr_change_at:
            for group in opt.param_groups:
                group["lr"] = 3.0
        x, y = batch(s, data_change_at)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if grads is not None:
            grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
        opt.step()
        losses.append(loss.detach().clone())
    if dbg is not None:
        dbg.close()
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}


def read_summary(path):
    raw = pathlib.Path(path).read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), f"{path}: no UTF-8 BOM (msprobe writes utf-8-sig)"
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b""), f"{path}: lines not CRLF"
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def py(v):
    return str(float(v))


@pytest.mark.parametrize("level", ["L0", "L1", "L2"])
def test_files_are_written_as_msprobe_writes_them(tmp_path, level):
    grads = []
    bounds = [-0.01, 0, 0.01]
    train(tmp_path / "run", level, grads=grads, extra={"bounds": bounds})
    rank = tmp_path / "run" / "rank0"
    names = [n for n, _ in Net().named_parameters()]
    assert sorted(p.name for p in rank.iterdir()) == sorted(
        [f"grad_summary_{s}.csv" for s in range(STEPS)] +
        ([f"step{s}" for s in range(STEPS)] if level != "L0" else []))
    for s in range(STEPS):
        rows = read_summary(rank / f"grad_summary_{s}.csv")
        head = ["param_name"] + (["MD5"] if level == "L0" else []) + (
            ["(-inf, -0.01]", "(-0.01, 0]", "(0, 0.01]", "(0.01, inf)", "=0"] if level == "L2" else []
        ) + ["max", "min", "norm", "shape"]
        assert rows[0] == head
        assert [r[0] for r in rows[1:]] == names
        for r in rows[1:]:
            g = grads[s][r[0]]
            cell = dict(zip(head, r))
            assert cell["max"] == py(torch.max(g).float()) and cell["min"] == py(torch.min(g).float())
            assert math.isclose(float(cell["norm"]), float(torch.norm(g).float()), rel_tol=1e-6)
            assert cell["shape"] == str(list(g.shape))
            if level == "L0":
                assert cell["MD5"] == f"{zlib.crc32(g.float().numpy().tobytes()):08x}"
            if level == "L2":
                idx = torch.bucketize(g, torch.Tensor(bounds))
                want = [(idx == i).sum().item() / g.numel() for i in range(len(bounds) + 1)]
                want.append((g == 0).sum().item() / g.numel())
                assert r[1:6] == [str(v) for v in want]
            if level != "L0":
                d = np.load(rank / f"step{s}" / f"{r[0]}.npy", allow_pickle=False)
                assert d.dtype == np.bool_ and d.shape == tuple(g.shape)
                assert np.array_equal(d, (g > 0).numpy())


def test_training_is_bitwise_unchanged(tmp_path):
    base_losses, base_params = train()
    losses, params = train(tmp_path / "run", "L2")
    assert all(torch.equal(a, b) for a, b in zip(base_losses, losses))
    for n in base_params:
        assert torch.equal(base_params[n], params[n]), n


def test_param_list_and_step_select(tmp_path):
    torch.manual_seed(0)
    cfg = {"task": "grad_probe", "dump_path": str(tmp_path / "run"), "step": [1, 3],
           "grad_probe": {"grad_level": "L1", "param_list": ["fc2.weight"]}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(str(tmp_path / "c.json"))
    dbg.monitor(model)
    for s in range(4):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    dbg.close()
    rank = tmp_path / "run" / "rank0"
    assert sorted(p.name for p in rank.iterdir()) == [
        "grad_summary_1.csv", "grad_summary_3.csv", "step1", "step3"]
    assert [r[0] for r in read_summary(rank / "grad_summary_3.csv")[1:]] == ["fc2.weight"]
    assert [p.name for p in (rank / "step1").iterdir()] == ["fc2.weight.npy"]


def test_bad_config_names_the_field(tmp_path):
    for section, words in [({"grad_level": "L3"}, ["grad_probe.grad_level", "L3"]),
                           ({"bounds": [1, 0]}, ["grad_probe.bounds", "ascending"]),
                           ({"bound": [1]}, ["grad_probe.bound", "unknown field"])]:
        p = tmp_path / "bad.json"
        p.write_text(json.dumps({"task": "grad_probe", "grad_probe": section}))
        with pytest.raises(ValueError) as e:
            numprobe.PrecisionDebugger(str(p))
        for w in words:
            assert w in str(e.value), (section, str(e.value))


def compare(cli, a, b, out, check=True):
    p = cli("grad-compare", a, b, "-o", out, check=check)
    result = json.loads((pathlib.Path(out) / "grad_compare.json").read_text()) if p.returncode == 0 else None
    return p, result


def test_identical_runs_agree(tmp_path, cli):
    train(tmp_path / "a", "L1")
    train(tmp_path / "b", "L1")
    p, r = compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "out")
    assert r["first_disagreement"] is None and r["gaps"] == []
    assert "agree" in p.stdout
    rows = read_summary(tmp_path / "out" / "rank0" / "similarities.csv")
    assert rows[0] == ["step"] + [str(s) for s in range(STEPS)]
    assert rows[-1][0] == "summary" and all(v == "1.0" for row in rows[1:] for v in row[1:])
    html = (tmp_path / "out" / "grad_compare.html").read_text()
    assert "<svg" in html and "<script" not in html and "http" not in html.split("</head>")[0]


@pytest.mark.parametrize("change", ["data", "lr"])
def test_a_change_at_step_k_is_named_there(tmp_path, cli, change):
    k = 2
    train(tmp_path / "a", "L2")
    kw = {"data_change_at": k} if change == "data" else {"lr_change_at": k}
    train(tmp_path / "b", "L2", **kw)
    p, r = compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "out")
    first = r["first_disagreement"]
    # The gradient recorded before optimizer step k was computed from the weights of step k-1: a new
    # learning rate at step k first shows in step k+1's gradients, new data in step k's.
    want = k if change == "data" else k + 1
    assert first is not None, p.stdout
    assert first["step"] == want, first
    assert first["parameter"] in dict(Net().named_parameters())
    sims = {q["name"]: q["similarity"] for q in r["ranks"][0]["parameters"]}
    assert all(v == 1.0 for q in sims.values() for v in q[:want])
    assert f"first disagreement: step {want}" in p.stdout


def test_missing_steps_are_named_and_bad_csv_is_an_error(tmp_path, cli):
    train(tmp_path / "a", "L1")
    train(tmp_path / "b", "L1")
    for f in (tmp_path / "b" / "rank0" / "step3").iterdir():
        f.unlink()
    (tmp_path / "b" / "rank0" / "step3").rmdir()
    (tmp_path / "b" / "rank0" / "grad_summary_3.csv").unlink()
    p, r = compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "out")
    assert [(g["step"], g["what"]) for g in r["gaps"]] == [(3, "run2 has no step 3")]
    assert "gap: rank 0 step 3: run2 has no step 3" in p.stdout
    assert r["ranks"][0]["steps"] == [0, 1, 2, 4]
    bad = tmp_path / "b" / "rank0" / "grad_summary_1.csv"
    bad.write_text("param_name,max,min,norm,shape\nfc1.weight,0.5\n")
    p = cli("grad-compare", tmp_path / "b", tmp_path / "a", "-o", tmp_path / "out2", check=False)
    assert p.returncode != 0
    assert str(bad) in p.stderr and "line 2" in p.stderr
    p = cli("grad-compare", tmp_path / "a", tmp_path / "nowhere", "-o", tmp_path / "o3", check=False)
    assert p.returncode != 0 and "nowhere" in p.stderr
    train(tmp_path / "l0a", "L0")
    train(tmp_path / "l0b", "L0")
    p = cli("grad-compare", tmp_path / "l0a", tmp_path / "l0b", "-o", tmp_path / "o4", check=False)
    assert p.returncode != 0 and "L0" in p.stderr


# ---- msprobe's own grad_probe ----------------------------------------------------------------------
def msprobe_grad_probe():
    """msprobe's grad_probe modules (GradComparator, GradientMonitor). msprobe 26.2 ships none (the
    release dropped grad_probe; its last source is mstt's debug/accuracy_tools/msprobe): they are
    loaded from NUMPROBE_MSTT_SRC (that folder) on top of the installed msprobe 26.2."""
    live("msprobe")
    try:
        from msprobe.core.grad_probe.grad_compare import GradComparator  # noqa: F401
        from msprobe.pytorch.grad_probe.grad_monitor import GradientMonitor  # noqa: F401
        return GradComparator, GradientMonitor
    except ImportError:
        pass
    src = os.environ.get("NUMPROBE_MSTT_SRC")
    if not src:
        pytest.skip("msprobe 26.2 has no grad_probe (removed from the release); set NUMPROBE_MSTT_SRC "
                    "to mstt's debug/accuracy_tools/msprobe to run msprobe's grad_probe against numprobe")
    import msprobe.core
    import msprobe.core.common.file_utils as file_utils
    import msprobe.pytorch
    if not hasattr(file_utils, "change_mode"):  # 26.2 dropped it; grad_probe's utils imports it
        file_utils.change_mode = lambda path, mode: os.chmod(path, mode)
    from msprobe.core.common.const import FileCheckConst
    if not hasattr(FileCheckConst, "DATA_FILE_AUTHORITY"):  # the plots' file mode, also dropped
        FileCheckConst.DATA_FILE_AUTHORITY = 0o640
    for pkg, parent in (("msprobe.core.grad_probe", msprobe.core),
                        ("msprobe.pytorch.grad_probe", msprobe.pytorch)):
        mod = types.ModuleType(pkg)
        mod.__path__ = [os.path.join(src, *pkg.split(".")[1:])]
        sys.modules[pkg] = mod
        setattr(parent, pkg.rsplit(".", 1)[1], mod)
    out = []
    for name in ("msprobe.core.grad_probe.constant", "msprobe.core.grad_probe.utils",
                 "msprobe.core.grad_probe.grad_compare", "msprobe.pytorch.grad_probe.grad_stat_csv",
                 "msprobe.pytorch.grad_probe.grad_monitor"):
        path = os.path.join(src, *name.split(".")[1:]) + ".py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        out.append(mod)
    return out[2].GradComparator, out[4].GradientMonitor


def similarities(path):
    rows = read_summary(path)
    return {r[0]: [float(v) for v in r[1:]] for r in rows[1:]}, rows[0]


def test_msprobe_grad_compare_reads_numprobe_files(tmp_path, cli):
    GradComparator, _ = msprobe_grad_probe()
    train(tmp_path / "a", "L2")
    train(tmp_path / "b", "L2", data_change_at=2)
    GradComparator.compare_distributed(str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "ms"))
    compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "np")
    ms, ms_head = similarities(tmp_path / "ms" / "rank0" / "similarities.csv")
    ours, our_head = similarities(tmp_path / "np" / "rank0" / "similarities.csv")
    assert ms_head == our_head and ms == ours


def test_numprobe_reads_msprobe_grad_probe_run(tmp_path, cli):
    """msprobe's GradientMonitor and numprobe's grad_probe record the same training (both hooks are
    optimizer pre-step hooks): the files agree (norm to float32 rounding), and grad-compare reads
    msprobe's run against numprobe's as identical."""
    _, GradientMonitor = msprobe_grad_probe()
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip("msprobe's GradientMonitor hooks optimizers only on torch >= 2")
    monitors = []

    def msprobe_monitor(model):
        common = types.SimpleNamespace(rank=[], step=[], dump_path=str(tmp_path / "ms"))
        task = types.SimpleNamespace(grad_level="L2", param_list=[], bounds=[-1, 0, 1])
        gm = GradientMonitor(common, task)
        gm.monitor(model)
        monitors.append(gm)

    try:
        train(tmp_path / "np", "L2", before_monitor=msprobe_monitor)
    finally:
        for gm in monitors:  # its global hook cannot be removed: select no later step
            gm._target_step = [-1]
    for s in range(STEPS):
        ms = read_summary(tmp_path / "ms" / "rank0" / f"grad_summary_{s}.csv")
        ours = read_summary(tmp_path / "np" / "rank0" / f"grad_summary_{s}.csv")
        assert ms[0] == ours[0]
        norm = ms[0].index("norm")
        for a, b in zip(ms[1:], ours[1:]):
            assert a[:norm] + a[norm + 1:] == b[:norm] + b[norm + 1:]
            assert math.isclose(float(a[norm]), float(b[norm]), rel_tol=1e-6)
        for f in (tmp_path / "ms" / "rank0" / f"step{s}").iterdir():
            assert np.array_equal(np.load(f), np.load(tmp_path / "np" / "rank0" / f"step{s}" / f.name))
    _, r = compare(cli, tmp_path / "ms", tmp_path / "np", tmp_path / "out")
    assert r["first_disagreement"] is None and r["gaps"] == []
    assert r["ranks"][0]["steps"] == list(range(STEPS))
