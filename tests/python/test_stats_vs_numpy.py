"""numprobe stats against numpy's float64 computation and zlib's CRC-32 (numpy as second reader)."""
import json
import math
import zlib

import numpy as np
import pytest

DTYPES = ["float64", "float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


def reference(a):
    flat = a.reshape(-1, order="A")
    f = flat.astype(np.float64)
    finite_or_inf = f[~np.isnan(f)]
    return {
        "count": flat.size,
        "min": float(finite_or_inf.min()) if finite_or_inf.size else math.nan,
        "max": float(finite_or_inf.max()) if finite_or_inf.size else math.nan,
        "sum": float(np.sum(f)) if f.size else 0.0,
        "norm": float(np.sqrt(np.sum(f * f))) if f.size else 0.0,
        "nan": int(np.isnan(f).sum()),
        "pos_inf": int(np.isposinf(f).sum()),
        "neg_inf": int(np.isneginf(f).sum()),
        "zeros": int((f == 0).sum()),
        "crc32": "%08x" % zlib.crc32(a.tobytes(order="A")),
    }


def close(a, b, rel=1e-12):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def make(dtype, rng, shape):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        a = (rng.standard_normal(shape) * 3).astype(dtype)
        flat = a.reshape(-1)
        if flat.size > 8:
            flat[1], flat[3], flat[5], flat[7] = np.nan, np.inf, -np.inf, 0
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (), (7,), (33, 17), (3, 5, 129)])
def test_stats_match_numpy(cli, tmp_path, dtype, shape):
    rng = np.random.default_rng([DTYPES.index(dtype), len(shape), *shape])  # reproducible
    a = make(dtype, rng, shape)
    path = tmp_path / f"t_{dtype}.npy"
    np.save(path, a)
    out = json.loads(cli("stats", "--json", path).stdout)
    ref = reference(a)
    assert out["dtype"] == dtype
    assert out["shape"] == list(shape)
    for k in ("count", "nan", "pos_inf", "neg_inf", "zeros", "crc32"):
        assert out[k] == ref[k], k
    for k in ("min", "max", "sum", "norm"):
        assert close(out[k], ref[k]), (k, out[k], ref[k])


def test_fortran_order_and_large_multithreaded(cli, tmp_path):
    rng = np.random.default_rng(5)
    a = np.asfortranarray(rng.standard_normal((2500, 2100)).astype(np.float32))  # 5.25M: threaded
    path = tmp_path / "f.npy"
    np.save(path, a)
    out = json.loads(cli("stats", "--json", "-j", "2", path).stdout)
    ref = reference(a)
    assert out["crc32"] == ref["crc32"]
    assert out["count"] == a.size
    for k in ("min", "max", "sum", "norm"):
        assert close(out[k], ref[k], 1e-9), k


def test_stats_errors_name_the_file(cli, tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
    p = cli("stats", bad, check=False)
    assert p.returncode == 1
    assert "bad.npy" in p.stderr
    missing = cli("stats", tmp_path / "missing.npy", check=False)
    assert missing.returncode == 1 and "missing.npy" in missing.stderr
