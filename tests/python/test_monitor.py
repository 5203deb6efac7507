"""numprobe.TrainerMon and numprobe::TrainerMon end to end: msprobe's config and files, values
checked against torch, the loss untouched, a 4-process gloo run with an injected NaN found by
monitor-analyse, a killed run, dynamic mode, and (torch 2.x lane) msprobe's own TrainerMon on
the same run as a second writer."""
import csv
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch
import torch.utils.checkpoint

from conftest import BUILD, PYDIR, live

sys.path.insert(0, str(PYDIR))
import numprobe  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "monitor_train_script.py"
ALL_OPS = ["min", "max", "norm", "mean", "zeros", "nans"]


def write_config(path, **fields):
    path.write_text(json.dumps(fields))
    return path


def run_dirs(base):
    dirs = sorted(d for d in pathlib.Path(base).iterdir() if d.is_dir() and "-rank" in d.name)
    assert dirs, f"no run directory under {base}: {sorted(os.listdir(base))}"
    return dirs


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def script_env(base):
    env = dict(os.environ, MONITOR_OUTPUT_DIR=str(base), NUMPROBE_PYTHONPATH=str(PYDIR))
    env.pop("DYNAMIC_MONITOR", None)
    return env


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def train_tiny(mon_config, base, monkeypatch, steps=3, grad_acc=1):
    """Trains Tiny in this process under a TrainerMon; returns (monitor, model, snapshots) where
    snapshots[step] holds the tensors the monitor should have summarised."""
    monkeypatch.setenv("MONITOR_OUTPUT_DIR", str(base))
    torch.manual_seed(0)
    model = Tiny()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    mon = numprobe.TrainerMon(str(mon_config))
    mon.set_monitor(model, grad_acc_steps=grad_acc, optimizer=opt)
    snaps = []
    for step in range(steps):
        opt.zero_grad()
        acts = []
        for _ in range(grad_acc):
            x = torch.randn(5, 6)
            h = model.fc1(x)
            acts.append((x.clone(), h.detach().clone()))
            model(x).pow(2).mean().backward()
        snap = {"x": acts, "grad": {n: p.grad.clone() for n, p in model.named_parameters()},
                "param": {n: p.detach().clone() for n, p in model.named_parameters()}}
        snap["exp_avg"] = {n: opt.state[p]["exp_avg"].clone() for n, p in model.named_parameters()
                           if p in opt.state}
        opt.step()
        snap["updated"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        snaps.append(snap)
    return mon, model, snaps


def rows_by_name(path):
    rows = read_rows(path)
    header = rows[0]
    return header, {(r[1], r[2]) + ((r[3],) if header[3] == "micro_step" else ()): dict(zip(header, r))
                    for r in rows[1:]}


def close(a, b, ndigits=6):
    a = float(a)
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= 10 ** -ndigits + 1e-6 * abs(b)


# msprobe's squash_param_name, as msprobe writes it: the reference the engine's table is held to.
_MSPROBE_SQUASH = [r"^.*\.(layers?\..*)", r"^.*\.(embeddings?\..*)", r"^.*\.(final.*)",
                   r"^.*\.(output.*)", r"^.*\.(norm.*)"]


def _msprobe_squash(name):
    for pattern in _MSPROBE_SQUASH:
        match = re.findall(pattern, name)
        if match:
            return match[0]
    return name


def test_squashed_names_are_the_engines_and_msprobes():
    """The Python TrainerMon names parameters through the engine's one squash table (the libtorch
    TrainerMon's), which gives what msprobe's does."""
    from numprobe.monitor import names
    cases = ["module.language_model.encoder.layers.0.mlp.weight", "model.layer.3.bias",
             "model.embedding.word_embeddings.weight", "gpt.decoder.final_layernorm.weight",
             "m.output_layer.weight", "m.norm1.weight", "a.layers.0.b.layers.1.w",
             "m.norm.layers.0.w", "m.layers.0.norm.w", "fc1.weight", "layers.0.weight", "",
             "blocks.0.attn.qkv.weight", "m.embeddings.position_ids", "m.outputs.dense.bias"]
    for name in cases:
        assert names.squash_param_name(name) == _msprobe_squash(name), name
        assert names.squash_param_name(name, False) == name
    assert numprobe._C.monitor_squash_name("x.layers.1.w") == "layers.1.w"


def test_csv_files_in_msprobe_layout_with_torch_values(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True, mg_direction=True, ops=ALL_OPS)
    mon, model, snaps = train_tiny(cfg, tmp_path / "out", monkeypatch)
    (run,) = run_dirs(tmp_path / "out")
    assert run.name.split("-rank")[1].startswith("0-")
    names = sorted(p.name for p in run.glob("*.csv"))
    for group in ["actv", "actv_grad", "grad_unreduced", "grad_reduced", "exp_avg", "exp_avg_sq",
                  "param_origin", "param_updated", "other"]:
        # Adam has no moments before its first step: no exp_avg file for step 0 (msprobe neither)
        first = 1 if group.startswith("exp_avg") else 0
        assert f"{group}_{first}-{first}.csv" in names and f"{group}_2-2.csv" in names, names
    assert "exp_avg_0-0.csv" not in names
    header, rows = rows_by_name(run / "grad_reduced_1-1.csv")
    assert header == ["vpp_stage", "name", "step"] + ALL_OPS
    g = snaps[1]["grad"]["fc1.weight"].double()
    r = rows[("fc1.weight", "1")]
    assert r["vpp_stage"] == "0"
    assert close(r["norm"], g.norm().item()) and close(r["min"], g.min().item())
    assert close(r["max"], g.max().item()) and close(r["mean"], g.mean().item())
    assert close(r["nans"], 0)
    # unreduced == reduced without a data-parallel reduce
    _, unreduced = rows_by_name(run / "grad_unreduced_1-1.csv")
    assert close(unreduced[("fc1.weight", "1")]["norm"], g.norm().item())
    # Adam's first moment before step 1's update, parameters before and after it
    _, m = rows_by_name(run / "exp_avg_1-1.csv")
    assert close(m[("fc2.bias", "1")]["norm"], snaps[1]["exp_avg"]["fc2.bias"].double().norm().item())
    _, before = rows_by_name(run / "param_origin_2-2.csv")
    _, after = rows_by_name(run / "param_updated_2-2.csv")
    assert close(before[("fc1.bias", "2")]["norm"], snaps[2]["param"]["fc1.bias"].double().norm().item())
    assert close(after[("fc1.bias", "2")]["norm"], snaps[2]["updated"]["fc1.bias"].double().norm().item())
    # activations: micro_step column, module names, input and output of every module
    header, actv = rows_by_name(run / "actv_0-0.csv")
    assert header[:4] == ["vpp_stage", "name", "step", "micro_step"]
    x, h = snaps[0]["x"][0]
    assert close(actv[("fc1.input", "0", "0")]["norm"], x.double().norm().item())
    assert close(actv[("fc1.output", "0", "0")]["max"], h.double().max().item())
    assert close(actv[("fc1.output", "0", "0")]["zeros"], 0.0)
    assert close(actv[("act.output", "0", "0")]["zeros"], (h <= 0).double().mean().item())
    _, grads = rows_by_name(run / "actv_grad_0-0.csv")
    assert ("fc2.output", "0", "0") in grads and ("act.input", "0", "0") in grads
    # the batch needs no gradient: a row of nan, as msprobe writes it
    assert grads[("fc1.input", "0", "0")]["norm"] == "nan"
    # mg_direction: 1.0 at step 0, a share in [0, 1] later
    _, other0 = rows_by_name(run / "other_0-0.csv")
    assert close(other0[("fc1.weight", "0")]["mean"], 1.0)
    _, other2 = rows_by_name(run / "other_2-2.csv")
    assert 0.0 <= float(other2[("fc1.weight", "2")]["mean"]) <= 1.0
    # generate_xy_metrics / generate_wgrad_metrics: msprobe's tags
    actv_m, actv_grad_m = mon.generate_xy_metrics()
    assert "0:fc1.output:0/rank0/actv" in actv_m or "0:fc1.output/rank0/actv" in actv_m
    reduced, _ = mon.generate_wgrad_metrics()
    assert close(reduced["0:fc1.weight/rank0/post_grad"]["norm"], model.fc1.weight.grad.double().norm().item())


def test_schedule_targets_and_micro_steps(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={"fc2": {}}, xy_distribution=True,
                       wg_distribution=True, start_step=1, step_interval=2, collect_times=2,
                       step_count_per_record=4, ops=["norm", "max"])
    train_tiny(cfg, tmp_path / "out", monkeypatch, steps=7, grad_acc=2)
    (run,) = run_dirs(tmp_path / "out")
    names = sorted(p.name for p in run.glob("*.csv"))
    # steps 1 and 3 only (start 1, every 2nd, twice); records of 4 steps per file
    assert names == ["actv_0-3.csv", "actv_grad_0-3.csv", "grad_reduced_0-3.csv",
                     "grad_unreduced_0-3.csv"], names
    header, actv = rows_by_name(run / "actv_0-3.csv")
    assert header == ["vpp_stage", "name", "step", "micro_step", "norm", "max"]
    assert {k for k in actv} == {(f"fc2.{s}", st, mi) for s in ("input", "output")
                                 for st in ("1", "3") for mi in ("0", "1")}
    _, grads = rows_by_name(run / "grad_reduced_0-3.csv")
    assert {k for k in grads} == {(f"fc2.{p}", st) for p in ("weight", "bias") for st in ("1", "3")}


def test_monitor_changes_no_bit_of_the_loss(tmp_path):
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True, mg_direction=True, ops=ALL_OPS)
    env = script_env(tmp_path / "out")
    for flag, name in (([], "on"), (["--no-monitor"], "off")):
        subprocess.run([sys.executable, str(SCRIPT), str(cfg), "4", "--losses", str(tmp_path / name),
                        *flag], check=True, env=env, timeout=300)
    on = json.loads((tmp_path / "on.rank0").read_text())
    off = json.loads((tmp_path / "off.rank0").read_text())
    assert len(on) == 4 and on == off


