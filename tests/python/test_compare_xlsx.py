"""numprobe compare --xlsx: the workbook holds the CSV's table cell for cell, rows coloured as
msprobe's compare colours them (golden_compare_outputs_mstt records the colour per row in
`_row_fill`), with msprobe's bugs fixed where the two differ. Read back with openpyxl."""
import csv
import json
import re
import zipfile

import pytest

openpyxl = pytest.importorskip("openpyxl")

GOLDEN = "golden_compare_outputs_mstt"
RED, YELLOW = "FFFF0000", "FFFFFF00"
# Columns that hold metrics and statistics: plain numbers there are numbers in the workbook.
METRIC_COLUMNS = {
    "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio", "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "NPU max", "NPU min", "NPU mean",
    "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm",
}
PLAIN_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def compare(cli, out, target, golden, *extra):
    cli("compare", "--xlsx", "-t", target, "-g", golden, "-o", out, *extra)
    (csv_path,) = out.glob("compare_result_*.csv")
    xlsx_path = csv_path.with_suffix(".xlsx")
    assert xlsx_path.exists()
    with csv_path.open(newline="") as f:
        table = list(csv.reader(f))
    return table, xlsx_path


def colour(cell):
    if cell.fill is None or cell.fill.fill_type != "solid":
        return ""
    return {RED: "red", YELLOW: "yellow"}[cell.fill.fgColor.rgb]


def read_xlsx(path):
    """(sheet names, header of each sheet, data rows of all sheets in order as cell lists)."""
    wb = openpyxl.load_workbook(path, read_only=True)
    names, headers, rows = wb.sheetnames, [], []
    for ws in wb.worksheets:
        sheet_rows = list(ws.iter_rows())
        headers.append([c.value for c in sheet_rows[0]])
        rows.extend(sheet_rows[1:])
    return names, headers, rows


def assert_same_table(table, xlsx_path):
    header, body = table[0], table[1:]
    names, headers, rows = read_xlsx(xlsx_path)
    assert names[0] == "result"
    assert all(h == header for h in headers)
    assert len(rows) == len(body)
    numbers = 0
    for r, (want_row, got_row) in enumerate(zip(body, rows)):
        got = [c.value for c in got_row] + [None] * (len(header) - len(got_row))
        assert len(got) == len(header), r
        for col, want, value in zip(header, want_row, got):
            where = f"row {r + 2} {col}: {want!r} vs {value!r}"
            if value is None:
                assert want == "", where  # an empty text is a blank cell
            elif isinstance(value, str):
                assert value == want, where
                assert not (col in METRIC_COLUMNS and PLAIN_NUMBER.fullmatch(want)), where
            else:  # libxlsxwriter writes numbers with 16 significant digits ("%.16G")
                numbers += 1
                assert col in METRIC_COLUMNS and PLAIN_NUMBER.fullmatch(want), where
                assert value == float("%.16G" % float(want)), where
    return rows, numbers


def fills(table, rows):
    name = table[0].index("NPU Name")
    return [(r[name], colour(x[0])) for r, x in zip(table[1:], rows)]


def golden_fills(fixtures, kind):
    with (fixtures / GOLDEN / kind / "compare_result.csv").open(newline="") as f:
        return {r["NPU Name"]: r["_row_fill"] for r in csv.DictReader(f)}


def assert_colours_follow_msprobe(ours, golden, differences):
    """Every row has msprobe's colour except the named differences (msprobe bugs fixed)."""
    got = {}
    for name, c in ours:
        if name == "N/A":  # golden-only rows: msprobe drops them; unmatched, so yellow
            assert c == "yellow"
            continue
        got[name] = c
    assert set(got) == set(golden)
    want = {**golden, **differences}
    assert {n: c for n, c in got.items() if c != want[n]} == {}
    assert all(golden[n] != got[n] for n in differences)  # each named difference is real


