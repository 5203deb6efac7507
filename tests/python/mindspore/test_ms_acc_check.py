"""acc-check of numprobe's MindSpore L1 dumps on MindSpore (no torch): statistics dumps with
generated inputs, tensor dumps with the recorded ones, --offline against the recorded outputs;
msprobe's result files; no false error on a clean dump, a recorded output edited by 0.5 % is an
error. Run by `make test-mindspore` (.venv/mindspore)."""
import csv
import glob
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

import ms_models  # noqa: E402
import numprobe  # noqa: E402
from conftest import CLI, rank_dir  # noqa: E402

# The lane's package tree (its numprobe/ links the sources, not resolved: _engine is the lane's).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(numprobe.__file__)))


def capture(out, task):
    net, x, y = ms_models.make()
    dbg = numprobe.PrecisionDebugger(dump_path=str(out), level="L1", task=task)
    try:
        ms_models.train_step(net, x, y, dbg)
    finally:
        dbg.close()
    return rank_dir(pathlib.Path(out) / "step0")


def acc_check(dump, out, *flags, check=True):
    env = dict(os.environ, NUMPROBE_PYTHON=sys.executable, NUMPROBE_PYTHONPATH=PACKAGE_DIR)
    p = subprocess.run([str(CLI), "acc-check", "-api_info", str(dump), "-o", str(out), *flags],
                       capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def results(out):
    (result,) = glob.glob(str(out / "accuracy_checking_result_*.csv"))
    (details,) = glob.glob(str(out / "accuracy_checking_details_*.csv"))
    with open(result, newline="", encoding="utf-8") as f:
        rows = {r["API name"]: r for r in csv.DictReader(f)}
    with open(details, newline="", encoding="utf-8") as f:
        detail_rows = list(csv.DictReader(f))
    return rows, detail_rows


def replayed(rows):
    return {k: r for k, r in rows.items() if r["Forward Test Success"] != "SKIP"}


def test_acc_check_imports_no_torch():
    code = ("import sys, numprobe.acc_check, numprobe.acc_check.ms_cli; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PACKAGE_DIR))
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_a_clean_dump_has_no_error(tmp_path, task):
    rank = capture(tmp_path / "d", task)
    p = acc_check(rank, tmp_path / "acc")
    assert "acc-check (MindSpore)" in p.stdout, p.stdout
    rows, details = results(tmp_path / "acc")
    apis = [k for k in json.loads((rank / "dump.json").read_text())["data"]
            if k.endswith(".forward")]
    assert len(rows) == len(apis)
    ran = replayed(rows)
    print(f"{task}: {len(rows)} APIs, {len(ran)} replayed on MindSpore")
    # Only the primitives are skipped (their construction arguments are not recorded).
    assert all(k.startswith("Primitive.") for k in rows.keys() - ran.keys()), rows
    assert ran and {r["Forward Test Success"] for r in ran.values()} == {"pass"}, \
        {k: r for k, r in ran.items() if r["Forward Test Success"] != "pass"}
    # The backward (mindspore.vjp of the recorded output gradients) of every API that has one.
    assert {r["Backward Test Success"] for r in ran.values()} == {"pass"}, \
        {k: r for k, r in ran.items() if r["Backward Test Success"] != "pass"}
    assert {d["Bench Dtype"] for d in details if d["Status"] != "SKIP"} >= {"Float64"}


def test_offline_finds_an_output_edited_by_half_a_percent(tmp_path):
    rank = capture(tmp_path / "d", "tensor")
    acc_check(rank, tmp_path / "clean", "--offline")
    rows, _ = results(tmp_path / "clean")
    assert {r["Forward Test Success"] for r in replayed(rows).values()} == {"pass"}
    edited = "Functional.gelu.1"
    data = pathlib.Path(json.loads((rank / "dump.json").read_text())["dump_data_dir"])
    f = data / f"{edited}.forward.output.0.npy"
    a = np.load(f)
    np.save(f, (a * 1.005).astype(a.dtype))
    acc_check(rank, tmp_path / "edited", "--offline")
    rows, _ = results(tmp_path / "edited")
    bad = {k for k, r in replayed(rows).items() if r["Forward Test Success"] != "pass"}
    assert bad == {edited}, bad
    assert rows[edited]["Forward Test Success"] == "error"
    assert rows[edited]["Backward Test Success"] == "pass"
    # An input gradient edited the same way: that API's backward is the error.
    edited_bwd = "Tensor.__add__.0"
    f = data / f"{edited_bwd}.backward.output.0.npy"
    a = np.load(f)
    np.save(f, (a * 1.005).astype(a.dtype))
    acc_check(rank, tmp_path / "edited_bwd", "--offline")
    rows, _ = results(tmp_path / "edited_bwd")
    assert rows[edited_bwd]["Forward Test Success"] == "pass"
    assert rows[edited_bwd]["Backward Test Success"] == "error"


def test_bad_input_is_named(tmp_path):
    rank = capture(tmp_path / "d", "statistics")
    p = acc_check(rank, tmp_path / "acc", "--offline", check=False)
    assert p.returncode != 0 and "--offline needs a tensor dump" in p.stderr, p.stderr
    p = acc_check(rank, tmp_path / "acc", "-d", "cuda", check=False)
    assert p.returncode != 0 and "torch replay" in p.stderr, p.stderr
