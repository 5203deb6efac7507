"""MindSpore graph mode (issue 34): level L2 through MindSpore's own kernel dump, converted into
msprobe's layout by the engine (`numprobe convert`, src/convert); the L0 answer in graph mode;
graph-mode L2 against PyNative L1 of the same model through compare. Each capture runs in its own
process (ms_graph_run.py): MindSpore reads MINDSPORE_DUMP_CONFIG once per process."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

import mindspore as ms  # noqa: E402

import ms_models  # noqa: E402
import numprobe  # noqa: E402
from conftest import rank_dir  # noqa: E402
from numprobe.mindspore import NumprobeError  # noqa: E402

RUNNER = pathlib.Path(__file__).with_name("ms_graph_run.py")


def run(out, mode, level, *extra):
    env = dict(os.environ)
    env.pop("MINDSPORE_DUMP_CONFIG", None)
    p = subprocess.run([sys.executable, str(RUNNER), str(out), mode, level, *map(str, extra)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"{RUNNER.name} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def entries(dump_json):
    return list(json.loads(pathlib.Path(dump_json).read_text())["data"])


def summary(cmp_dir):
    return json.loads((pathlib.Path(cmp_dir) / "summary.json").read_text())["pairs"][0]


@pytest.fixture(scope="module")
def graph_runs(tmp_path_factory):
    """Two clean graph-mode L2 captures (task tensor and statistics) and one whose second block's
    ln2 has epsilon 1e-2; a PyNative L1 capture of the same model."""
    base = tmp_path_factory.mktemp("graph")
    runs = {
        "tensor": run(base / "tensor", "graph", "L2", "--task", "tensor"),
        "stats": run(base / "stats", "graph", "L2"),
        "faulty": run(base / "faulty", "graph", "L2", "--eps", "1e-2"),
        "pynative": run(base / "pynative", "pynative", "L1"),
    }
    return base, runs


def test_l2_writes_kernels_in_msprobe_layout(graph_runs, cli):
    base, runs = graph_runs
    rep = runs["tensor"]["report"]
    assert rep["problems"] == [] and rep["ranks"] == 1 and rep["entries"] > 100
    rank = base / "tensor" / "step0" / "rank0"
    names = entries(rank / "dump.json")
    fwd = [n for n in names if n.startswith("Kernel.") and n.endswith(".forward")]
    bwd = [n for n in names if n.startswith("Kernel.") and n.endswith(".backward")]
    assert fwd and bwd, names[:10]
    # Forward kernels come in the model's order: the embedding's MatMul before any LayerNorm.
    assert names.index("Kernel.MatMul.0.forward") < names.index("Kernel.LayerNorm.0.forward")
    assert "Kernel.LayerNormGrad.0.backward" in names
    dump = json.loads((rank / "dump.json").read_text())
    assert dump["framework"] == "mindspore" and dump["level"] == "L2" and dump["task"] == "tensor"
    # A Reshape's output carries the graph's shape (the CPU dump writes the input buffer's).
    reshape = dump["data"]["Kernel.Reshape.0.forward"]
    assert reshape["input_args"][0]["shape"] == [2, 5, 8]
    assert reshape["output"][0]["shape"] == [10, 8]
    assert (rank / "dump_tensor_data" / "Kernel.Reshape.0.forward.output.0.npy").exists()
    kernels = json.loads((rank / "kernels.json").read_text())
    assert kernels["Kernel.MatMul.0.forward"]["kernel"].startswith("Default/MatMul-op")
    # The engine's statistics of the tensor file it kept.
    import numpy as np
    mm = dump["data"]["Kernel.MatMul.0.forward"]["output"][0]
    arr = np.load(rank / "dump_tensor_data" / mm["data_name"])
    assert mm["Max"] == float(arr.max()) and mm["Min"] == float(arr.min())
    assert abs(mm["Norm"] - float(np.linalg.norm(arr.astype(np.float64)))) < 1e-9 * mm["Norm"]
    info = cli("info", base / "tensor").stdout
    assert "level L2" in info and "Kernel" in info


def test_convert_cli_matches_the_debugger(graph_runs, cli, tmp_path):
    base, _ = graph_runs
    out = tmp_path / "converted"
    p = cli("convert", base / "stats" / "mindspore_kernel_dump", "-o", out, "--statistics-only")
    assert "1 rank(s)" in p.stdout
    assert (entries(out / "step0" / "rank0" / "dump.json")
            == entries(base / "stats" / "step0" / "rank0" / "dump.json"))
    # Never over an earlier conversion.
    again = cli("convert", base / "stats" / "mindspore_kernel_dump", "-o", out, check=False)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_two_graph_runs_compare_clean(graph_runs, cli, tmp_path):
    base, _ = graph_runs
    cli("compare", "-t", base / "stats" / "step0", "-g", base / "tensor" / "step0", "-o", tmp_path)
    s = summary(tmp_path)
    assert s["first_divergence"] is None and s["error"] == 0
    assert s["unmatched_target"] == 0 and s["unmatched_golden"] == 0 and s["matched"] > 500


def test_graph_against_pynative(graph_runs, cli, tmp_path):
    """Graph-mode kernels (L2) against the PyNative APIs (L1) of the same model: forward kernels
    pair with the primitives and functions they ran for, and nothing diverges; a wrong LayerNorm
    epsilon in the graph run is named at its kernel."""
    base, runs = graph_runs
    assert runs["pynative"]["losses"] == runs["stats"]["losses"]  # the same computation
    pyn = rank_dir(base / "pynative" / "step0")
    clean = tmp_path / "clean"
    cli("compare", "-t", base / "stats" / "step0", "-g", pyn, "-o", clean)
    s = summary(clean)
    print(f"graph L2 vs PyNative L1: {s['rows']} rows, {s['matched']} paired, "
          f"{s['unmatched_target']} kernel rows and {s['unmatched_golden']} API rows unpaired")
    assert s["first_divergence"] is None and s["suspects"] == []
    assert s["error"] == 0 and s["warning"] == 0 and s["matched"] >= 100
    faulty = tmp_path / "faulty"
    cli("compare", "-t", base / "faulty" / "step0", "-g", pyn, "-o", faulty, check=False)
    fd = summary(faulty)["first_divergence"]
    assert fd is not None and fd["entry"] == "Kernel.LayerNorm.3.forward", fd


def test_l2_config_set_too_late_is_named(tmp_path):
    r = run(tmp_path / "late", "graph", "L2", "--late")
    assert "MindSpore wrote no kernel data" in r["error"]
    assert "before the first graph-mode step" in r["error"]


def test_l2_refuses_a_second_dump_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDSPORE_DUMP_CONFIG", str(tmp_path / "elsewhere.json"))
    with pytest.raises(NumprobeError, match="once per"):
        numprobe.PrecisionDebugger(dump_path=str(tmp_path / "d"), level="L2",
                                   framework="mindspore")


def test_l2_never_writes_over_a_mindspore_dump(tmp_path, monkeypatch):
    monkeypatch.delenv("MINDSPORE_DUMP_CONFIG", raising=False)
    raw = tmp_path / "d" / "mindspore_kernel_dump" / "rank_0"
    raw.mkdir(parents=True)
    with pytest.raises(NumprobeError, match="already holds a MindSpore dump"):
        numprobe.PrecisionDebugger(dump_path=str(tmp_path / "d"), level="L2",
                                   framework="mindspore")
    assert "MINDSPORE_DUMP_CONFIG" not in os.environ


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_cells_and_apis_in_graph_mode_say_what_to_use(tmp_path, level):
    net, _, _ = ms_models.make()
    dbg = numprobe.PrecisionDebugger(dump_path=str(tmp_path), level=level, model=net)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(NumprobeError, match="TensorDump") as e:
            dbg.start(net)
        assert "level L2" in str(e.value) and "PYNATIVE_MODE" in str(e.value)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
        dbg.close()


def test_convert_names_the_problems_of_an_incomplete_dump(graph_runs, cli, tmp_path):
    base, _ = graph_runs
    raw = tmp_path / "raw"
    shutil.copytree(base / "stats" / "mindspore_kernel_dump", raw)
    rank = raw / "rank_0"
    shutil.rmtree(rank / "execution_order")
    it = sorted((rank / "Net" / "0" / "0").iterdir())
    (rank / "Net" / "0" / "0" / "stray.bin").write_bytes(b"x")
    before = {p: p.stat().st_mtime_ns for p in raw.rglob("*")}
    p = cli("convert", raw, "-o", tmp_path / "out", check=False)
    assert p.returncode == 2, p.stderr
    assert "execution_order: missing" in p.stderr
    assert "stray.bin: unknown file name pattern" in p.stderr
    assert len(entries(tmp_path / "out" / "step0" / "rank0" / "dump.json")) > 100
    assert {p: p.stat().st_mtime_ns for p in raw.rglob("*")} == before  # input untouched
    assert it  # the iteration had files