@pytest.mark.parametrize("kind", ["statistics", "tensor", "md5"])
def test_synthetic_pair(cli, fixtures, tmp_path, kind):
    base = fixtures / "synthetic_edge_cases" / kind
    table, xlsx = compare(cli, tmp_path, base / "npu", base / "bench")
    rows, numbers = assert_same_table(table, xlsx)
    assert (numbers > 0) == (kind != "md5")
    ours = fills(table, rows)
    by_name = dict(ours)
    differences = {}
    if kind != "md5":
        # msprobe bug 2: NaN statistics never turn a row red ("Nan" is not "nan"). Both rows hold
        # a NaN NPU max; nan_same_pos's NaNs are where the bench has them, still red as for inf.
        differences["Functional.nan_same_pos.0.forward.output.0"] = "red"
        differences["Functional.nan_diff_pos.0.forward.output.0"] = "red"
        # msprobe unmatched the shape-mismatched rows, so their requires_grad "differed" (N/A);
        # numprobe keeps the pair (and calls it an error in Status).
        differences["Functional.shape_mismatch.0.forward.output.0"] = ""
        assert by_name["Functional.npu_overflow.0.forward.output.0"] == "red"
        assert by_name["Functional.npu_only.0.forward.output.0"] == "yellow"
        assert by_name["Functional.identical.0.forward.output.0"] == ""
    if kind == "tensor":
        # msprobe bug 5: a uniform 1.001 scaling fails its strict 0.1 % test (ratio 0, red).
        differences["Functional.noise_small.0.backward.output.0"] = ""
        assert by_name["Functional.big_error.0.forward.output.0"] == "red"  # ratio 1 -> 0
        assert by_name["Functional.bench_zero.0.forward.output.0"] == "red"
    if kind == "statistics":
        # Output MaxRelativeErr 1.3 % (its Min is 108 % off, which no rule reads): not coloured,
        # as in msprobe. Its Status says warning.
        assert by_name["Functional.big_error.0.forward.output.0"] == ""
        assert by_name["Functional.scalar_0d.0.forward.output.0"] == "yellow"  # 20 %, input 0 %
    if kind == "md5":
        assert {c for _, c in ours} == {""}  # msprobe colours nothing in md5 mode
    assert_colours_follow_msprobe(ours, golden_fills(fixtures, f"synth_{kind}"), differences)


def test_resnet_step_to_step_colours_match_msprobe(cli, fixtures, tmp_path):
    root = fixtures / "quick_start_resnet50_gpu_mix_statistics"
    table, xlsx = compare(cli, tmp_path, root / "step0", root / "step1", "-s")
    assert len(table) == 2823
    rows, _ = assert_same_table(table, xlsx)  # NPU_Stack_Info: multi-line strings
    ours = fills(table, rows)
    golden = golden_fills(fixtures, "quickstart_step0_vs_step1_summary")
    # msprobe bug 4 leaves the 161 parameters_grad rows unmatched, hence yellow (requires_grad
    # N/A); numprobe pairs them and they are clean.
    grads = {n: "" for n, _ in ours if ".parameters_grad." in n}
    assert len(grads) == 161 and all(golden[n] == "yellow" for n in grads)
    assert_colours_follow_msprobe(ours, golden, grads)
    counts = {c: sum(1 for _, x in ours if x == c) for c in ("red", "yellow")}
    assert counts == {"red": 14, "yellow": 160}


def test_without_the_flag_no_workbook(cli, fixtures, tmp_path):
    base = fixtures / "synthetic_edge_cases" / "md5"
    cli("compare", "-t", base / "npu", "-g", base / "bench", "-o", tmp_path)
    assert list(tmp_path.glob("*.xlsx")) == []


def test_cells_cannot_become_formulas(cli, fixtures, tmp_path):
    src = fixtures / "synthetic_edge_cases" / "statistics" / "npu" / "dump.json"
    data = json.loads(src.read_text())
    entry = data["data"]["Functional.identical.0.forward"]
    evil = ["=1+1", "@SUM(A1)", "-2+3", "+cmd|' /C calc'!A0", "\uff1dHYPERLINK(\"http://x\")"]
    data["data"] = {e + ".0.forward": entry for e in evil}
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "dump.json").write_text(json.dumps(data))
    table, xlsx = compare(cli, tmp_path / "out", tmp_path / "a", tmp_path / "b")
    assert_same_table(table, xlsx)
    wb = openpyxl.load_workbook(xlsx)  # not read-only: formulas would show as data_type "f"
    names = {}
    for row in wb["result"].iter_rows(min_row=2):
        assert all(c.data_type in ("s", "n") for c in row)
        names[row[0].value] = row[0].data_type
    for e in evil:
        assert names["'" + e + ".0.forward.input.0"] == "s"
    with zipfile.ZipFile(xlsx) as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in sheet and "<f " not in sheet