@pytest.mark.parametrize("fields,named", [
    ({"targets": {}, "no_such_field": 1}, "no_such_field"),
    ({"ops": ["norm", "median"]}, "median"),
    ({"l2_targets": {"linear_hook": []}}, "l2_targets"),
    ({"step_interval": "2"}, "step_interval"),
    ({"alert": {"rules": [{"rule_name": "AnomalyFoo", "args": {"threshold": 1}}]}}, "AnomalyFoo"),
])
def test_bad_config_is_an_error_naming_the_field(tmp_path, fields, named):
    cfg = write_config(tmp_path / "bad.json", **fields)
    with pytest.raises(ValueError) as e:
        numprobe.TrainerMon(str(cfg))
    assert named in str(e.value) and "bad.json" in str(e.value)
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match="missing.json"):
        numprobe.TrainerMon(str(missing))


def test_gloo_four_ranks_nan_found_first_by_monitor_analyse(tmp_path, cli):
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, ops=["norm", "max", "nans"],
                       alert={"rules": [{"rule_name": "AnomalyNan", "args": {"threshold": 1e10}}],
                              "dump": True},
                       cc_distribution={"enable": True})
    base = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), str(cfg), "5", "--world", "4", "--port", "29631",
                        "--nan-rank", "2", "--nan-step", "3"], env=script_env(base),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = run_dirs(base)
    assert sorted(int(d.name.split("-rank")[1].split("-")[0]) for d in runs) == [0, 1, 2, 3]
    unreduced, reduced = {}, {}
    for d in runs:
        r = int(d.name.split("-rank")[1].split("-")[0])
        unreduced[r] = rows_by_name(d / "grad_unreduced_1-1.csv")[1][("fc1.weight", "1")]["norm"]
        reduced[r] = rows_by_name(d / "grad_reduced_1-1.csv")[1][("fc1.weight", "1")]["norm"]
        _, other = rows_by_name(d / "other_1-1.csv")
        assert any(k[0].startswith("all_reduce.") for k in other), sorted(other)[:5]
        assert {r["vpp_stage"] for k, r in other.items() if k[0].startswith("all_reduce.")} == {"cc"}
    assert len(set(unreduced.values())) == 4, unreduced  # each rank its own data
    assert len(set(reduced.values())) == 1, reduced      # after the all_reduce: one gradient
    # every rank has per-rank anomaly files; the analyser orders them and names rank 2, step 3
    analysed = cli("monitor-analyse", base, "-k", "8")
    first = [line for line in analysed.stdout.splitlines() if line.strip()]
    assert first, analysed.stdout
    result = json.loads((base / "anomaly_detected" / "anomaly_analyse.json").read_text()) if (
        base / "anomaly_detected" / "anomaly_analyse.json").exists() else json.loads(
        (base / "anomaly_analyse.json").read_text())
    earliest = next(iter(result.values()))
    # (regression: the nan rows of the batch's missing gradients were once the first "anomaly")
    assert earliest["rank"] == 2 and earliest["step"] == 3, earliest
    assert "act.input" in earliest["tag_name"], earliest  # the NaN is made between fc1 and act


