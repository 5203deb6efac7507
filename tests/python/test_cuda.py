"""Capture and acc-check on a CUDA device. Skipped where torch sees no GPU (CI has none); run on a
GPU machine with the same `python -m pytest tests/python`."""
import json
import os
import sys
import zlib

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples" / "python"))
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
# cuBLAS reads this when its handle is made (the first matmul), which no test has done yet.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numprobe  # noqa: E402
import tiny_models as tm  # noqa: E402
from test_capture import (iter_leaves, load, relu_in_md5_mode,  # noqa: E402
                          statistics_match_saved_tensors)

CUDA = torch.device("cuda")


def gpt_on_cuda():
    model = tm.make_gpt().to(CUDA)
    idx, target = tm.gpt_batch()
    return model, (idx.to(CUDA), target.to(CUDA))


def captured_step(root, level, task="statistics", **kw):
    model, batch = gpt_on_cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=root, level=level, task=task, **kw)
    dbg.start(model)
    loss = tm.gpt_step(model, opt, batch)
    dbg.stop()
    dbg.step()
    dbg.close()
    return model, loss


@pytest.mark.parametrize("level", ["L0", "L1", "mix", "L2"])
def test_levels_capture_forward_and_backward_on_cuda(tmp_path, level):
    captured_step(tmp_path, level)
    d = load(tmp_path / "step0" / "rank")
    names = list(d["data"])
    assert any(".forward" in n for n in names), names[:5]
    # backward runs on autograd's CUDA device thread, not the thread that called start()
    assert any(".backward" in n for n in names), names[-5:]
    leaves = [leaf for e in d["data"].values() for leaf in iter_leaves(e)]
    assert leaves and all(leaf["Max"] is not None for leaf in leaves if leaf["shape"] != [0])


def test_statistics_and_tensors_equal_numpy_on_cuda(tmp_path):
    captured_step(tmp_path, "L1", task="tensor")
    rank = tmp_path / "step0" / "rank"
    assert statistics_match_saved_tensors(rank, rel=1e-5, abs_mean=1e-6) > 100


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_md5_and_stats_of_cuda_tensors_of_each_dtype(tmp_path, dtype):
    x = torch.randn(33, 17, device=CUDA).to(dtype)
    x[3, 4] = float("nan")
    x[5, 6] = float("inf")
    e, _ = relu_in_md5_mode(tmp_path, x)
    host = x.cpu()
    raw = host.view(torch.int16).numpy() if dtype == torch.bfloat16 else host.numpy()
    assert e["input_args"][0]["md5"] == "%08x" % zlib.crc32(raw.tobytes())
    assert e["input_args"][0]["dtype"] == str(dtype)

    # statistics of the CUDA tensor are those of the same tensor captured on the CPU
    leaves = {}
    for where, t in (("cuda", x), ("cpu", x.cpu())):
        dbg = numprobe.PrecisionDebugger(dump_path=tmp_path / where, level="L1")
        dbg.start()
        torch.nn.functional.relu(t)
        dbg.stop()
        dbg.close()
        e = load(tmp_path / where / "step0" / "rank")["data"]["Functional.relu.0.forward"]
        leaves[where] = e["input_args"][0], e["output"][0]
    for dev, cpu in zip(leaves["cuda"], leaves["cpu"]):
        for k, v in cpu.items():
            if k in ("Mean", "Norm") and isinstance(v, float):
                assert dev[k] == pytest.approx(v, rel=1e-5, nan_ok=True), (k, dev, cpu)
            elif isinstance(v, float) and np.isnan(v):
                assert np.isnan(dev[k]), (k, dev, cpu)
            else:
                assert dev[k] == v, (k, dev, cpu)


def test_observer_effect_is_zero_on_cuda(tmp_path):
    torch.use_deterministic_algorithms(True)
    try:
        def reference():
            model, batch = gpt_on_cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            return model, tm.gpt_step(model, opt, batch)
        ref_model, ref_loss = reference()
        again_model, again_loss = reference()
        assert torch.equal(ref_loss, again_loss)  # the uncaptured step is itself deterministic
        for level in ("L1", "mix", "L2"):
            model, loss = captured_step(tmp_path / level, level)
            assert torch.equal(loss, ref_loss), level
            for (n, p), q in zip(model.named_parameters(), ref_model.parameters()):
                assert torch.equal(p, q), (level, n)
    finally:
        torch.use_deterministic_algorithms(False)


def test_acc_check_replays_a_cuda_dump_on_cuda(tmp_path, cli):
    captured_step(tmp_path / "dump", "L1", task="tensor")
    dump_json = tmp_path / "dump" / "step0" / "rank" / "dump.json"
    entries = json.loads(dump_json.read_text())["data"]
    forward = [k[: -len(".forward")] for k in entries if k.endswith(".forward")]
    for mode in ("online", "offline"):
        out = tmp_path / mode
        cli("acc-check", "-api_info", dump_json, "-o", out, *(["--offline"] if mode == "offline" else []))
        (result,) = out.glob("accuracy_checking_result_*.csv")
        rows = [line.split(",") for line in result.read_text().splitlines()[1:]]
        assert [r[0] for r in rows] == forward
        skipped = [r for r in rows if r[1] == "SKIP"]
        assert len(skipped) <= 0.05 * len(rows), skipped
        assert not [r for r in rows if r[1] == "error"], (mode, rows)
