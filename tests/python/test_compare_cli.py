"""numprobe compare end to end, read back with Python's csv and json modules."""
import csv
import json
import shutil

import pytest


def run_compare(cli, fixtures, tmp_path, kind):
    base = fixtures / "synthetic_edge_cases" / kind
    out = tmp_path / kind
    cli("compare", "-t", base / "npu", "-g", base / "bench", "-o", out)
    # Strict JSON: NaN/Inf never appear as bare tokens in summary.json.
    summary = json.loads((out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    (csv_path,) = out.glob("compare_result_*.csv")
    rows = list(csv.DictReader(csv_path.open(newline="")))
    return summary, rows


@pytest.mark.parametrize("kind", ["tensor", "statistics", "md5"])
def test_synthetic_pair(cli, fixtures, tmp_path, kind):
    summary, rows = run_compare(cli, fixtures, tmp_path, kind)
    assert summary["mode"] == kind
    (pair,) = summary["pairs"]
    assert pair["rows"] == len(rows)
    statuses = [r["Status"] for r in rows]
    assert statuses.count("pass") == pair["pass"]
    assert statuses.count("warning") == pair["warning"]
    assert statuses.count("error") == pair["error"]
    assert statuses.count("unmatched") == pair["unmatched_target"] + pair["unmatched_golden"]
    assert pair["error"] > 0 and pair["pass"] > 0
    # The npu-only API is reported, not dropped; the identical API passes.
    by_name = {r["NPU Name"]: r for r in rows}
    assert by_name["Functional.npu_only.0.forward.output.0"]["Status"] == "unmatched"
    assert by_name["Functional.identical.0.forward.output.0"]["Status"] == "pass"
    first = pair["first_divergence"]
    if kind == "md5":
        # Bitwise mode: the first API whose output bytes differ while its inputs match.
        assert first["entry"] == "Functional.noise_small.0.forward"
    else:
        assert first["entry"] == "Functional.big_error.0.forward"
    assert first["reason"] == "outputs_diverge"
    assert first["direction"] == "forward"
    ev = first["evidence"]
    if kind == "statistics":  # statistics can only say "warning" on the magnitude rule
        assert (ev["status"], ev["code"]) == ("warning", "stats_magnitude")
    else:
        assert ev["status"] == "error" and ev["code"]
    if kind == "md5":
        assert ev["target_md5"] != ev["golden_md5"]
    else:
        assert ev["max"]["diff"] != 0
    if kind == "tensor":
        assert ev["cosine"] < 0.99


def test_statistics_flags_nan_rows_msprobe_misses(cli, fixtures, tmp_path):
    _, rows = run_compare(cli, fixtures, tmp_path, "statistics")
    by_name = {r["NPU Name"]: r for r in rows}
    row = by_name["Functional.nan_diff_pos.0.forward.output.0"]
    assert row["Status"] == "error" and row["Reason"] == "nan_inf_mismatch"


def test_tensor_bench_all_zero_is_an_error(cli, fixtures, tmp_path):
    _, rows = run_compare(cli, fixtures, tmp_path, "tensor")
    by_name = {r["NPU Name"]: r for r in rows}
    row = by_name["Functional.bench_zero.0.forward.output.0"]
    assert row["Status"] == "error", row  # msprobe says "Yes" (bug 3)
    assert row["Reason"] == "one_side_all_zero"


def test_step_to_step_pairs_renumbered_grads(cli, fixtures, tmp_path):
    root = fixtures / "quick_start_resnet50_gpu_mix_statistics"
    out = tmp_path / "resnet"
    cli("compare", "-t", root / "step0", "-g", root / "step1", "-o", out, "-s")
    rows = list(csv.DictReader(next(out.glob("*.csv")).open(newline="")))
    assert len(rows) == 2822
    grads = [r for r in rows if ".parameters_grad." in r["NPU Name"]]
    assert len(grads) == 161 and all(r["Match"] == "renumbered" for r in grads)
    assert all(r["Bench Name"] != "N/A" for r in rows)
    assert rows[0]["NPU_Stack_Info"].startswith("File ")


def test_compare_json_input_and_errors(cli, fixtures, tmp_path):
    base = fixtures / "synthetic_edge_cases" / "md5"
    cfg = tmp_path / "compare.json"
    cfg.write_text(json.dumps({"npu_path": str(base / "npu" / "dump.json"),
                               "bench_path": str(base / "bench" / "dump.json"),
                               "is_print_compare_log": True}))
    cli("compare", "-i", cfg, "-o", tmp_path / "out")
    assert (tmp_path / "out" / "summary.json").exists()
    cfg.write_text(json.dumps({"npu_path": "x", "bogus": 1}))
    p = cli("compare", "-i", cfg, "-o", tmp_path / "out2", check=False)
    assert p.returncode == 1 and "bogus" in p.stderr
    p = cli("compare", "-t", tmp_path / "missing", "-g", base / "bench", "-o", tmp_path / "o3", check=False)
    assert p.returncode == 1 and "missing" in p.stderr
    stats = fixtures / "synthetic_edge_cases" / "statistics" / "bench"
    p = cli("compare", "-t", base / "npu", "-g", stats, "-o", tmp_path / "o4", check=False)
    assert p.returncode == 1 and "md5" in p.stderr


def test_csv_cells_cannot_become_formulas(cli, fixtures, tmp_path):
    src = fixtures / "synthetic_edge_cases" / "statistics" / "npu" / "dump.json"
    data = json.loads(src.read_text())
    entry = data["data"]["Functional.identical.0.forward"]
    evil = "=HYPERLINK(\"http://x\",\"y\").0.forward"
    data["data"] = {evil: entry, "@SUM(A1).0.forward": entry, "-2+3.0.forward": entry}
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "dump.json").write_text(json.dumps(data))
    out = tmp_path / "out"
    cli("compare", "-t", tmp_path / "a", "-g", tmp_path / "b", "-o", out)
    rows = list(csv.DictReader(next(out.glob("*.csv")).open(newline="")))
    names = {r["NPU Name"] for r in rows}
    assert "'" + evil[:-len(".0.forward")] + ".0.forward.input.0" in names
    assert "'@SUM(A1).0.forward.input.0" in names
    assert "'-2+3.0.forward.output.0" in names
    for r in rows:
        for k in ("NPU Name", "Bench Name"):
            assert not r[k].startswith(("=", "+", "@", "-")), r[k]
    # Numbers stay numbers: a negative diff is not quoted away.
    assert all(not r["Min diff"].startswith("'") for r in rows)


@pytest.mark.parametrize("path", [
    "quick_start_resnet50_gpu_mix_statistics/step0",
    "synthetic_edge_cases/tensor/npu",
    "synthetic_edge_cases/md5/npu",
    "cross_framework_ms_vs_pt/pytorch_data",
])
def test_a_dump_against_itself_has_no_divergence(cli, fixtures, tmp_path, path):
    out = tmp_path / "self"
    cli("compare", "-t", fixtures / path, "-g", fixtures / path, "-o", out)
    (pair,) = json.loads((out / "summary.json").read_text())["pairs"]
    assert pair["first_divergence"] is None
    assert pair["error"] == 0 and pair["warning"] == 0
    assert pair["unmatched_target"] == 0 and pair["unmatched_golden"] == 0
    assert pair["pass"] == pair["rows"] > 0


def test_md5_csv_has_msprobes_result_column(cli, fixtures, tmp_path):
    """Scripts written for msprobe's md5 CSVs read its Result column (pass / Different / N/A): it
    is there, equal to msprobe's own on every row msprobe wrote, beside numprobe's Status."""
    _, rows = run_compare(cli, fixtures, tmp_path, "md5")
    header = list(rows[0])
    assert header.index("Result") == header.index("Requires_grad Consistent") + 1
    assert header.index("Status") == header.index("Result") + 1
    golden = fixtures / "golden_compare_outputs_mstt" / "synth_md5" / "compare_result.csv"
    theirs = {r["NPU Name"]: r["Result"] for r in csv.DictReader(golden.open(newline=""))}
    ours = {r["NPU Name"]: r for r in rows if r["NPU Name"] != "N/A"}
    assert set(theirs) <= set(ours)
    # numprobe pairs the shape-mismatched row msprobe leaves alone (N/A): same bytes, another shape.
    assert ours["Functional.shape_mismatch.0.forward.output.0"]["Result"] == "Different"
    assert theirs.pop("Functional.shape_mismatch.0.forward.output.0") == "N/A"
    assert {k: ours[k]["Result"] for k in theirs} == theirs
    assert {"pass", "Different", "N/A"} <= set(theirs.values())
