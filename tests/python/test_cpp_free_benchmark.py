"""free_benchmark in the libtorch C++ API (examples/free_benchmark_check.cc; docs/capture.md,
"free_benchmark"): the fragile op is reported and nothing else, the training is bitwise unchanged
(random generators included), and what an aten observer cannot do is refused with the reason."""
import csv
import json
import subprocess

import pytest

from conftest import BUILD

PROGRAM = BUILD / "bin" / "free_benchmark_check"
HEADER = ["rank", "pert_mode", "stage", "step", "api_name", "max_rel", "dtype", "shape",
          "output_index"]


def run(*args):
    if not PROGRAM.exists():
        pytest.fail(f"{PROGRAM} not built: run `make build` first")
    return subprocess.run([str(PROGRAM), *map(str, args)], capture_output=True, text=True)


def config(tmp_path, **fb):
    top = {"task": "free_benchmark", "dump_path": str(tmp_path / "out"), "level": "L1"}
    top.update({k: fb.pop(k) for k in ("step",) if k in fb})  # list, scope: in the section
    top["free_benchmark"] = fb
    path = tmp_path / "config.json"
    path.write_text(json.dumps(top))
    return path


def rows(tmp_path):
    path = tmp_path / "out" / "free_benchmark.csv"
    if not path.exists():
        return None
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == HEADER
    return table[1:]


@pytest.fixture(scope="module")
def uncaptured():
    p = run("-")
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_cancelling_subtraction_is_reported_and_nothing_else(tmp_path, uncaptured):
    p = run(config(tmp_path, pert_mode="bit_noise"))
    assert p.returncode == 0, p.stderr
    assert p.stdout == uncaptured  # losses and weights bit for bit
    found = rows(tmp_path)
    assert [(r[3], r[4]) for r in found] == [("0", "Aten.sub.Tensor.0.forward"),
                                             ("1", "Aten.sub.Tensor.0.forward")]
    r = found[0]
    assert r[1:3] == ["bit_noise", "forward"] and r[6:] == ["torch.float32", "torch.Size([4, 8])", ""]
    assert float(r[5]) > 0.0002  # float32's threshold is a ratio of 1.0002


def test_a_replayed_call_sees_the_random_state_the_call_saw(tmp_path, uncaptured):
    # no_change re-runs every op as it was: rrelu's random slopes must come out the same, and the
    # training's generator must end where it would have (without the restore rrelu is reported).
    p = run(config(tmp_path, pert_mode="no_change"))
    assert p.returncode == 0, p.stderr
    assert p.stdout == uncaptured
    assert rows(tmp_path) is None


@pytest.mark.parametrize("mode", ["add_noise", "improve_precision", "change_value"])
def test_other_modes_leave_the_training_alone(tmp_path, uncaptured, mode):
    p = run(config(tmp_path, pert_mode=mode))
    assert p.returncode == 0, p.stderr
    assert p.stdout == uncaptured
    found = rows(tmp_path) or []
    if mode == "change_value":  # swapping elements changes most outputs: rows, not an error
        assert any(r[4].startswith("Aten.addmm.") or r[4].startswith("Aten.linear.")
                   for r in found)
    else:  # fp32 noise below one ulp; nothing half-precision to widen
        assert found == []


def test_max_sample_and_list_limit_the_checked_calls(tmp_path):
    p = run(config(tmp_path, pert_mode="bit_noise", list=["Aten.tanh"], step=[1]))
    assert p.returncode == 0, p.stderr
    assert rows(tmp_path) is None  # tanh is not fragile; sub is not in the list
    p = run(config(tmp_path, pert_mode="change_value", max_sample=1, step=[1]))
    assert p.returncode == 0, p.stderr
    names = [r[4] for r in rows(tmp_path)]
    assert {r[3] for r in rows(tmp_path)} == {"1"}
    assert all(n.split(".")[-2] == "0" for n in names)  # only each API's first call


@pytest.mark.parametrize("field,value,words", [
    ("handler_type", "fix", "cannot"),
    ("fuzz_stage", "backward", "gradient hook"),
])
def test_what_an_observer_cannot_do_is_refused(tmp_path, field, value, words):
    extra = {"list": ["Aten.sub"]} if field == "fuzz_stage" else {}
    p = run(config(tmp_path, pert_mode="improve_precision", **{field: value}, **extra))
    assert p.returncode == 1
    assert f'free_benchmark.{field}' in p.stderr and words in p.stderr
    assert str(tmp_path / "config.json") in p.stderr
    assert not (tmp_path / "out").exists()
