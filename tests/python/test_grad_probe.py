"""task "grad_probe" and `numprobe grad-compare` end to end (issue 35): the files msprobe's
grad_probe writes (grad_summary_{step}.csv, rank{r}/step{s}/{param}.npy), their values checked
against torch, training bitwise unchanged, two runs compared (identical runs agree; a data or
learning-rate change is named at its step), bad input; and, live, msprobe 8.3.3's own grad_probe
(its venv, msprobe_legacy.py): its GradientMonitor writes the same files from the same gradients,
its GradComparator and numprobe's grad-compare read both tools' runs and agree."""
import csv
import json
import math
import pathlib
import sys
import zlib

import numpy as np
import pytest
import torch

import msprobe_legacy  # noqa: E402
from conftest import PYDIR

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


# ---- msprobe's own grad_probe, live --------------------------------------------------------------
# msprobe 8.3.3 (the newest release with grad_probe; 26.x dropped it) runs in its own venv, on its
# own torch, in a subprocess (msprobe_legacy.py). It records the same training by seeing the same
# gradients: the ones numprobe's run recorded, handed over per step (.npz) and set as each
# parameter's .grad before an optimizer step, where msprobe's GradientMonitor hooks in. No
# release has an `msprobe grad_probe` command: its compare is GradComparator.compare_distributed.
def similarities(path):
    rows = read_summary(path)
    return {r[0]: [float(v) for v in r[1:]] for r in rows[1:]}, rows[0]


def msprobe_first(sims, threshold=0.97, drop=0.03):
    """The first step msprobe's documented rule flags (17.grad_probe.md: a parameter's similarity
    below 0.97 at the first step, or down by more than 0.03 from the step before) and the
    parameters it flags there; None where it flags none."""
    steps = len(next(iter(sims.values())))
    for c in range(steps):
        flagged = {n for n, v in sims.items() if n != "summary" and
                   ((c == 0 and v[c] < threshold) or (c > 0 and v[c - 1] - v[c] > drop))}
        if flagged:
            return c, flagged
    return None


def record_both(tmp_path, name, level="L2", bounds=(-1, 0, 1), **kw):
    """One training recorded by numprobe (tmp_path/np_{name}) and by msprobe 8.3.3
    (tmp_path/ms_{name}), from the same gradients."""
    grads = []
    train(tmp_path / f"np_{name}", level, grads=grads, extra={"bounds": list(bounds)}, **kw)
    npz = tmp_path / f"grads_{name}.npz"
    np.savez(npz, **{f"{s}/{n}": g.numpy() for s, step in enumerate(grads) for n, g in step.items()})
    msprobe_legacy.run("grad-monitor", tmp_path / f"ms_{name}", npz, level, json.dumps(list(bounds)))
    return tmp_path / f"np_{name}", tmp_path / f"ms_{name}"


def assert_same_files(ms_run, np_run, steps):
    """msprobe's and numprobe's files of one training: the same summaries (max, min and norm to
    float32 rounding: each side prints its own float32 reduction) and identical direction files."""
    for s in range(steps):
        ms = read_summary(ms_run / "rank0" / f"grad_summary_{s}.csv")
        ours = read_summary(np_run / "rank0" / f"grad_summary_{s}.csv")
        assert ms[0] == ours[0], (s, ms[0], ours[0])
        assert [r[0] for r in ms[1:]] == [r[0] for r in ours[1:]], s
        for a, b in zip(ms[1:], ours[1:]):
            for col, x, y in zip(ms[0], a, b):
                if col in ("max", "min", "norm"):
                    assert math.isclose(float(x), float(y), rel_tol=1e-6), (s, a[0], col, x, y)
                else:
                    assert x == y, (s, a[0], col, x, y)
        ms_dir, np_dir = ms_run / "rank0" / f"step{s}", np_run / "rank0" / f"step{s}"
        if ms_dir.exists() or np_dir.exists():
            assert sorted(p.name for p in ms_dir.iterdir()) == sorted(p.name for p in np_dir.iterdir())
            for f in ms_dir.iterdir():
                a, b = np.load(f), np.load(np_dir / f.name)
                assert a.dtype == b.dtype and np.array_equal(a, b), (s, f.name)


@pytest.mark.parametrize("level", ["L0", "L1", "L2"])
def test_msprobe_and_numprobe_write_the_same_files(tmp_path, level):
    np_run, ms_run = record_both(tmp_path, "a", level, bounds=(-0.01, 0, 0.01))
    assert_same_files(ms_run, np_run, STEPS)


def test_both_compares_read_both_writers_and_agree(tmp_path, cli):
    """Two trainings that part at step 2 (new data), each recorded by both tools; msprobe's compare
    and numprobe's grad-compare read numprobe's runs, msprobe's runs, and one of each: the same
    similarities, and numprobe's first disagreement is where msprobe's rule puts it."""
    k = 2
    np_a, ms_a = record_both(tmp_path, "a")
    np_b, ms_b = record_both(tmp_path, "b", data_change_at=k)
    results = {}
    for pair, (a, b) in {"np": (np_a, np_b), "ms": (ms_a, ms_b), "mixed": (ms_a, np_b)}.items():
        msprobe_legacy.run("grad-compare", a, b, tmp_path / f"msprobe_{pair}")
        _, r = compare(cli, a, b, tmp_path / f"numprobe_{pair}")
        ms, ms_head = similarities(tmp_path / f"msprobe_{pair}" / "rank0" / "similarities.csv")
        ours, our_head = similarities(tmp_path / f"numprobe_{pair}" / "rank0" / "similarities.csv")
        assert ms_head == our_head, pair
        assert ms.keys() == ours.keys(), pair
        for n in ms:
            assert ms[n] == pytest.approx(ours[n], abs=1e-12), (pair, n, ms[n], ours[n])
        first = r["first_disagreement"]
        flagged = msprobe_first(ms)
        assert flagged is not None and first is not None, (pair, ms, first)
        assert first["step"] == flagged[0] == k, (pair, first, flagged)
        assert {first["parameter"], *first["also_at_step"]} == flagged[1], (pair, first, flagged)
        assert first["similarity"] == pytest.approx(ms[first["parameter"]][k], abs=1e-12)
        results[pair] = (ms, first)
    assert results["np"] == results["ms"] == results["mixed"]
    # one training seen by both writers: both compares find it identical
    for a, b, out in [(ms_a, np_a, "same")]:
        msprobe_legacy.run("grad-compare", a, b, tmp_path / f"msprobe_{out}")
        _, r = compare(cli, a, b, tmp_path / f"numprobe_{out}")
        ms, _ = similarities(tmp_path / f"msprobe_{out}" / "rank0" / "similarities.csv")
        assert all(v == 1.0 for vs in ms.values() for v in vs), ms
        assert r["first_disagreement"] is None and r["gaps"] == []
