"""msprobe itself (mindstudio-probe, installed in the MindSpore lane) reads numprobe's MindSpore
dumps: its MindSpore compare pairs every row of two of numprobe's mix dumps, passes a clean pair,
and flags the run whose LayerNorm epsilon differs. msprobe's own MindSpore dump cannot run on the CPU
(its statistics call `mint` norm), so this is the live check of the format there is."""
import csv
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

from conftest import live  # noqa: E402
from test_ms_capture import capture  # noqa: E402


def msprobe_compare(target, golden, out):
    exe = pathlib.Path(sys.executable).parent / "msprobe"
    p = subprocess.run([str(exe), "compare", "-tp", str(target / "dump.json"), "-gp",
                        str(golden / "dump.json"), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    (result,) = pathlib.Path(out).glob("compare_result_*.csv")
    with open(result, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_msprobe_compares_numprobe_mindspore_dumps(tmp_path):
    live("msprobe")
    _, _, a = capture(tmp_path / "a", "mix")
    _, _, b = capture(tmp_path / "b", "mix")
    rows = msprobe_compare(b, a, tmp_path / "same")
    assert rows and all(r["Bench Name"] != "N/A" for r in rows)
    assert {r["Result"] for r in rows} == {"pass"}, {r["Result"] for r in rows}
    # Every tensor of every entry is a row of msprobe's (inputs, outputs, parameter gradients).
    names = {r["NPU Name"].split(".input")[0].split(".output")[0] for r in rows}
    assert any(".parameters_grad" in n for n in names) and any(".backward" in n for n in names)
    _, _, bad = capture(tmp_path / "bad", "mix", faulty_eps=1e-2)
    rows = msprobe_compare(bad, a, tmp_path / "bad_cmp")
    assert all(r["Bench Name"] != "N/A" for r in rows)
    flagged = [r["NPU Name"] for r in rows if r["Result"] != "pass"]
    assert flagged, "msprobe saw no difference"
