"""Python's json module as the second reader of everything numprobe writes and reports."""
import json
import math
import pathlib

import numpy as np
import pytest


def dumps(fixtures):
    return sorted(p for p in fixtures.rglob("dump.json") if "malformed" not in str(p))


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def count_tensors(v):
    if isinstance(v, dict):
        if isinstance(v.get("dtype"), str) and isinstance(v.get("shape"), list):
            return 1
        return sum(count_tensors(x) for x in v.values())
    if isinstance(v, list):
        return sum(count_tensors(x) for x in v)
    return 0


def test_info_counts_match_python(cli, fixtures):
    for path in dumps(fixtures):
        ref = json.loads(path.read_text())
        info = json.loads(cli("info", "--json", path).stdout)
        (d,) = info["dumps"]
        assert d["entries"] == len(ref["data"]), path
        assert d["tensors"] == count_tensors(ref["data"]), path
        assert d["task"] == ref.get("task", ""), path


def test_rewrite_is_identical_for_python(cli, fixtures, tmp_path):
    for i, path in enumerate(dumps(fixtures)):
        out = tmp_path / str(i)
        cli("rewrite", path.parent, "-o", out)
        ref = json.loads(path.read_text())
        got = json.loads((out / "dump.json").read_text())
        assert same(got, ref), path
        for side in ("stack.json", "construct.json"):
            if (path.parent / side).exists():
                assert (out / side).exists(), (path, side)
                got_side = json.loads((out / side).read_text())
                if side == "construct.json":
                    assert same(got_side, json.loads((path.parent / side).read_text())), path


def test_rewritten_tensors_load_in_numpy(cli, fixtures, tmp_path):
    src = fixtures / "synthetic_edge_cases" / "tensor" / "npu"
    cli("rewrite", src, "-o", tmp_path)
    files = sorted((src / "dump_tensor_data").glob("*.npy"))
    assert files
    for f in files:
        a = np.load(f)
        b = np.load(tmp_path / "dump_tensor_data" / f.name)
        assert a.dtype == b.dtype and a.shape == b.shape, f.name
        assert a.tobytes() == b.tobytes(), f.name


def test_info_reports_malformed_files_clearly(cli, fixtures):
    for path in sorted((fixtures / "malformed_dump_json").glob("*.json")):
        p = cli("info", path, check=False)
        assert p.returncode == 1, path
        assert path.name in p.stderr, p.stderr
        assert "error:" in p.stderr


def test_rewrite_keeps_megatron_construct_lists(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "dump.json").write_text(json.dumps({"task": "statistics", "data": {}}))
    construct = {"Module.a.A.forward.0": ["Module.m.M.forward.0", 3], "b": None, "c": [], "d": ""}
    (src / "construct.json").write_text(json.dumps(construct))
    (src / "stack.json").write_text("{}")
    cli("rewrite", src, "-o", tmp_path / "out")
    assert json.loads((tmp_path / "out" / "construct.json").read_text()) == construct
