import csv
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = (ROOT / ".." / "shared" / "fixtures" / "msprobe").resolve()
# One suite, two lanes: `make test-python` runs it with Debian's torch against build/ and python/;
# `make test-torch2` with pip's torch against build-torch2/ and its own package tree (two builds
# cannot share python/numprobe/_C*.so). These variables say which build the tests exercise.
BUILD = pathlib.Path(os.environ.get("NUMPROBE_BUILD_DIR", ROOT / "build"))
PYDIR = pathlib.Path(os.environ.get("NUMPROBE_PYTHONPATH", ROOT / "python"))
CLI = pathlib.Path(os.environ.get("NUMPROBE_CLI", BUILD / "bin" / "numprobe"))


@pytest.fixture(scope="session")
def cli():
    if not CLI.exists():
        pytest.fail(f"{CLI} not built: run `make build` first")

    def run(*args, check=True):
        p = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"numprobe {' '.join(map(str, args))} failed "
                                 f"({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def fixtures():
    return FIXTURES


def live(module):
    """Imports a live second reader (msprobe, TensorBoard, transformers, ...): skipped where it is not
    installed (Debian's torch 1.13 lane), a failure in the lane that promises it (NUMPROBE_REQUIRE_LIVE,
    set by `make test-torch2`), so a broken install can never pass as a skip."""
    if os.environ.get("NUMPROBE_REQUIRE_LIVE"):
        import importlib
        try:
            return importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - any import failure is the finding
            pytest.fail(f"live reader {module} not importable in this lane: {e!r}")
    return pytest.importorskip(module)


def rank_dir(step_dir):
    """The one rank directory a single-process capture wrote in step_dir: `proc{pid}`, as msprobe names
    a process without a distributed rank (`rank{N}` where there is one)."""
    dirs = [d for d in pathlib.Path(step_dir).iterdir() if d.is_dir()]
    assert len(dirs) == 1, f"{step_dir}: expected one rank directory, found {sorted(d.name for d in dirs)}"
    return dirs[0]


def read_csv(path):
    """The rows of a CSV file with a header, as dicts."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def suite_capture(out, model, steps, fault="", env=None, **opts):
    """One capture of bench/diagnosis's suite (run_one.py, its own process); `opts` are run_one's
    options (True for a flag), `env` extra environment (a CPU generation)."""
    import sys
    cmd = [sys.executable, str(ROOT / "bench" / "diagnosis" / "run_one.py"), "--model", model,
           "--out", str(out), "--steps", str(steps), "--fault", fault]
    for k, v in opts.items():
        cmd += [f"--{k}"] if v is True else [f"--{k}", str(v)]
    p = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(PYDIR), **(env or {})),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def compare_summary(target, golden, out):
    """`numprobe compare` that must succeed: (summary.json, the terminal report)."""
    p = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads((pathlib.Path(out) / "summary.json").read_text()), p.stdout


def numprobe_compare(target, golden, out):
    """`numprobe compare -t target -g golden -o out` of one rank pair: (CSV rows, summary.json)."""
    p = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    (csv_path,) = pathlib.Path(out).glob("compare_result_*.csv")
    return read_csv(csv_path), json.loads((pathlib.Path(out) / "summary.json").read_text())


# Rows numprobe records that msprobe does not (docs/capture.md, "Differences from msprobe"): parameter
# gradients of modules whose forward never runs (nn.MultiheadAttention's out_proj) ...
NUMPROBE_ONLY_ROWS = (re.compile(r"^Module\..*\.out_proj\.\w*Linear\.parameters_grad\.\d+\."),)
# ... and, against an msprobe dump made on torch 1.13, module backward entries (msprobe writes those
# on torch >= 2 only).
NUMPROBE_ONLY_ROWS_TORCH1 = NUMPROBE_ONLY_ROWS + (re.compile(r"^Module\..*\.backward\.\d+\."),)


def assert_pairs_row_for_row(np_dump, ms_dump, out, numprobe_only=NUMPROBE_ONLY_ROWS,
                             same_computation=True):
    """An msprobe dump and a numprobe dump of one computation, compared both ways: every msprobe row
    paired, no error, no first divergence; numprobe's own extra rows only of the documented kinds.
    same_computation=False where one tool's hooks changed what was computed: rows must still pair.
    numprobe_only=None: numprobe's extra rows are not checked.
    Returns the number of paired rows."""
    out = pathlib.Path(out)
    for target, golden, ms_col, np_col in ((np_dump, ms_dump, "Bench Name", "NPU Name"),
                                           (ms_dump, np_dump, "NPU Name", "Bench Name")):
        rows, summary = numprobe_compare(target, golden, out / ms_col.split()[0].lower())
        (pair,) = summary["pairs"]
        if same_computation:
            assert pair["error"] == 0, [(r["NPU Name"], r["Reason"]) for r in rows
                                        if r["Status"] == "error"]
            assert pair["first_divergence"] is None, pair["first_divergence"]
        unpaired_ms = [r[ms_col] for r in rows if r[ms_col] != "N/A" and r[np_col] == "N/A"]
        assert not unpaired_ms, f"msprobe rows without a numprobe partner: {unpaired_ms[:8]}"
        if numprobe_only is not None:
            extra = [r[np_col] for r in rows if r[np_col] != "N/A" and r[ms_col] == "N/A"]
            unexplained = [n for n in extra if not any(p.match(n) for p in numprobe_only)]
            assert not unexplained, f"numprobe rows msprobe does not have: {unexplained[:8]}"
    return pair["matched"]
