"""numprobe.TrainerMon on MindSpore Cells (PyNative, value_and_grad steps): msprobe's monitor
config, the CSV/TensorBoard files of the engine's sink (the torch side's layout) with values held
to numpy's, the training left bitwise unchanged, a gradient spike found at its step, and bad
configs named. Runs in the MindSpore lane (no torch)."""
import csv
import json
import math
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

# "mindspore.nn", not "mindspore": in the torch lanes this test folder itself would import as a
# namespace package named mindspore
pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

import ms_models  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
ALL_OPS = ["min", "max", "norm", "mean", "zeros", "nans"]
TORCH2_PYTHON = ROOT / ".venv" / "torch2" / "bin" / "python"


def write_config(path, **fields):
    path.write_text(json.dumps(fields))
    return path


def run_dir(base):
    dirs = [d for d in pathlib.Path(base).iterdir() if d.is_dir() and "-rank" in d.name]
    assert len(dirs) == 1, f"one run directory expected under {base}: {os.listdir(base)}"
    return dirs[0]


def rows_by_name(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    key = (lambda r: (r[1], r[2], r[3])) if header[3] == "micro_step" else (lambda r: (r[1], r[2]))
    return header, {key(r): dict(zip(header, r)) for r in rows[1:]}


def close(a, b, ndigits=6):
    a = float(a)
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= 10 ** -ndigits + 1e-6 * abs(b)


def norm(a):
    return float(np.linalg.norm(np.asarray(a, np.float64).ravel()))


def make_optimizer(kind, params, lr=1e-3):
    if kind == "adam":
        return nn.Adam(params, learning_rate=lr)
    if kind == "adamw":
        return nn.AdamWeightDecay(params, learning_rate=lr, weight_decay=0.01)
    if kind == "momentum":
        return nn.Momentum(params, learning_rate=lr, momentum=0.9)
    return nn.SGD(params, learning_rate=lr)


def train(config=None, base=None, steps=3, opt_kind="adam", spike_at=None, lr=1e-3,
          snapshots=False, monkeypatch=None):
    """Trains ms_models.Net (seed 0 weights) for `steps` value_and_grad steps, monitored when a
    config is given. Returns (monitor, net, optimizer, losses, snaps): snaps[k] holds what the
    monitor should have read at step k (gradients, moments and parameters before the update,
    parameters after it). spike_at: the gradients of head.weight times 1000 at that step."""
    net, x, y = ms_models.make()
    net.set_train()
    params = net.trainable_params()
    opt = make_optimizer(opt_kind, params, lr)
    mon = None
    if config is not None:
        monkeypatch.setenv("MONITOR_OUTPUT_DIR", str(base))
        import numprobe
        mon = numprobe.TrainerMon(str(config))
        mon.set_monitor(net, opt)
    grad_fn = ms.value_and_grad(net, None, opt.parameters)
    head = [i for i, p in enumerate(opt.parameters) if p.name == "head.weight"][0]
    losses, snaps = [], []
    for step in range(steps):
        loss, grads = grad_fn(x, y)
        if spike_at == step:
            grads = tuple(g * 1000.0 if i == head else g for i, g in enumerate(grads))
        snap = {}
        if snapshots:
            snap["grad"] = {p.name: g.asnumpy().copy() for p, g in zip(opt.parameters, grads)}
            snap["param"] = {p.name: p.asnumpy().copy() for p in params}
            for attr in ("moment1", "moments1"):
                if hasattr(opt, attr):
                    snap["m"] = {p.name: m.asnumpy().copy()
                                 for p, m in zip(opt.parameters, getattr(opt, attr))}
        opt(grads)
        if snapshots:
            snap["updated"] = {p.name: p.asnumpy().copy() for p in params}
        snaps.append(snap)
        losses.append(loss.asnumpy())
    return mon, net, opt, losses, snaps


def test_import_and_trainer_mon_without_torch(tmp_path):
    """`import numprobe` and numprobe.TrainerMon pick the MindSpore TrainerMon and load no torch."""
    cfg = write_config(tmp_path / "mon.json", wg_distribution=True, ops=["norm"])
    code = ("import sys, numprobe, mindspore as ms\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "import ms_models\n"
            "from mindspore import nn\n"
            "from numprobe.mindspore.trainer_mon import TrainerMon\n"
            "net, x, y = ms_models.make()\n"
            "opt = nn.Adam(net.trainable_params(), 1e-3)\n"
            "mon = numprobe.TrainerMon(sys.argv[1])\n"
            "assert type(mon) is TrainerMon and isinstance(mon, numprobe.TrainerMon)\n"
            "mon.set_monitor(net, opt)\n"
            "g = ms.value_and_grad(net, None, opt.parameters)\n"
            "opt(g(x, y)[1])\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "print('ok')\n")
    env = dict(os.environ, MONITOR_OUTPUT_DIR=str(tmp_path / "out"))
    p = subprocess.run([sys.executable, "-c", code, str(cfg), str(pathlib.Path(__file__).parent)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert (run_dir(tmp_path / "out") / "grad_reduced_0-0.csv").exists()


def test_csv_files_in_msprobe_layout_with_numpy_values(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True,
                       wg_distribution=True, mv_distribution=True, param_distribution=True,
                       mg_direction=True, ur_distribution=True, ops=ALL_OPS)
    mon, net, opt, _, snaps = train(cfg, tmp_path / "out", snapshots=True, monkeypatch=monkeypatch)
    run = run_dir(tmp_path / "out")
    assert run.name.split("-rank")[1].startswith("0-")
    names = sorted(p.name for p in run.glob("*.csv"))
    for group in ["actv", "actv_grad", "grad_unreduced", "grad_reduced", "exp_avg", "exp_avg_sq",
                  "param_origin", "param_updated", "other"]:
        # no moments before the first update (as torch's Adam, which has no state then)
        first = 1 if group.startswith("exp_avg") else 0
        assert f"{group}_{first}-{first}.csv" in names and f"{group}_2-2.csv" in names, names
    assert "exp_avg_0-0.csv" not in names
    # weight gradients: msprobe's MindSpore names (parameters_and_names), values of the step
    header, rows = rows_by_name(run / "grad_reduced_1-1.csv")
    assert header == ["vpp_stage", "name", "step"] + ALL_OPS
    g = snaps[1]["grad"]["blocks.0.fc1.weight"].astype(np.float64)
    r = rows[("blocks.0.fc1.weight", "1")]
    assert r["vpp_stage"] == "0"
    assert close(r["norm"], norm(g)) and close(r["min"], g.min()) and close(r["max"], g.max())
    assert close(r["mean"], g.mean()) and close(r["nans"], 0)
    assert close(r["zeros"], float(np.mean(np.abs(g) < 1e-8)))
    _, unreduced = rows_by_name(run / "grad_unreduced_1-1.csv")
    assert close(unreduced[("blocks.0.fc1.weight", "1")]["norm"], norm(g))
    # Adam's moments before step 1's update, the parameters before and after it
    _, m = rows_by_name(run / "exp_avg_1-1.csv")
    assert close(m[("head.bias", "1")]["norm"], norm(snaps[1]["m"]["head.bias"]))
    _, before = rows_by_name(run / "param_origin_2-2.csv")
    _, after = rows_by_name(run / "param_updated_2-2.csv")
    assert close(before[("embed.bias", "2")]["norm"], norm(snaps[2]["param"]["embed.bias"]))
    assert close(after[("embed.bias", "2")]["norm"], norm(snaps[2]["updated"]["embed.bias"]))
    # activations: the cells' names, the micro step column; embed's input is the batch
    _, x, y = ms_models.make()
    header, actv = rows_by_name(run / "actv_0-0.csv")
    assert header[:4] == ["vpp_stage", "name", "step", "micro_step"]
    assert close(actv[("embed.input", "0", "0")]["norm"], norm(x.asnumpy()))
    w0, b0 = snaps[0]["param"]["embed.weight"], snaps[0]["param"]["embed.bias"]
    h = x.asnumpy().astype(np.float64) @ w0.T.astype(np.float64) + b0
    assert abs(float(actv[("embed.output", "0", "0")]["norm"]) - norm(h)) <= 1e-5 * norm(h)
    assert ("blocks.1.fc2.output", "0", "0") in actv and ("blocks.0.ln1.input", "0", "0") in actv
    # gradients of the cells' outputs: head's is d mse / d out = 2 (out - y) / N
    ref, _, _ = ms_models.make()
    hh = ref.embed(x)
    for b in ref.blocks:
        hh = b(hh)
    out = ref.head(hh).asnumpy().astype(np.float64)
    d_out = 2 * (out - y.asnumpy()) / out.size
    _, grads = rows_by_name(run / "actv_grad_0-0.csv")
    assert abs(float(grads[("head.output", "0", "0")]["norm"]) - norm(d_out)) <= 1e-5 * norm(d_out)
    # the batch needs no gradient: a row of nan, as msprobe writes it
    assert grads[("embed.input", "0", "0")]["norm"] == "nan"
    # mg_direction 1.0 at step 0; update ratios from step 1 (nn.Adam's bias correction)
    _, other0 = rows_by_name(run / "other_0-0.csv")
    assert close(other0[("head.weight", "0")]["mean"], 1.0)
    _, other2 = rows_by_name(run / "other_2-2.csv")
    assert 0.0 <= float(other2[("head.weight", "2")]["mean"]) <= 1.0
    assert ("head.weight.adam_update", "2") in other2 and ("head.weight.adam_ratio", "2") in other2
    # msprobe's tags from the last written step
    actv_m, _ = mon.generate_xy_metrics()
    assert "0:head.output:0/rank0/actv" in actv_m
    reduced, _ = mon.generate_wgrad_metrics()
    assert close(reduced["0:head.bias/rank0/post_grad"]["norm"], norm(snaps[2]["grad"]["head.bias"]))


@pytest.mark.parametrize("kind", ["adamw", "momentum"])
def test_other_optimizers(tmp_path, monkeypatch, caplog, kind):
    """AdamWeightDecay's moments1/moments2 are its exp_avg/exp_avg_sq; Momentum keeps no Adam
    moments: a named warning, and the other groups written."""
    cfg = write_config(tmp_path / "mon.json", wg_distribution=True, mv_distribution=True,
                       param_distribution=True, ops=["norm"])
    _, _, _, _, snaps = train(cfg, tmp_path / "out", opt_kind=kind, snapshots=True,
                              monkeypatch=monkeypatch)
    run = run_dir(tmp_path / "out")
    assert (run / "grad_reduced_2-2.csv").exists() and (run / "param_updated_2-2.csv").exists()
    if kind == "adamw":
        _, m = rows_by_name(run / "exp_avg_2-2.csv")
        assert close(m[("blocks.1.q.weight", "2")]["norm"], norm(snaps[2]["m"]["blocks.1.q.weight"]))
        assert (run / "exp_avg_sq_2-2.csv").exists()
    else:
        assert not list(run.glob("exp_avg*"))
        assert any("keeps no Adam moments" in r.getMessage() for r in caplog.records)


def test_monitor_changes_no_bit_of_the_training(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True, mg_direction=True,
                       ur_distribution=True, ops=ALL_OPS,
                       alert=dict(rules=[dict(rule_name="AnomalyTurbulence", args=dict(threshold=0.5))]))
    _, net_a, _, losses_a, _ = train(steps=4)
    _, net_b, _, losses_b, _ = train(cfg, tmp_path / "out", steps=4, monkeypatch=monkeypatch)
    assert [loss.tobytes() for loss in losses_a] == [loss.tobytes() for loss in losses_b]
    for pa, pb in zip(net_a.trainable_params(), net_b.trainable_params()):
        assert pa.name == pb.name and pa.asnumpy().tobytes() == pb.asnumpy().tobytes(), pa.name
    assert (run_dir(tmp_path / "out") / "actv_3-3.csv").exists()


# k's bias gets a gradient of rounding noise only (softmax ignores a shift of every key): its
# norm turns over from step to step, so the weights watched here are those with real gradients.
SPIKE_CONFIG = dict(wg_distribution=True, ops=["norm", "max"],
                    targets={"head": {}, "embed": {}, "blocks.0.fc1": {}, "blocks.1.q.weight": {}},
                    alert=dict(rules=[dict(rule_name="AnomalyTurbulence", args=dict(threshold=1.0))],
                               dump=True))


def test_gradient_spike_reported_at_its_step(tmp_path, monkeypatch, cli):
    cfg = write_config(tmp_path / "mon.json", **SPIKE_CONFIG)
    k = 3
    mon, *_ = train(cfg, tmp_path / "spiked", steps=k + 1, spike_at=k, monkeypatch=monkeypatch)
    assert mon.anomalies, "the spike was not reported"
    assert {a["step"] for a in mon.anomalies} == {k}, mon.anomalies
    assert any(a["tag_name"] == "0:head.weight/rank0/post_grad" for a in mon.anomalies)
    # the files tell the same: monitor-analyse puts step k first, monitor-report reads the run
    cli("monitor-analyse", tmp_path / "spiked")
    earliest = next(iter(json.loads(next((tmp_path / "spiked").rglob("anomaly_analyse.json"))
                                    .read_text()).values()))
    assert earliest["step"] == k and "head.weight" in earliest["tag_name"], earliest
    cli("monitor-report", tmp_path / "spiked", "-o", tmp_path / "report.html")
    assert "head.weight" in (tmp_path / "report.html").read_text()
    # a clean run: no anomaly
    clean, *_ = train(cfg, tmp_path / "clean", steps=k + 1, monkeypatch=monkeypatch)
    assert clean.anomalies == []


def test_tensorboard_files(tmp_path, monkeypatch, cli):
    """TensorBoard event files: numprobe monitor-report reads them here; TensorBoard's own reader
    (in the torch2 venv) reads the tags as the torch side writes them."""
    cfg = write_config(tmp_path / "mon.json", wg_distribution=True, format="tensorboard",
                       ops=["norm", "max"])
    train(cfg, tmp_path / "out", steps=3, monkeypatch=monkeypatch)
    run = run_dir(tmp_path / "out")
    assert len(list(run.glob("events.out.tfevents.*"))) == 1 and not list(run.glob("*.csv"))
    cli("monitor-report", tmp_path / "out", "-o", tmp_path / "report.html")
    assert "head.weight" in (tmp_path / "report.html").read_text()
    if not TORCH2_PYTHON.exists():
        pytest.skip(f"TensorBoard's reader: {TORCH2_PYTHON} absent (make setup makes it)")
    code = ("import sys\n"
            "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
            "acc = EventAccumulator(sys.argv[1]); acc.Reload()\n"
            "tag = '0:head.weight/rank0/post_grad_norm'\n"
            "assert tag in acc.Tags()['scalars'], acc.Tags()['scalars'][:10]\n"
            "print([e.step for e in acc.Scalars(tag)])\n")
    p = subprocess.run([str(TORCH2_PYTHON), "-c", code, str(run)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[0, 1, 2]", p.stdout


@pytest.mark.parametrize("fields, named", [
    (dict(wg_distribution=True, no_such_field=1), "no_such_field"),
    (dict(xy_distribution=True, print_struct=True), "print_struct"),
    (dict(xy_distribution=True, targets={"blocks.9.q": {}}), "blocks.9.q"),
])
def test_bad_config_is_an_error_naming_the_field(tmp_path, monkeypatch, fields, named):
    cfg = write_config(tmp_path / "mon.json", **fields)
    from numprobe.mindspore.trainer_mon import NumprobeError
    with pytest.raises(NumprobeError) as e:
        train(cfg, tmp_path / "out", steps=1, monkeypatch=monkeypatch)
    assert named in str(e.value) and "mon.json" in str(e.value)


def test_unmatched_target_beside_matched_ones_is_a_named_warning(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", xy_distribution=True,
                       targets={"blocks.0.fc1": {}, "blocks.0.nope": {}}, ops=["norm"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(cfg, tmp_path / "out", steps=1, monkeypatch=monkeypatch)
    assert any("blocks.0.nope" in str(w.message) for w in caught), [str(w.message) for w in caught]
    _, actv = rows_by_name(run_dir(tmp_path / "out") / "actv_0-0.csv")
    assert {k[0] for k in actv} == {"blocks.0.fc1.input", "blocks.0.fc1.output"}


def test_graph_mode_is_refused(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", wg_distribution=True)
    from numprobe.mindspore.trainer_mon import NumprobeError, TrainerMon
    net, _, _ = ms_models.make()
    mon = TrainerMon(str(cfg))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(NumprobeError, match="GRAPH_MODE"):
            mon.set_monitor(net, nn.Adam(net.trainable_params(), 1e-3))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int8", "uint8",
                                   "bool"])
def test_engine_summaries_of_every_buffer_type(tmp_path, dtype):
    """The binding's summaries against numpy's (float64): zeros is the share of |x| < eps (a
    bool's false elements), nans and infs are counts."""
    from numprobe import _engine
    cfg = write_config(tmp_path / "mon.json", ops=ALL_OPS, eps=0.01)
    collector = _engine.MonitorCollector(cfg.read_text(), str(cfg), str(tmp_path / "out"), 0)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(1000) * 3).astype(dtype)
    if dtype.startswith("float"):
        a[:7] = 0.001
        a[7], a[8] = np.nan, np.inf
    s = collector.summary(a)
    x = a.astype(np.float64)
    finite = x[np.isfinite(x)]
    assert s["nans"] == np.isnan(x).sum() and s["infs"] == np.isinf(x).sum()
    assert s["zeros"] == pytest.approx(np.mean(np.abs(x) < (0.5 if dtype == "bool" else 0.01)))
    assert s["min"] == finite.min() and (s["max"] == x[~np.isnan(x)].max())
    if not dtype.startswith("float"):
        assert s["norm"] == pytest.approx(np.sqrt(np.sum(x * x)), rel=1e-12)
        assert s["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert math.isnan(collector.summary(None)["norm"])
    collector.close()


def test_dynamic_on_starts_at_the_next_step(tmp_path, monkeypatch):
    """DYNAMIC_MONITOR=True: nothing until the file says dynamic_on; then collect_times steps
    from the next one, and dynamic_on written back to false (the torch TrainerMon's schedule)."""
    cfg = write_config(tmp_path / "mon.json", wg_distribution=True, ops=["norm"], collect_times=2,
                       dynamic_on=False)
    monkeypatch.setenv("DYNAMIC_MONITOR", "True")
    monkeypatch.setenv("MONITOR_OUTPUT_DIR", str(tmp_path / "out"))
    import numprobe
    net, x, y = ms_models.make()
    opt = nn.Adam(net.trainable_params(), 1e-3)
    mon = numprobe.TrainerMon(str(cfg))
    mon.set_monitor(net, opt)
    grad_fn = ms.value_and_grad(net, None, opt.parameters)
    for step in range(6):
        if step == 2:
            write_config(cfg, wg_distribution=True, ops=["norm"], collect_times=2, dynamic_on=True)
            os.utime(cfg, (1, 1))  # a new mtime, whatever the clock's resolution
        opt(grad_fn(x, y)[1])
    # changed during step 2 (read when it ends): collected from step 3, twice
    run = run_dir(tmp_path / "out")
    assert sorted(p.name for p in run.glob("grad_reduced_*.csv")) == [
        "grad_reduced_3-3.csv", "grad_reduced_4-4.csv"]
    assert json.loads(cfg.read_text())["dynamic_on"] is False