def test_killed_run_keeps_every_finished_step(tmp_path):
    cfg = write_config(tmp_path / "mon.json", targets={}, wg_distribution=True, ops=["norm"])
    base = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), str(cfg), "10", "--kill-after", "3"],
                       env=script_env(base), capture_output=True, text=True, timeout=300)
    assert p.returncode != 0  # SIGKILL
    (run,) = run_dirs(base)
    steps = sorted({int(r[2]) for f in run.glob("grad_reduced_*.csv") for r in read_rows(f)[1:]})
    assert steps == [0, 1, 2, 3], steps


def test_dynamic_on_starts_at_the_next_step_and_switches_itself_off(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, wg_distribution=True, dynamic_on=False,
                       collect_times=2, ops=["norm"])
    monkeypatch.setenv("DYNAMIC_MONITOR", "True")
    monkeypatch.setenv("MONITOR_OUTPUT_DIR", str(tmp_path / "out"))
    torch.manual_seed(0)
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = numprobe.TrainerMon(str(cfg))
    mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)
    for step in range(6):
        if step == 2:
            config = json.loads(cfg.read_text())
            config["dynamic_on"] = True
            cfg.write_text(json.dumps(config))
            os.utime(cfg, (1e9 + step, 1e9 + step))
        opt.zero_grad()
        model(torch.randn(4, 6)).sum().backward()
        opt.step()
    (run,) = run_dirs(tmp_path / "out")
    steps = sorted({int(r[2]) for f in run.glob("grad_reduced_*.csv") for r in read_rows(f)[1:]})
    assert steps == [3, 4], steps  # changed during step 2: collected from step 3, twice
    assert json.loads(cfg.read_text())["dynamic_on"] is False


