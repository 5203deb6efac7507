"""Capture and acc-check on a CUDA device. Skipped where torch sees no GPU (CI has none); run on a
GPU machine with the same `python -m pytest tests/python`."""
import json
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import pytest

from conftest import PYDIR, ROOT, rank_dir

sys.path.insert(0, str(PYDIR))
sys.path.insert(0, str(ROOT / "examples" / "python"))
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
# cuBLAS reads this when its handle is made (the first matmul), which no test has done yet.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numprobe  # noqa: E402
import tiny_models as tm  # noqa: E402
from test_capture import (iter_leaves, load, relu_in_md5_mode,  # noqa: E402
                          run_async_dump_script, statistics_match_saved_tensors)
from test_stats_batch import assert_inputs_before_the_calls, in_place_calls  # noqa: E402

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
    d = load(rank_dir(tmp_path / "step0"))
    names = list(d["data"])
    assert any(".forward" in n for n in names), names[:5]
    # backward runs on autograd's CUDA device thread, not the thread that called start()
    assert any(".backward" in n for n in names), names[-5:]
    leaves = [leaf for e in d["data"].values() for leaf in iter_leaves(e)]
    assert leaves and all(leaf["Max"] is not None for leaf in leaves if leaf["shape"] != [0])


def test_statistics_and_tensors_equal_numpy_on_cuda(tmp_path):
    captured_step(tmp_path, "L1", task="tensor")
    rank = rank_dir(tmp_path / "step0")
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
        e = load(rank_dir(tmp_path / where / "step0"))["data"]["Functional.relu.0.forward"]
        leaves[where] = e["input_args"][0], e["output"][0]
    for dev, cpu in zip(leaves["cuda"], leaves["cpu"]):
        assert_same_statistics(dev, cpu)


def assert_same_statistics(dev, cpu):
    for k, v in cpu.items():
        if k in ("Mean", "Norm") and isinstance(v, float):
            assert dev[k] == pytest.approx(v, rel=1e-5, nan_ok=True), (k, dev, cpu)
        elif isinstance(v, float) and np.isnan(v):
            assert np.isnan(dev[k]), (k, dev, cpu)
        else:
            assert dev[k] == v, (k, dev, cpu)


def clone_input_leaf(root, t):
    dbg = numprobe.PrecisionDebugger(dump_path=root, level="L1")
    dbg.start()
    torch.clone(t)
    dbg.stop()
    dbg.close()
    return load(rank_dir(root / "step0"))["data"]["Torch.clone.0.forward"]["input_args"][0]


LARGE = (300, 700)  # 210,000 elements: reduced on the device (over 65,536 are not copied back)
SMALL = (60, 70)  # copied to the host and summarised there


def sample_tensor(dtype, shape=LARGE):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(7)) * 100
    if dtype == torch.bool:
        return x > 0
    if dtype.is_complex:
        return torch.complex(x, x.flip(0)).to(dtype)
    if not dtype.is_floating_point:
        return (x.abs() if dtype == torch.uint8 else x).to(dtype)
    x = x.to(dtype)
    x[9, :20] = 0
    if dtype in (torch.float16, torch.bfloat16):  # float32/64 keep finite means and norms
        x[3, 4] = float("nan")
        x[5, 6] = float("inf")
        x[7, 8] = float("-inf")
    return x


@pytest.mark.parametrize("shape", [LARGE, SMALL], ids=["large", "small"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "negated"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64,
                                   torch.int8, torch.int32, torch.int64, torch.uint8, torch.bool,
                                   torch.complex64])
