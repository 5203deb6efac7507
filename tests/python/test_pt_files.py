"""torch.save (.pt) data files, as msprobe's PyTorch tensor dumps write them, read without torch
by the C++ engine: `numprobe stats` against numpy, and a tensor-mode compare of .pt dumps against
the same compare over .npy files."""
import csv
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def stats_json(cli, path):
    return json.loads(cli("stats", "--json", path).stdout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool])
def test_stats_of_pt_match_numpy(cli, tmp_path, dtype):
    g = torch.Generator().manual_seed(7)
    base = (torch.randn(5, 6, 7, generator=g) * 10)
    views = {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "sliced": base[1:4, ::2, 3:],
        "zero_dim": base[2, 3, 4],
        "parameter": torch.nn.Parameter(base.clone()),
    }
    for name, t in views.items():
        t = t.detach().to(dtype) if dtype != torch.bool else (t.detach() > 0)
        if name == "parameter" and (dtype.is_floating_point):
            t = torch.nn.Parameter(t)
        path = tmp_path / f"{name}.pt"
        torch.save(t, path)
        got = stats_json(cli, path)
        ref = t.detach().to(torch.float64).numpy()
        assert got["shape"] == list(t.shape), name
        assert got["count"] == ref.size
        assert got["max"] == pytest.approx(float(ref.max()), rel=1e-12), name
        assert got["min"] == pytest.approx(float(ref.min()), rel=1e-12), name
        assert got["mean"] == pytest.approx(float(ref.mean()), rel=1e-9, abs=1e-12), name
        assert got["norm"] == pytest.approx(float(np.sqrt((ref * ref).sum())), rel=1e-9), name


def test_bad_pt_files_name_the_file(cli, tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.ones(3), legacy, _use_new_zipfile_serialization=False)
    p = cli("stats", legacy, check=False)
    assert p.returncode == 1 and "legacy.pt" in p.stderr and "legacy" in p.stderr
    other = tmp_path / "dict.pt"
    torch.save({"a": torch.ones(2)}, other)
    p = cli("stats", other, check=False)
    assert p.returncode == 1 and "dict.pt" in p.stderr and "not a tensor" in p.stderr


def npy_dump_as_pt(src, dst):
    """The synthetic tensor dump with every .npy data file re-saved by torch.save as .pt."""
    shutil.copytree(src, dst)
    data = dst / "dump_tensor_data"
    for f in sorted(data.glob("*.npy")):
        t = torch.from_numpy(np.load(f))
        torch.save(t, f.with_suffix(".pt"))
        f.unlink()
    text = (dst / "dump.json").read_text().replace(".npy\"", ".pt\"")
    (dst / "dump.json").write_text(text)


def read_rows(out):
    (path,) = out.glob("compare_result_*.csv")
    return list(csv.DictReader(path.open(newline="")))


def test_compare_of_pt_dumps_equals_npy_dumps(cli, fixtures, tmp_path):
    base = fixtures / "synthetic_edge_cases" / "tensor"
    for side in ("npu", "bench"):
        npy_dump_as_pt(base / side, tmp_path / side)
    cli("compare", "-t", base / "npu", "-g", base / "bench", "-o", tmp_path / "out_npy")
    cli("compare", "-t", tmp_path / "npu", "-g", tmp_path / "bench", "-o", tmp_path / "out_pt")
    npy_rows, pt_rows = read_rows(tmp_path / "out_npy"), read_rows(tmp_path / "out_pt")
    assert len(npy_rows) == len(pt_rows) > 0
    for a, b in zip(npy_rows, pt_rows):
        for k in a:
            if k == "Data_name":
                assert a[k].replace(".npy", ".pt") == b[k]
            else:
                assert a[k] == b[k], (a["NPU Name"], k)
    assert not any("data_unreadable" in r["Reason"] for r in pt_rows)
    s = json.loads((tmp_path / "out_pt" / "summary.json").read_text())
    assert s["pairs"][0]["first_divergence"]["entry"] == "Functional.big_error.0.forward"


def hostile_pt(path, pickle_bytes):
    """A torch.save-shaped archive (stored records) around a hand-written data.pkl."""
    import zipfile
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/data/0", b"\0" * 16)


def test_pickled_code_is_never_run(cli, tmp_path):
    marker = tmp_path / "pwned"
    # What torch.load would execute: os.system("touch <marker>").
    cmd = f"touch {marker}".encode()
    pkl = b"\x80\x02cos\nsystem\nq\x00X" + len(cmd).to_bytes(4, "little") + cmd + b"\x85R."
    path = tmp_path / "evil.pt"
    hostile_pt(path, pkl)
    p = cli("stats", path, check=False)
    assert p.returncode == 1 and "unsupported object os.system" in p.stderr
    assert not marker.exists()


def test_shared_list_growth_is_budgeted(cli, tmp_path):
    # A list memoized and also held by a tuple is copied before an APPEND (the tuple keeps what it
    # held): put into a new tuple before each of 20k appends, that would be quadratic; the copy
    # budget stops it.
    pkl = b"\x80\x02]q\x00" + b"(h\x00th\x00K\x01a" * 20000 + b"."
    path = tmp_path / "shared.pt"
    hostile_pt(path, pkl)
    p = cli("stats", path, check=False)
    assert p.returncode == 1 and "too many container items" in p.stderr


def test_shared_containers_do_not_explode(cli, tmp_path):
    # Each level a tuple holding the level below twice: 30 levels are 2^30 leaves for a walk that
    # follows every reference. ckpt-compare walks state dicts within a budget of visits.
    pkl = b"\x80\x02K\x01q\x00" + b"h\x00h\x00\x86q\x00" * 30 + b"}q\x01X\x01\x00\x00\x00wh\x00s."
    hostile_pt(tmp_path / "a.pt", pkl)
    import subprocess
    from conftest import CLI
    p = subprocess.run([str(CLI), "ckpt-compare", str(tmp_path / "a.pt"), str(tmp_path / "a.pt"),
                        "-o", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "too many objects" in p.stderr


def test_long_append_chains_fail_fast(cli, tmp_path):
    # 300k APPENDs to one list: quadratic for a naive reader. The subprocess timeout only guards
    # against a hang; the reader grows a list held only by the stack and the memo in place (a
    # shared one is copied, within a budget), so it reads to the end and finds no tensor.
    pkl = b"\x80\x02]" + b"K\x01a" * 300000 + b"."
    path = tmp_path / "long.pt"
    hostile_pt(path, pkl)
    import subprocess
    from conftest import CLI
    p = subprocess.run([str(CLI), "stats", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "the saved object is a tuple/list, not a tensor" in p.stderr