def test_print_struct_writes_the_structure_and_stops(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, print_struct=True, ops=["norm"])
    with pytest.raises(RuntimeError, match="print_struct"):
        train_tiny(cfg, tmp_path / "out", monkeypatch, steps=2)
    struct = json.loads((tmp_path / "out" / "module_struct" / "rank0" / "module_struct.json").read_text())
    assert struct["0:fc1"]["output"]["config"] == "tensor"
    assert "size=(5, 8)" in struct["0:fc1"]["output"]["tensor"]


def test_tensorboard_format_read_by_tensorboard(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, wg_distribution=True, format="tensorboard",
                       ops=["norm", "max"])
    train_tiny(cfg, tmp_path / "out", monkeypatch, steps=3)
    (run,) = run_dirs(tmp_path / "out")
    events = list(run.glob("events.out.tfevents.*"))
    assert len(events) == 1
    ea_mod = live("tensorboard.backend.event_processing.event_accumulator")
    acc = ea_mod.EventAccumulator(str(run))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    tag = "0:fc1.weight/rank0/post_grad_norm"
    assert tag in tags, tags[:10]
    assert [e.step for e in acc.Scalars(tag)] == [0, 1, 2]


def test_cpp_trainer_mon_example(tmp_path, cli):
    exe = BUILD / "bin" / "train_mlp_monitor"
    if not exe.exists():
        exe = BUILD / "examples" / "train_mlp_monitor"
    assert exe.exists(), f"{exe} not built"
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True, ops=["norm", "nans"],
                       alert={"rules": [{"rule_name": "AnomalyNan", "args": {"threshold": 1e10}}],
                              "dump": True})
    base = tmp_path / "out"
    p = subprocess.run([str(exe), str(cfg), "5", "3"], env=dict(os.environ, MONITOR_OUTPUT_DIR=str(base)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (run,) = run_dirs(base)
    for group in ["actv", "actv_grad", "grad_unreduced", "grad_reduced", "exp_avg", "exp_avg_sq",
                  "param_origin", "param_updated"]:
        step = 1 if group.startswith("exp_avg") else 0  # no moments before the first update
        assert (run / f"{group}_{step}-{step}.csv").exists(), group
    _, actv = rows_by_name(run / "actv_3-3.csv")
    assert actv[("fc1.output", "3", "0")]["nans"] not in ("0", "0.0")
    cli("monitor-analyse", base)
    result_path = next(base.rglob("anomaly_analyse.json"))
    earliest = next(iter(json.loads(result_path.read_text()).values()))
    assert earliest["step"] == 3 and "fc1.output" in earliest["tag_name"], earliest


MSPROBE_PAIR = '''
import os, sys, torch
sys.path.insert(0, {pydir!r})
which, config = sys.argv[1], sys.argv[2]
if which == "msprobe":
    from msprobe.pytorch import TrainerMon
    kwargs = dict(params_have_main_grad=False)
else:
    from numprobe import TrainerMon
    kwargs = {{}}
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3))
opt = torch.optim.AdamW(model.parameters(), lr=0.05)
mon = TrainerMon(config, **kwargs)
mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(5, 6)).pow(2).mean().backward()
    opt.step()
'''


def test_msprobe_trainer_mon_writes_the_same_files(tmp_path):
    """msprobe's own TrainerMon (torch >= 2) and numprobe's on the same run: same file names, same
    headers (msprobe's extra shape/dtype columns aside), same rows, values equal to the last digit
    msprobe writes (within 1.5 units: sums run in another order)."""
    live("msprobe.pytorch.monitor.module_hook")
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True,
                       ops=["min", "max", "norm", "mean", "zeros", "nans"])
    script = tmp_path / "pair.py"
    script.write_text(MSPROBE_PAIR.format(pydir=str(PYDIR)))
    out = {}
    for which in ("msprobe", "numprobe"):
        base = tmp_path / which
        p = subprocess.run([sys.executable, str(script), which, str(cfg)], env=script_env(base),
                           capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert p.returncode == 0, f"{which}: {p.stderr[-3000:]}"
        (run,) = run_dirs(base)
        out[which] = {f.name: read_rows(f) for f in run.glob("*.csv")}
    ms, npb = out["msprobe"], out["numprobe"]
    assert sorted(npb) == sorted(ms)
    # msprobe 26.x appends shape and dtype columns of its own (not ops of the config): dropped here
    for name, rows in ms.items():
        keep = [i for i, col in enumerate(rows[0]) if col not in ("shape", "dtype")]
        ms[name] = [[r[i] for i in keep] for r in rows]
    compared = 0
    for name, rows in ms.items():
        assert npb[name][0] == rows[0], name  # header
        key = lambda r: tuple(r[:4]) if rows[0][3] == "micro_step" else tuple(r[:3])  # noqa: E731
        ours = {key(r): r for r in npb[name][1:]}
        theirs = {key(r): r for r in rows[1:]}
        assert sorted(ours) == sorted(theirs), (name, sorted(set(ours) ^ set(theirs))[:6])
        first_value = 4 if rows[0][3] == "micro_step" else 3
        for k, r in theirs.items():
            for col, a, b in zip(rows[0][first_value:], ours[k][first_value:], r[first_value:]):
                if b == "nan" or a == "nan":
                    assert a == b, (name, k, col)
                    continue
                assert abs(float(a) - float(b)) <= 1.5e-6 + 1e-6 * abs(float(b)), (name, k, col, a, b)
                compared += 1
    assert compared > 200


def test_device_route_gives_the_values_of_the_host_route(tmp_path):
    """Tensors off the CPU are reduced where they live and fetched once a step
    (NUMPROBE_MONITOR_DEVICE_ROUTE=1 sends CPU tensors that way): the same files, the same values
    up to summation order."""
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       mv_distribution=True, param_distribution=True, mg_direction=True, ops=ALL_OPS)
    files = {}
    for route in ("host", "device"):
        env = script_env(tmp_path / route)
        if route == "device":
            env["NUMPROBE_MONITOR_DEVICE_ROUTE"] = "1"
        subprocess.run([sys.executable, str(SCRIPT), str(cfg), "3"], check=True, env=env, timeout=300)
        (run,) = run_dirs(tmp_path / route)
        files[route] = {f.name: read_rows(f) for f in run.glob("*.csv")}
    assert sorted(files["host"]) == sorted(files["device"]) and len(files["host"]) >= 20
    values = 0
    for name, rows in files["host"].items():
        other = files["device"][name]
        assert [r[:4] for r in rows] == [r[:4] for r in other], name
        for a_row, b_row in zip(rows[1:], other[1:]):
            for a, b in zip(a_row[3:], b_row[3:]):
                if a == "nan" or b == "nan":
                    assert a == b, (name, a_row, b_row)
                else:
                    assert abs(float(a) - float(b)) <= 1.5e-6 + 1e-6 * abs(float(a)), (name, a_row, b_row)
                    values += 1
    assert values > 500


def test_forward_only_mbs_grads_update_ratio_and_stack_info(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, forward_only=True,
                       wg_distribution=True, monitor_mbs_grad=True, ur_distribution=True,
                       stack_info=True, ops=["norm", "max"])
    train_tiny(cfg, tmp_path / "out", monkeypatch, steps=3, grad_acc=2)
    (run,) = run_dirs(tmp_path / "out")
    names = sorted(p.name for p in run.glob("*.csv"))
    assert not any(n.startswith("actv_grad_") for n in names), names  # forward_only
    header, unreduced = rows_by_name(run / "grad_unreduced_1-1.csv")
    assert header[:4] == ["vpp_stage", "name", "step", "micro_step"]  # one row per micro-batch
    assert {k for k in unreduced if k[0] == "fc1.weight"} == {("fc1.weight", "1", "0"), ("fc1.weight", "1", "1")}
    _, other = rows_by_name(run / "other_2-2.csv")
    assert ("fc1.weight.adam_update", "2") in other and ("fc1.weight.adam_ratio", "2") in other
    assert "other_0-0.csv" not in names or ("fc1.weight.adam_update", "0") not in rows_by_name(
        run / "other_0-0.csv")[1]  # before Adam's first step there is no update
    stack = read_rows(run / "stack_info.csv")
    assert stack[0] == ["module_name", "stack_info"]
    assert any(r[0] == "0:fc1" and "test_monitor.py" in r[1] for r in stack[1:]), stack[:3]


def test_module_ranks_without_this_rank_writes_nothing(tmp_path, monkeypatch):
    cfg = write_config(tmp_path / "mon.json", targets={}, wg_distribution=True, module_ranks=[1],
                       ops=["norm"])
    train_tiny(cfg, tmp_path / "out", monkeypatch, steps=2)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


class Masked(torch.nn.Module):
    """A conv, a BatchNorm followed by an in-place ReLU (torchvision's ResNet), a checkpointed
    block, and a module that takes a bool mask."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, h, mask):
            return self.lin(h).masked_fill(mask, 0.0)

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(2)
        self.relu = torch.nn.ReLU(inplace=True)
        self.proj = torch.nn.Linear(32, 8)
        self.inner = torch.nn.Linear(8, 8)
        self.block = Masked.Block()

    def forward(self, x):
        h = self.relu(self.bn(self.conv(x))).flatten(1)
        h = self.proj(h)
        h = torch.utils.checkpoint.checkpoint(self.inner, h, use_reentrant=True)
        return self.block(h, h > 0.5)


def test_hard_models_train_unchanged_under_the_monitor(tmp_path, monkeypatch):
    """Regressions from review: an in-place ReLU after a hooked BatchNorm (autograd refuses to
    modify a hook's view unless it is cloned), a bool mask with the zeros op (bool has no abs), a
    checkpointed module (its recompute inside backward is not a second forward), an LR scheduler
    made after set_monitor (it reads optimizer.step.__func__), set_monitor called twice (one
    wrapper, one set of hooks): the losses stay bit-identical and the rows are counted once."""
    cfg = write_config(tmp_path / "mon.json", targets={}, xy_distribution=True, wg_distribution=True,
                       ops=["norm", "zeros"])
    monkeypatch.setenv("MONITOR_OUTPUT_DIR", str(tmp_path / "out"))

    def run(monitored):
        torch.manual_seed(0)
        model = Masked()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        if monitored:
            mon = numprobe.TrainerMon(str(cfg))
            mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)
            mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)  # again: replaces, not adds
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = model(torch.randn(4, 1, 4, 4, requires_grad=True)).pow(2).mean()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        return losses

    assert run(True) == run(False)
    (run_dir,) = run_dirs(tmp_path / "out")
    _, actv = rows_by_name(run_dir / "actv_1-1.csv")
    inner = [k for k in actv if k[0] == "inner.output"]
    assert inner == [("inner.output", "1", "0")], sorted(actv)  # no second row from the recompute
    assert ("block.input_1", "1", "0") in actv or ("block.input", "1", "0") in actv
    _, grads = rows_by_name(run_dir / "grad_reduced_2-2.csv")
    assert len([k for k in grads if k[0] == "conv.weight"]) == 1  # one hook, one row
    steps = sorted({int(r[2]) for f in run_dir.glob("grad_reduced_*.csv") for r in read_rows(f)[1:]})
    assert steps == [0, 1, 2]  # one wrapper: the step counter advanced once a step