def test_statistics_of_cuda_tensors_equal_the_host_ones(tmp_path, dtype, layout, shape):
    x = sample_tensor(dtype, shape).to(CUDA)
    if layout == "transposed":
        x = x.t()
    elif layout == "strided":
        x = x[:, ::2]
    elif layout == "negated":  # a lazy _neg_view: not its memory
        if dtype == torch.bool or dtype == torch.uint8:
            pytest.skip("no negation")
        x = torch._neg_view(x)
    dev = clone_input_leaf(tmp_path / "cuda", x)
    cpu = clone_input_leaf(tmp_path / "cpu", x.cpu())
    assert dev["shape"] == list(x.shape)
    if dtype.is_complex:  # magnitudes: CUDA's and the CPU's abs() may differ in the last bit
        for k in ("Max", "Min", "Mean", "Norm"):
            assert dev[k] == pytest.approx(cpu[k], rel=1e-6), (k, dev, cpu)
        return
    assert_same_statistics(dev, cpu)


def test_bool_bytes_other_than_one_count_as_true_on_cuda(tmp_path):
    raw = torch.randint(0, 3, LARGE, dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    x = raw.view(torch.bool)  # bytes 0, 1 and 2
    dev = clone_input_leaf(tmp_path / "cuda", x.to(CUDA))
    cpu = clone_input_leaf(tmp_path / "cpu", x)
    assert_same_statistics(dev, cpu)
    assert dev["Max"] is True and dev["Min"] is False


def test_statistics_of_an_all_nan_cuda_tensor(tmp_path):
    leaf = clone_input_leaf(tmp_path, torch.full(LARGE, float("nan"), device=CUDA))
    assert np.isnan(leaf["Max"]) and np.isnan(leaf["Min"]) and np.isnan(leaf["Mean"])
    assert leaf["nan_count"] == LARGE[0] * LARGE[1]


@pytest.mark.parametrize("env", [{"NUMPROBE_ATEN_DEVICE_STATS": "1"},
                                 {"NUMPROBE_CUDA_STAGING_MB": "1"},
                                 {"NUMPROBE_BATCH_DEVICE_STATS": "0"}],
                         ids=["aten", "tiny_ring", "one_launch_per_tensor"])
def test_the_other_routes_give_the_same_statistics(tmp_path, env):
    """The fused kernel and the pinned staging ring are the default where they were built. The
    ATen route (builds without nvcc, a kernel that fails to launch, a full ring) must give the
    same statistics; a 1 MiB ring wraps and fills up during a GPT step."""
    if not numprobe._C.cuda_stats_kernel():
        pytest.skip("built without the fused kernel: the tests above ran the ATen route")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                        "-k", "cuda_tensors_equal_the_host or all_nan_cuda or equal_numpy_on_cuda"],
                       env=dict(os.environ, **env), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_a_gpt_step_is_summarised_in_multi_tensor_launches(tmp_path):
    """Each recorded call's tensors (inputs, outputs, gradients) go to the GPU as one launch."""
    if not numprobe._C.cuda_stats_kernel():
        pytest.skip("built without the fused kernel")
    model, batch = gpt_on_cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=tmp_path, level="mix")
    dbg.start(model)
    tm.gpt_step(model, opt, batch)
    dbg.stop()
    stats = dbg.stats()
    dbg.close()
    assert 100 < stats["stats_batched"] <= stats["stats_computed"], stats
    assert stats["stats_batches"] * 2 < stats["stats_batched"], stats


def test_in_place_calls_on_cuda_keep_their_inputs_as_they_were(tmp_path):
    assert_inputs_before_the_calls(in_place_calls(tmp_path, "cuda", {}))


def test_the_fused_kernel_is_built_where_nvcc_is_found():
    if not shutil.which("nvcc"):
        pytest.skip("no nvcc on PATH")
    assert numprobe._C.cuda_stats_kernel()


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
    dump_json = rank_dir(tmp_path / "dump" / "step0") / "dump.json"
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


def test_async_dump_saves_the_same_cuda_tensors(tmp_path):
    # async_dump: the device -> host copies of saved tensors are enqueued, not waited for; the
    # in-place writes after each call must not reach the saved bytes.
    out = run_async_dump_script(tmp_path, "cuda")
    assert list(out["0"]) == list(out["1"]) and len(out["0"]) == 12
    for name, a in out["0"].items():
        assert np.array_equal(a, out["1"][name]), name
